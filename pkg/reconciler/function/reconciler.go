package function

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kreconciler "knative.dev/pkg/reconciler"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/knative"
	"github.com/fnops/func-operator/pkg/source"
)

// Reconciler reconciles Functions. Its permissions are in rbac.go.
type Reconciler struct {
	// Client reads Functions from the manager's cache and writes their status.
	Client client.Client
	// APIReader reads Secrets straight from the API server, so that no Secret
	// value is ever held in the operator's cache.
	APIReader client.Reader
	Recorder  record.EventRecorder
	Config    *config.Store
	Fetcher   *source.Fetcher
	// Describer describes deployed functions through the func library.
	Describer *funclib.Describer
	// Services reads Knative Services, from the manager's cache.
	Services *knative.Source
	// Inspector reads the middleware version of images, cached by digest.
	Inspector ImageInspector
	// Now returns the current time; time.Now when nil.
	Now func() time.Time

	// policyChanged feeds the Functions to re-check after an operator policy change.
	policyChanged chan event.GenericEvent
}

var _ reconcile.Reconciler = (*Reconciler)(nil)

// step is one stage of a reconcile. A step records its outcome in the Function's
// status; an error stops the reconcile.
type step func(ctx context.Context, fn *v1alpha1.Function) error

// steps are run in order, stopping at the first error.
func (r *Reconciler) steps() []step {
	return []step{
		r.reconcileSource,
		r.reconcileDeployment,
		r.reconcileServiceReady,
		r.reconcileMiddleware,
	}
}

// Reconcile runs the steps for one Function and patches its status once, at the end,
// when it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (result reconcile.Result, retErr error) {
	fn := &v1alpha1.Function{}
	if err := r.Client.Get(ctx, req.NamespacedName, fn); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !fn.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	orig := fn.DeepCopy()
	fn.Status.InitializeConditions()

	defer func() {
		// observedGeneration, and transition times that move only for conditions
		// that really changed, as every Knative reconciler does.
		kreconciler.PostProcessReconcile(ctx, fn, orig)
		if err := r.patchStatus(ctx, orig, fn); err != nil {
			result, retErr = reconcile.Result{}, errors.Join(retErr, err)
			return
		}
		r.recordEvents(orig, fn)
	}()

	var err error
	for _, s := range r.steps() {
		if err = s(ctx, fn); err != nil {
			break
		}
	}
	return r.result(ctx, err)
}

// result turns the outcome of the steps into a requeue: a success or a stalling
// error comes back after the check interval, a transient error with backoff.
func (r *Reconciler) result(ctx context.Context, err error) (reconcile.Result, error) {
	next := reconcile.Result{RequeueAfter: wait.Jitter(r.Config.Load().CheckInterval, 0.1)}
	var stall *stallingError
	switch {
	case err == nil:
		return next, nil
	case errors.As(err, &stall):
		log.FromContext(ctx).Info("reconcile stalled until the Function, its Secret, its Service or its repository changes", "reason", stall.reason, "message", stall.message)
		return next, nil
	default:
		return reconcile.Result{}, err
	}
}

// patchStatus writes the status when it differs from what was read. Transition
// times are compared semantically, so an unchanged condition never causes a write.
func (r *Reconciler) patchStatus(ctx context.Context, orig, fn *v1alpha1.Function) error {
	if equality.Semantic.DeepEqual(orig.Status, fn.Status) {
		return nil
	}
	err := r.Client.Status().Patch(ctx, fn, client.MergeFrom(orig))
	switch {
	case apierrors.IsNotFound(err):
		return nil // deleted while it was reconciled: nothing to report on
	case err != nil:
		return fmt.Errorf("patching status of Function %s: %w", fn, err)
	}
	return nil
}

// recordEvents emits Events for transitions of the source, never for a reconcile
// that changed nothing.
func (r *Reconciler) recordEvents(orig, fn *v1alpha1.Function) {
	before := orig.Status.GetCondition(v1alpha1.FunctionConditionSourceReady)
	after := fn.Status.GetCondition(v1alpha1.FunctionConditionSourceReady)
	if after == nil {
		return
	}
	switch {
	case after.IsFalse() && (before == nil || !before.IsFalse() || before.Reason != after.Reason):
		r.Recorder.Event(fn, corev1.EventTypeWarning, after.Reason, after.Message)
	case after.IsTrue() && (before == nil || !before.IsTrue() || commitOf(orig) != commitOf(fn)):
		r.Recorder.Event(fn, corev1.EventTypeNormal, "SourceReady", after.Message)
	}
}

func commitOf(fn *v1alpha1.Function) string {
	if fn.Status.Git == nil {
		return ""
	}
	return fn.Status.Git.ObservedCommit
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

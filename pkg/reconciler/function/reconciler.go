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
	"github.com/fnops/func-operator/pkg/metrics"
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
	// Tekton is true when the cluster serves Tekton's PipelineRuns: rebuilds are possible.
	Tekton bool
	// Launcher starts rebuilds under the fleet budget; nil disables rebuilds.
	Launcher *Launcher
	// WorkDir holds scratch directories of builds.
	WorkDir string
	// Metrics records the operator's metrics; nil records none.
	Metrics *metrics.Metrics

	// policyChanged feeds the Functions to re-check after an operator policy change.
	policyChanged chan event.GenericEvent
	// wakeups feeds the Functions whose build launch returned or whose turn came.
	wakeups chan event.GenericEvent
}

var _ reconcile.Reconciler = (*Reconciler)(nil)

// step is one stage of a reconcile. A step records its outcome in the Function's
// status; an error stops the reconcile.
type step func(ctx context.Context, fn *v1alpha1.Function) error

// steps are run in order, stopping at the first error.
func (r *Reconciler) steps() []step {
	return []step{
		r.observeBuild,
		r.reconcileSource,
		r.reconcileDeployment,
		r.reconcileServiceReady,
		r.reconcileMiddleware,
		r.reconcileRebuild,
	}
}

// Reconcile runs the steps for one Function and patches its status once, at the end,
// when it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (result reconcile.Result, retErr error) {
	fn := &v1alpha1.Function{}
	err := r.Client.Get(ctx, req.NamespacedName, fn)
	if apierrors.IsNotFound(err) || (err == nil && !fn.DeletionTimestamp.IsZero()) {
		// Deleted: stop its build (func's provider deletes the PipelineRun) and free
		// its place in the fleet budget. Nothing requeues it.
		r.Metrics.Forget(req.NamespacedName)
		if r.Launcher != nil {
			r.Launcher.Cancel(req.NamespacedName)
		}
		if r.Tekton {
			// Retried with backoff until nothing of its builds is left.
			return reconcile.Result{}, r.deleteBuildObjects(ctx, req.NamespacedName)
		}
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	orig := fn.DeepCopy()
	fn.Status.InitializeConditions()
	ctx, st := withState(ctx)

	defer func() {
		// observedGeneration, and transition times that move only for conditions
		// that really changed, as every Knative reconciler does.
		kreconciler.PostProcessReconcile(ctx, fn, orig)
		written, err := r.patchStatus(ctx, orig, fn)
		for _, after := range st.after {
			after(written)
		}
		if err != nil {
			result, retErr = reconcile.Result{}, errors.Join(retErr, err)
			return
		}
		if written {
			r.Metrics.Conditions(req.NamespacedName, fn.Status.Conditions, middlewareOutdated(fn))
		}
		r.recordEvents(orig, fn)
	}()

	for _, s := range r.steps() {
		if err = s(ctx, fn); err != nil {
			break
		}
	}
	result, err = r.result(ctx, err)
	if st.requeueAfter > 0 && err == nil && (result.RequeueAfter == 0 || st.requeueAfter < result.RequeueAfter) {
		result.RequeueAfter = st.requeueAfter
	}
	return result, err
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
// It reports whether the status now on the server is fn's.
func (r *Reconciler) patchStatus(ctx context.Context, orig, fn *v1alpha1.Function) (bool, error) {
	if equality.Semantic.DeepEqual(orig.Status, fn.Status) {
		return true, nil
	}
	// Optimistic locking: a status computed from a stale read (the cache lags behind
	// the operator's own writes) must not overwrite a newer one — it would forget a
	// build. A conflict is retried with backoff, from a fresh read.
	err := r.Client.Status().Patch(ctx, fn, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	switch {
	case apierrors.IsNotFound(err):
		return false, nil // deleted while it was reconciled: nothing to report on
	case err != nil:
		return false, fmt.Errorf("patching status of Function %s: %w", fn, err)
	}
	return true, nil
}

// recordEvents emits Events for transitions of the source and of builds, never for a
// reconcile that changed nothing.
func (r *Reconciler) recordEvents(orig, fn *v1alpha1.Function) {
	r.recordBuildEvents(orig, fn)
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

// recordBuildEvents emits an Event when a build is queued, starts, is adopted or fails.
// (Rebuilt is emitted when the new image is seen serving.)
func (r *Reconciler) recordBuildEvents(orig, fn *v1alpha1.Function) {
	before, after := orig.Status.Build, fn.Status.Build
	if after == nil || (before != nil && before.Phase == after.Phase && before.ID == after.ID) {
		return
	}
	switch after.Phase {
	case v1alpha1.BuildPhaseQueued:
		if before == nil || before.Phase != v1alpha1.BuildPhaseQueued {
			r.Recorder.Eventf(fn, corev1.EventTypeNormal, "RebuildQueued", "rebuild queued at position %d: the fleet budget is in use", after.QueuePosition)
		}
	case v1alpha1.BuildPhaseStarting:
		r.Recorder.Eventf(fn, corev1.EventTypeNormal, "Rebuilding", "build %s started: rebuilding commit %s to bring middleware %s", after.ID, v1alpha1.ShortCommit(after.Commit), after.ToMiddleware)
	case v1alpha1.BuildPhaseRunning:
		if before == nil || before.ID != after.ID {
			r.Recorder.Eventf(fn, corev1.EventTypeNormal, "BuildAdopted", "following build %s already running in PipelineRun %s", after.ID, after.PipelineRun)
		}
	case v1alpha1.BuildPhaseSucceeded:
		r.Metrics.Rebuild(metrics.ResultSucceeded, buildDuration(after))
	case v1alpha1.BuildPhaseFailed:
		r.Metrics.Rebuild(metrics.ResultFailed, buildDuration(after))
		r.Recorder.Eventf(fn, corev1.EventTypeWarning, "BuildFailed", "%s", failureSummary(after))
	}
}

// buildDuration is how long a finished build ran; negative when not known.
func buildDuration(b *v1alpha1.BuildStatus) time.Duration {
	if b.StartTime == nil || b.CompletionTime == nil {
		return -1
	}
	return b.CompletionTime.Sub(b.StartTime.Time)
}

// middlewareOutdated is true when a rebuild would bring newer middleware, whether
// or not one is under way or allowed.
func middlewareOutdated(fn *v1alpha1.Function) bool {
	c := fn.Status.GetCondition(v1alpha1.FunctionConditionMiddlewareUpToDate)
	if c == nil {
		return false
	}
	switch c.Reason {
	case v1alpha1.ReasonMiddlewareOutdated, v1alpha1.ReasonAutoUpdateDisabled, v1alpha1.ReasonRebuildQueued,
		v1alpha1.ReasonRebuilding, v1alpha1.ReasonBuildFailed, v1alpha1.ReasonRebuildNotPossible:
		return true
	}
	return false
}

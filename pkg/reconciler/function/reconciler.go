package function

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kreconciler "knative.dev/pkg/reconciler"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/git"
	"github.com/fnops/func-operator/pkg/knative"
	"github.com/fnops/func-operator/pkg/lanes"
	"github.com/fnops/func-operator/pkg/metrics"
	"github.com/fnops/func-operator/pkg/rebuild"
	"github.com/fnops/func-operator/pkg/rerror"
	"github.com/fnops/func-operator/pkg/tenancy"
	"github.com/fnops/func-operator/pkg/workload"
)

// Reconciler reconciles Functions. Its permissions are in rbac.go.
type Reconciler struct {
	// Client reads Functions from the manager's cache and writes their status; with
	// SetupWithManager, it must read from that manager's cache (mgr.GetClient()), whose
	// field index it uses.
	Client client.Client
	// APIReader reads straight from the API server what the cache does not hold.
	APIReader client.Reader
	Recorder  record.EventRecorder
	Config    *config.Store
	Fetcher   *git.Fetcher
	// Lanes keeps one git host or registry from holding every worker; nil: no bound.
	Lanes *lanes.Lanes
	// Describer describes deployed functions through the func library.
	Describer *funclib.Describer
	// Services reads Knative Services, from the manager's cache.
	Services *knative.Services
	// Workloads reads the functions of func's raw and keda deployers (Deployments,
	// Services, HTTPScaledObjects), from the manager's cache; nil reads none.
	Workloads *workload.Workloads
	// Inspector reads the middleware version of images, cached by digest.
	Inspector ImageInspector
	// Now returns the current time; time.Now when nil.
	Now func() time.Time
	// Builds is the rebuild machinery: the fleet's queue, the launcher, the leadership
	// clock, whether the cluster serves Tekton. nil disables rebuilds (and then Access
	// is not used).
	Builds *rebuild.Builds
	// Access tells whether a namespace has onboarded the operator for rebuilds.
	Access *tenancy.NamespaceAccess
	// Secrets reads the Secrets Functions name (never into the manager's cache),
	// and watches them, by metadata, in the namespaces where the operator may.
	Secrets *tenancy.Secrets
	// Metrics records the operator's metrics; nil records none.
	Metrics *metrics.Metrics
	// APIRecheck is how often the APIs the cluster did not serve at start are looked
	// for again (LateAPIs); DefaultAPIRecheck when zero.
	APIRecheck time.Duration
	// Wakeups brings Functions back from outside the watches: a build's launch
	// returned, the budget has a slot, the operator policy changed.
	Wakeups *Wakeups
	// Repositories knows which Functions read which repository, to check them all when
	// it changes; nil knows none.
	Repositories *Repositories

	// WatchSelected is the label selector of this shard's Functions; nil: all.
	WatchSelected labels.Selector

	// functionNamesIndexed: Client's cache indexes Functions by function name
	// (SetupWithManager registered functionNameIndex), so finding the Function bound to
	// a function lists those of its name only; without it (a Client straight to the API
	// server, as the step tests use), the namespace's.
	functionNamesIndexed bool
}

var _ reconcile.Reconciler = (*Reconciler)(nil)

// reconcileFunc is one step of a reconcile. It records what it observed in the
// Function's status and in obs, for the steps after it, and stops the reconcile with
// an error of package rerror: stalling, waiting or transient.
type reconcileFunc func(ctx context.Context, fn *v1alpha1.Function, obs *observation) (Result, error)

// Reconcile runs the steps for one Function and patches its status once, at the end,
// when it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (result reconcile.Result, retErr error) {
	fn := &v1alpha1.Function{}
	err := r.Client.Get(ctx, req.NamespacedName, fn)
	if apierrors.IsNotFound(err) || (err == nil && !fn.DeletionTimestamp.IsZero()) {
		return reconcile.Result{}, r.finalize(ctx, req.NamespacedName)
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("reading Function %s: %w", req.NamespacedName, err)
	}
	orig, start := fn.DeepCopy(), time.Now()
	fn.Status.InitializeConditions()
	// Suspend, auto-update and the build history come from the spec, else from the
	// annotations that keep them across `func deploy`: read only through Settings.
	settings := fn.Settings()
	fn.Status.MarkSettings(settings)
	r.recordDeploy(fn)

	var (
		res     Result
		stepErr error // what stopped the steps; the deferred patch reads it after result() classified it
	)
	defer func() {
		if !settings.Suspend {
			summarize(fn, stepErr)
		}
		capMessages(fn, r.Config.Load().ConditionMessageMaxBytes)
		// observedGeneration, and transition times that move only for conditions
		// that really changed, as every Knative reconciler does.
		kreconciler.PostProcessReconcile(ctx, fn, orig)
		written, err := r.patchStatus(ctx, orig, fn)
		if res.AfterPatch != nil {
			res.AfterPatch(written)
		}
		if err != nil {
			result, retErr = reconcile.Result{}, errors.Join(retErr, err)
			return
		}
		if written {
			r.Metrics.Conditions(req.NamespacedName, fn.Status.Conditions, fn.Status.MiddlewareOutdated())
		}
		r.recordEvents(orig, fn)
		logReconciled(ctx, orig, fn, stepErr, result, time.Since(start))
	}()

	if settings.Suspend {
		// No check and no rebuild: a queued one gives its place up. Nothing brings
		// the Function back but a change (spec.suspend or its annotation set to false).
		if fn.Status.Build.Queued() {
			fn.Status.MarkMiddlewareOutdated("a rebuild was queued; it gave its place up as %s is true", settings.SuspendFrom)
		}
		r.giveUpPlace(fn)
		r.Repositories.Forget(req.NamespacedName)
		r.Metrics.Checked(req.NamespacedName, false)
		fn.Status.MarkSuspendedBy(settings.SuspendFrom)
		// A build under way is still followed to its end, or its timeout: until then
		// it holds a slot of the fleet's budget (and a restart seeds it from the
		// status), so a suspend must not keep it.
		if fn.Status.Build.InFlight() {
			res, stepErr = r.observeBuild(ctx, fn, &observation{})
			if stepErr != nil {
				return reconcile.Result{}, stepErr
			}
			return reconcile.Result{RequeueAfter: res.RequeueAfter}, nil
		}
		return reconcile.Result{}, nil
	}
	fn.Status.ClearSuspended()

	r.Metrics.Checked(req.NamespacedName, true)
	obs := &observation{}
	res, stepErr = r.check(ctx, fn, obs)
	if stepErr == nil {
		var rr Result
		rr, stepErr = r.reconcileRebuild(ctx, fn, obs)
		res = res.merge(rr)
	} else if !lanes.IsHostBusy(stepErr) {
		// A check failed: the Function cannot build now, and a queued one gives its
		// place up rather than block the queue's head (not for a moment's wait for
		// its host).
		r.giveUpPlace(fn)
	}
	return r.result(ctx, res, stepErr)
}

// check runs the steps that observe the Function, in order, stopping at the first
// error, then stops a build in flight for a Knative Service the Function is no longer
// bound to, whatever they concluded. The rebuild step (reconcileRebuild) runs after
// them, when they all succeeded.
func (r *Reconciler) check(ctx context.Context, fn *v1alpha1.Function, obs *observation) (Result, error) {
	var (
		res Result
		err error
	)
	for _, step := range []reconcileFunc{
		r.observeBuild,
		r.reconcileSource,
		r.reconcileDeployment,
		r.reconcileServiceReady,
		r.reconcileMiddleware,
	} {
		var sr Result
		sr, err = step(ctx, fn, obs)
		res = res.merge(sr)
		if err != nil {
			break
		}
	}
	if stopErr := r.stopUnboundBuild(ctx, fn, obs); stopErr != nil {
		return res, stopErr
	}
	return res, err
}

// result turns the outcome of the steps into a requeue. A success, a stall or a wait
// comes back after the check interval, or sooner when a step asked; any other error
// is retried with backoff.
func (r *Reconciler) result(ctx context.Context, res Result, err error) (reconcile.Result, error) {
	next := Result{RequeueAfter: wait.Jitter(checkFloor(r.Config.Load().CheckInterval), 1.0/9)}
	var (
		waiting  *rerror.Waiting
		stalling *rerror.Stalling
	)
	switch {
	case err == nil:
	case errors.As(err, &waiting):
		next = next.merge(Result{RequeueAfter: waiting.RequeueAfter})
	case errors.As(err, &stalling):
		log.FromContext(ctx).Info("reconcile stalled until the Function, its Secret, its Service or its repository changes",
			"reason", rerror.Reason(err), "message", err.Error(), "recheck", stalling.RecheckAfter)
		next = next.merge(Result{RequeueAfter: stalling.RecheckAfter})
	default:
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: next.merge(res).RequeueAfter}, nil
}

// summarize sets the kstatus conditions from the outcome of the steps: Stalled when
// only a change can help, Reconciling while a rebuild or a first decision is under
// way, and neither once Ready. A transient error leaves them as they were: the steps
// after the one that failed did not run, so nothing new is known of a stall, and
// kstatus does not flap between Failed and InProgress on a passing fault.
func summarize(fn *v1alpha1.Function, err error) {
	ready := fn.Status.GetCondition(v1alpha1.FunctionConditionReady)
	b := fn.Status.Build
	switch {
	case err != nil && !rerror.IsStalling(err) && !rerror.IsWaiting(err):
		return
	case rerror.IsStalling(err):
		fn.Status.MarkStalled(rerror.Reason(err), "%s", err)
	case ready != nil && ready.IsTrue():
		fn.Status.ClearProgress()
	case b.Pending():
		fn.Status.MarkReconciling(ready.Reason, "%s", ready.Message)
	case ready == nil || ready.IsUnknown():
		reason, msg := v1alpha1.ReasonReconciling, "the Function is being checked"
		if ready != nil && ready.Reason != "" {
			reason, msg = ready.Reason, ready.Message
		}
		fn.Status.MarkReconciling(reason, "%s", msg)
	default:
		fn.Status.ClearProgress()
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

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

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
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kreconciler "knative.dev/pkg/reconciler"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/imagedeploy"
	"github.com/fnops/func-operator/pkg/knative"
	"github.com/fnops/func-operator/pkg/lanes"
	"github.com/fnops/func-operator/pkg/metrics"
	"github.com/fnops/func-operator/pkg/outcomes"
	"github.com/fnops/func-operator/pkg/rebase"
	"github.com/fnops/func-operator/pkg/rebuild"
	"github.com/fnops/func-operator/pkg/reconciler/function/base"
	"github.com/fnops/func-operator/pkg/reconciler/function/build"
	"github.com/fnops/func-operator/pkg/reconciler/function/oncommit"
	"github.com/fnops/func-operator/pkg/rerror"
	"github.com/fnops/func-operator/pkg/tenancy"
	"github.com/fnops/func-operator/pkg/workload"
)

// Deps is what a Reconciler reads and writes through; New wires them, in
// pkg/operator and in the tests alike.
type Deps struct {
	// Client reads Functions from the manager's cache and writes their status; with
	// SetupWithManager, it must read from that manager's cache (mgr.GetClient()), whose
	// field index it uses.
	Client client.Client
	// APIReader reads straight from the API server what the cache does not hold.
	APIReader client.Reader
	Recorder  record.EventRecorder
	Config    *config.Store
	// Clock is the real one when nil.
	Clock clock.PassiveClock
	// Fetcher reads repositories (git.Fetcher).
	Fetcher Fetcher
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
	// Builds is the rebuild machinery: the fleet's queue, the launcher, the leadership
	// clock, whether the cluster serves Tekton. nil disables rebuilds (and then Access
	// is not used).
	Builds *rebuild.Builds
	// Access tells whether a namespace has onboarded the operator for rebuilds.
	Access build.Access
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
	// Outcomes sends builds' transitions and deploys seen as CloudEvents; nil sends none.
	Outcomes *outcomes.Sender
	// Rebase rebases buildpacks images onto their new run image, ImageDeployer
	// deploys the result as the build ServiceAccount; without both, base updates of
	// buildpacks images are reported only.
	Rebase        *rebase.Rebaser
	ImageDeployer *imagedeploy.Deployer
}

// Reconciler reconciles Functions. Its permissions are in rbac.go.
type Reconciler struct {
	client    client.Client
	apiReader client.Reader
	recorder  record.EventRecorder
	config    *config.Store
	clock     clock.PassiveClock
	metrics   *metrics.Metrics
	// remote reads what lives outside the cluster: git, the registry, with the
	// credentials of the Secrets Functions name.
	remote remotes
	// targets reads what func deployed.
	targets targets
	// build is the build sub-reconciler: everything of a rebuild's life.
	build *build.Reconciler
	// onCommit checks the source policy: whether a new commit is to be built.
	onCommit *oncommit.Checker
	// base checks the base policy: whether the image's base moved on.
	base *base.Checker
	// watch brings Functions back from outside their own events.
	watch *watches
}

// remotes reads git and registries, each host in its lane.
type remotes struct {
	fetcher   Fetcher
	lanes     *lanes.Lanes
	inspector ImageInspector
	secrets   *tenancy.Secrets
}

// targets reads what func's deployers deployed.
type targets struct {
	describer *funclib.Describer
	services  *knative.Services
	workloads *workload.Workloads
}

// New returns the Reconciler of d.
func New(d Deps) *Reconciler {
	if d.Clock == nil {
		d.Clock = clock.RealClock{}
	}
	r := &Reconciler{
		client: d.Client, apiReader: d.APIReader, recorder: d.Recorder, config: d.Config, clock: d.Clock, metrics: d.Metrics,
		remote:  remotes{fetcher: d.Fetcher, lanes: d.Lanes, inspector: d.Inspector, secrets: d.Secrets},
		targets: targets{describer: d.Describer, services: d.Services, workloads: d.Workloads},
		watch: &watches{client: d.Client, wakeups: d.Wakeups, repositories: d.Repositories,
			selected: d.WatchSelected, apiRecheck: d.APIRecheck},
	}
	bd := build.Deps{Client: d.Client, APIReader: d.APIReader, Recorder: d.Recorder, Config: d.Config, Clock: d.Clock,
		Builds: d.Builds, Access: d.Access, Sources: d.Fetcher, Keychain: r.registryKeychain, Metrics: d.Metrics, Outcomes: d.Outcomes}
	if d.Rebase != nil && d.ImageDeployer != nil {
		bd.Rebaser = base.RebaseJob{Rebaser: d.Rebase, Deployer: d.ImageDeployer, Keychain: r.registryKeychain, Config: d.Config}
	}
	if d.Secrets != nil {
		bd.GitCredentials = d.Secrets
	}
	if d.Workloads != nil {
		bd.KEDAServed = d.Workloads.KEDAServed
	}
	r.build = build.New(bd)
	r.onCommit = oncommit.New(oncommit.Deps{Sources: d.Fetcher, Lanes: d.Lanes, Config: d.Config, Clock: d.Clock})
	r.base = base.New(base.Deps{Inspector: d.Inspector, Lanes: d.Lanes, Config: d.Config, Clock: d.Clock})
	return r
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
	err := r.client.Get(ctx, req.NamespacedName, fn)
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
		capMessages(fn, r.config.Load().ConditionMessageMaxBytes)
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
		// Not written: deleted meanwhile, so nothing was recorded, and nothing is told.
		if written {
			r.metrics.Conditions(req.NamespacedName, fn.Status.Conditions, fn.Status.MiddlewareOutdated())
			r.recordEvents(orig, fn)
		}
		logReconciled(ctx, orig, fn, stepErr, result, time.Since(start))
	}()

	if settings.Suspend {
		// No check and no rebuild: a queued one gives its place up. Nothing brings
		// the Function back but a change (spec.suspend or its annotation set to false).
		if fn.Status.Build.Queued() {
			fn.Status.MarkMiddlewareOutdated("a rebuild was queued; it gave its place up as %s is true", settings.SuspendFrom)
		}
		r.build.GiveUpPlace(fn)
		r.build.RefuseRequest(fn, "the Function is suspended ("+settings.SuspendFrom+" is true)")
		r.watch.repositories.Forget(req.NamespacedName)
		r.metrics.Checked(req.NamespacedName, false)
		fn.Status.MarkSuspendedBy(settings.SuspendFrom)
		// A build under way is still followed to its end, or its timeout: until then
		// it holds a slot of the fleet's budget (and a restart seeds it from the
		// status), so a suspend must not keep it.
		if fn.Status.Build.InFlight() {
			res, stepErr = r.build.Observe(ctx, fn)
			if stepErr != nil {
				return reconcile.Result{}, stepErr
			}
			return reconcile.Result{RequeueAfter: res.RequeueAfter}, nil
		}
		return reconcile.Result{}, nil
	}
	fn.Status.ClearSuspended()

	r.metrics.Checked(req.NamespacedName, true)
	obs := &observation{}
	res, stepErr = r.check(ctx, fn, obs)
	if stepErr == nil {
		var rr Result
		rr, stepErr = r.build.Rebuild(ctx, fn, obs.forBuild())
		res = res.Merge(rr)
	} else if !lanes.IsHostBusy(stepErr) {
		// A check failed: the Function cannot build now, and a queued one gives its
		// place up rather than block the queue's head (not for a moment's wait for
		// its host); a stall refuses a pending rebuild request (a wait or a passing
		// fault keeps it).
		r.build.GiveUpPlace(fn)
		if rerror.IsStalling(stepErr) {
			r.build.RefuseRequest(fn, stepErr.Error())
		}
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
		func(ctx context.Context, fn *v1alpha1.Function, _ *observation) (Result, error) {
			return r.build.Observe(ctx, fn)
		},
		r.reconcileSource,
		r.reconcileDeployment,
		r.reconcileServiceReady,
		r.reconcileMiddleware,
		r.reconcileDeployOnCommit,
		r.reconcileBase,
	} {
		var sr Result
		sr, err = step(ctx, fn, obs)
		res = res.Merge(sr)
		if err != nil {
			break
		}
	}
	if stopErr := r.build.StopUnbound(ctx, fn, obs.forBuild().Deployed); stopErr != nil {
		return res, stopErr
	}
	return res, err
}

// result turns the outcome of the steps into a requeue. A success, a stall or a wait
// comes back after the check interval, or sooner when a step asked; any other error
// is retried with backoff.
func (r *Reconciler) result(ctx context.Context, res Result, err error) (reconcile.Result, error) {
	next := Result{RequeueAfter: wait.Jitter(checkFloor(r.config.Load().CheckInterval), 1.0/9)}
	var (
		waiting  *rerror.Waiting
		stalling *rerror.Stalling
	)
	switch {
	case err == nil:
	case errors.As(err, &waiting):
		next = next.Merge(Result{RequeueAfter: waiting.RequeueAfter})
	case errors.As(err, &stalling):
		log.FromContext(ctx).Info("reconcile stalled until the Function, its Secret, its Service or its repository changes",
			"reason", rerror.Reason(err), "message", err.Error(), "recheck", stalling.RecheckAfter)
		next = next.Merge(Result{RequeueAfter: stalling.RecheckAfter})
	default:
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: next.Merge(res).RequeueAfter}, nil
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
	err := r.client.Status().Patch(ctx, fn, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	switch {
	case apierrors.IsNotFound(err):
		return false, nil // deleted while it was reconciled: nothing to report on
	case err != nil:
		return false, fmt.Errorf("patching status of Function %s: %w", fn, err)
	}
	return true, nil
}

package build

import (
	"cmp"
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/rebuild"
	"github.com/fnops/func-operator/pkg/reconciler/function/step"
	"github.com/fnops/func-operator/pkg/tenancy"
)

// Base is the base policy's verdict: whether the base the running image was built on
// moved on, and what updates it.
type Base struct {
	// Due: the base moved on, and the policy and the maintenance window let the
	// function be updated now.
	Due bool
	// Rebase: the running image is a buildpacks image, rebased in place rather than
	// rebuilt through func's pipeline.
	Rebase bool
	// Image is the base's name; Current the base the image was built on, Available
	// what Image points to now (status.base).
	Image, Current, Available string
	// RunImage is the run image to rebase onto, by digest (Available, read from a
	// mirror when one is configured); RunImageName the name the image's lifecycle
	// metadata knows the run image by.
	RunImage, RunImageName string
	// NotBefore, when set, is when the maintenance window opens for an update that
	// waits for it.
	NotBefore time.Time
}

// String words the cause: "its base <image> moved on (built on <current>, now <available>)".
func (b *Base) String() string {
	return fmt.Sprintf("its base %s moved on (built on %s, now %s)", b.Image, cmp.Or(b.Current, "an older one"), b.Available)
}

// Rebaser rebases fn's running image (image, run by target) onto b.RunImage, pushes
// the result by digest to the image's repository with fn's registry credentials, and
// deploys it the way func's deployer of target does, as the namespace's build
// ServiceAccount. It returns the image deployed, by digest.
type Rebaser interface {
	Rebase(ctx context.Context, fn *v1alpha1.Function, target Target, image string, b Base) (string, error)
}

// baseMoved is the cause of a function whose base moved on; it brings the middleware
// the function runs (a rebase keeps it; a rebuild of the deployed commit is func's).
func baseMoved(b Base, running string) *Cause {
	return &Cause{Kind: v1alpha1.BuildCauseBase, Running: running, Brings: running, Base: &b}
}

// planRebase checks the preconditions of a rebase: a rebaser, what func deployed and
// the image it runs, and a namespace that lets the operator deploy as its build
// ServiceAccount. No Tekton, no commit, no func.yaml: the running image is rebuilt
// from itself.
func (r *Reconciler) planRebase(ctx context.Context, fn *v1alpha1.Function, obs Observed, cause *Cause) (plan, error) {
	notPossible := step.WithReason(fn.Status.MarkRebuildNotPossible)
	if r.Rebaser == nil {
		return plan{}, cause.blocked(notPossible, v1alpha1.ReasonRebuildNotPossible, "this operator cannot rebase images")
	}
	if obs.Deployed.Target == nil || obs.Deployed.Image == "" {
		return plan{}, cause.blocked(notPossible, v1alpha1.ReasonRebuildNotPossible, "what func deployed and the image it runs are not known")
	}
	if err := r.Access.CheckForRebase(ctx, fn.Namespace, r.Config.Load().PipelineServiceAccount); err != nil {
		if tenancy.IsNotOnboarded(err) {
			err = fmt.Errorf("%s but %w", cause, err)
			fn.Status.MarkNamespaceNotOnboarded("%s", err)
		}
		return plan{}, err
	}
	return plan{cause: cause, rebase: true}, nil
}

// launchRebase starts the admitted rebase p: the status records it first (Method
// Rebase, no commit), then the launcher runs it in-process under rebaseTimeout.
func (r *Reconciler) launchRebase(fn *v1alpha1.Function, obs Observed, p plan, due rebuild.Transition) step.Result {
	key, b, now, cfg := client.ObjectKeyFromObject(fn), fn.Status.Build, r.now(), r.Config.Load()
	id := rand.String(10)
	start := rebuild.Start{ID: id, FromImage: obs.Deployed.Image, Cause: p.cause.Kind, Method: v1alpha1.BuildMethodRebase, BoundUID: obs.Deployed.BoundUID}
	start.FromMiddleware, start.ToMiddleware = p.cause.Running, p.cause.Brings
	if fn.Status.Deployment != nil {
		start.Commit = fn.Status.Deployment.Revision // what the image was built from, kept
	}
	started := r.machine().Next(b, rebuild.Event{Kind: rebuild.Admitted, At: now, QueuedAt: due.QueuedAt, Start: start})
	r.apply(fn, started)
	fn.Status.MarkRebuilding("build %s starting: rebasing %s onto run image %s", id, obs.Deployed.Image, p.cause.Base.RunImage)
	target, image, base, rebaser := obs.Deployed.Target, obs.Deployed.Image, *p.cause.Base, r.Rebaser
	fnc := fn.DeepCopy()
	return step.Result{
		RequeueAfter: started.RequeueAfter,
		AfterPatch: func(patched bool) {
			if !patched {
				r.Builds.Queue.Release(key)
				return
			}
			r.Builds.Launcher.LaunchJob(key, id, cfg.Base.RebaseTimeout, func(ctx context.Context) (string, error) {
				return rebaser.Rebase(ctx, fnc, target, image, base)
			})
		},
	}
}

// observeRebase follows a rebase in flight: its launch is its run.
func (r *Reconciler) observeRebase(ctx context.Context, fn *v1alpha1.Function) (step.Result, error) {
	b := fn.Status.Build
	if !rebuild.InFlight(b) {
		// Its end is in the status this reconcile read: the launch's record may go.
		r.Builds.Launcher.Done(client.ObjectKeyFromObject(fn), b.ID)
		return step.Result{}, nil
	}
	res, err := r.observeLaunch(ctx, fn)
	if b := fn.Status.Build; b != nil && b.Phase == v1alpha1.BuildPhaseFailed {
		fn.Status.MarkBuildFailed("%s", failureSummary(b))
	}
	return res, err
}

// recordBaseUpdate notes a verified base update in status.base.
func recordBaseUpdate(fn *v1alpha1.Function, at *metav1.Time) {
	if st := fn.Status.Base; st != nil && fn.Status.Build != nil && fn.Status.Build.Cause == v1alpha1.BuildCauseBase {
		st.LastUpdate = at.DeepCopy()
	}
}

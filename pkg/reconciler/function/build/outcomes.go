package build

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/outcomes"
)

// EmitOutcomes hands Deps.Outcomes the build transitions from orig to fn, which the
// status patch just wrote: that patch is their record, so each is emitted once (a
// requeue finds it in orig). A build started (Starting, or Running when this process
// sees it first), succeeded (its image seen serving: the rebuild recorded) or failed
// (also after its run succeeded, when its image never came to serve).
func (r *Reconciler) EmitOutcomes(orig, fn *v1alpha1.Function) {
	before, after := orig.Status.Build, fn.Status.Build
	if r.Outcomes == nil || after == nil {
		return
	}
	same := func(phases ...string) bool {
		if before == nil || before.ID != after.ID {
			return false
		}
		for _, p := range phases {
			if before.Phase == p {
				return true
			}
		}
		return false
	}
	o := outcomes.Outcome{Subject: after.ID, Data: outcomes.Of(fn)}
	d := &o.Data
	d.BuildID, d.Cause, d.Commit, d.PipelineRun = after.ID, after.Cause, after.Commit, after.PipelineRun
	d.Image.Before, d.Middleware.Before = after.FromImage, after.FromMiddleware
	switch after.Phase {
	case v1alpha1.BuildPhaseStarting, v1alpha1.BuildPhaseRunning:
		if same(v1alpha1.BuildPhaseStarting, v1alpha1.BuildPhaseRunning) {
			return
		}
		o.Type, o.Time = outcomes.TypeBuildStarted, r.timeOf(after.StartTime)
		d.Middleware.After = after.ToMiddleware
	case v1alpha1.BuildPhaseSucceeded:
		if !rebuiltNow(orig, fn) {
			return
		}
		o.Type, o.Time = outcomes.TypeBuildSucceeded, r.timeOf(after.CompletionTime)
		d.Image.After, d.Middleware.After = fn.Status.Deployment.Image, fn.Status.Middleware.Current
	case v1alpha1.BuildPhaseFailed:
		if same(v1alpha1.BuildPhaseFailed) {
			return
		}
		o.Type, o.Time = outcomes.TypeBuildFailed, r.timeOf(after.CompletionTime)
		d.Reason, d.Message, d.FailedTask, d.FailedStep, d.Failures = v1alpha1.ReasonBuildFailed, after.Message, after.FailedTask, after.FailedStep, after.Failures
		if dep := fn.Status.Deployment; dep != nil {
			d.Image.After = dep.Image // what still runs
		}
		if mw := fn.Status.Middleware; mw != nil {
			d.Middleware.After = mw.Current
		}
	default:
		return
	}
	r.Outcomes.Emit(o)
}

// rebuiltNow is true when fn's build was recorded as rebuilt (verify: its image
// serves) by this reconcile.
func rebuiltNow(orig, fn *v1alpha1.Function) bool {
	b, mw := fn.Status.Build, fn.Status.Middleware
	if mw == nil || mw.LastRebuild == nil || b.CompletionTime == nil || !mw.LastRebuild.Equal(b.CompletionTime) || fn.Status.Deployment == nil {
		return false
	}
	was := orig.Status.Middleware
	return was == nil || was.LastRebuild == nil || !was.LastRebuild.Equal(mw.LastRebuild)
}

// timeOf is t, or now when the status has none.
func (r *Reconciler) timeOf(t *metav1.Time) time.Time {
	if t == nil || t.IsZero() {
		return r.Clock.Now()
	}
	return t.Time
}

package build

import (
	"cmp"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/metrics"
)

// RecordEvents emits an Event when a build is queued, starts, is adopted or fails,
// and counts the builds that ended. (Rebuilt is emitted when the new image is seen
// serving.)
func (r *Reconciler) RecordEvents(rec record.EventRecorder, orig, fn *v1alpha1.Function) {
	before, after := orig.Status.Build, fn.Status.Build
	if after == nil || (before != nil && before.Phase == after.Phase && before.ID == after.ID) {
		return
	}
	switch after.Phase {
	case v1alpha1.BuildPhaseQueued:
		if before == nil || before.Phase != v1alpha1.BuildPhaseQueued {
			rec.Eventf(fn, corev1.EventTypeNormal, "RebuildQueued", "rebuild queued at position %d: the fleet budget is in use", after.QueuePosition)
		}
	case v1alpha1.BuildPhaseStarting:
		if after.Method == v1alpha1.BuildMethodRebase {
			rec.Eventf(fn, corev1.EventTypeNormal, "Rebasing", "build %s started (cause: %s): rebasing %s onto its new run image, no pipeline",
				after.ID, after.Cause, after.FromImage)
			return
		}
		rec.Eventf(fn, corev1.EventTypeNormal, "Rebuilding", "build %s started (cause: %s): rebuilding commit %s %s",
			after.ID, cmp.Or(after.Cause, v1alpha1.BuildCauseMiddleware), v1alpha1.ShortCommit(after.Commit), describe(after))
	case v1alpha1.BuildPhaseRunning:
		// A build whose run this process sees first, but did not launch: another
		// process did, before a restart or a change of leader.
		if before == nil || before.ID != after.ID || (before.Phase == v1alpha1.BuildPhaseStarting && !r.launchedHere(fn, after.ID)) {
			rec.Eventf(fn, corev1.EventTypeNormal, "BuildAdopted", "following build %s already running in PipelineRun %s", after.ID, after.PipelineRun)
		}
	case v1alpha1.BuildPhaseSucceeded:
		r.count(after, metrics.ResultSucceeded)
	case v1alpha1.BuildPhaseFailed:
		r.count(after, metrics.ResultFailed)
		rec.Eventf(fn, corev1.EventTypeWarning, "BuildFailed", "%s", failureSummary(after))
	}
}

// count counts build b that ended with result: a rebase, or a rebuild.
func (r *Reconciler) count(b *v1alpha1.BuildStatus, result string) {
	if b.Method == v1alpha1.BuildMethodRebase {
		r.Metrics.Rebase(result, duration(b))
		return
	}
	r.Metrics.Rebuild(result, duration(b))
}

// duration is how long a finished build ran; negative when not known.
func duration(b *v1alpha1.BuildStatus) time.Duration {
	if b.StartTime == nil || b.CompletionTime == nil {
		return -1
	}
	return b.CompletionTime.Sub(b.StartTime.Time)
}

// launchedHere reports whether this process launched build id of fn.
func (r *Reconciler) launchedHere(fn *v1alpha1.Function, id string) bool {
	if !r.Enabled() {
		return false
	}
	launched, _, _ := r.Builds.Launcher.Launched(types.NamespacedName{Namespace: fn.Namespace, Name: fn.Name}, id)
	return launched
}

// failureSummary describes a failed build for the condition message.
func failureSummary(b *v1alpha1.BuildStatus) string {
	where := ""
	switch {
	case b.FailedTask != "" && b.FailedStep != "":
		where = fmt.Sprintf(" in task %s, step %s", b.FailedTask, b.FailedStep)
	case b.FailedTask != "":
		where = fmt.Sprintf(" in task %s", b.FailedTask)
	}
	return fmt.Sprintf("build %s failed%s (%d in a row): %s; the running revision keeps serving", b.ID, where, b.Failures, b.Message)
}

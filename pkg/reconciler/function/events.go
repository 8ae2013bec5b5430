package function

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"knative.dev/pkg/apis"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/metrics"
)

// recordEvents emits Events for transitions of the source and of builds, never for a
// reconcile that changed nothing.
func (r *Reconciler) recordEvents(orig, fn *v1alpha1.Function) {
	switch was, is := orig.Status.GetCondition(v1alpha1.FunctionConditionSuspended) != nil, fn.Status.GetCondition(v1alpha1.FunctionConditionSuspended) != nil; {
	case is && !was:
		r.Recorder.Event(fn, corev1.EventTypeNormal, v1alpha1.ReasonSuspended, fn.Settings().SuspendFrom+" is true: no checks and no rebuilds")
	case was && !is:
		r.Recorder.Event(fn, corev1.EventTypeNormal, "Resumed", fn.Settings().SuspendFrom+" is false: checked again")
	}
	// A settings annotation that does not parse: once per new message, and once when fixed.
	switch before, after := orig.Status.GetCondition(v1alpha1.FunctionConditionSettingsValid), fn.Status.GetCondition(v1alpha1.FunctionConditionSettingsValid); {
	case after != nil && (before == nil || before.Message != after.Message):
		r.Recorder.Event(fn, corev1.EventTypeWarning, after.Reason, after.Message)
	case after == nil && before != nil:
		r.Recorder.Event(fn, corev1.EventTypeNormal, string(v1alpha1.FunctionConditionSettingsValid), "every settings annotation is valid again")
	}
	r.recordBuildEvents(orig, fn)
	r.recordOutageEvents(orig, fn)
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

// recordOutageEvents emits an Event when the repository or the registry stops
// answering, and when it answers again.
func (r *Reconciler) recordOutageEvents(orig, fn *v1alpha1.Function) {
	for t, what := range map[apis.ConditionType]string{
		v1alpha1.FunctionConditionSourceReachable:   "the repository answers again",
		v1alpha1.FunctionConditionRegistryReachable: "the registry lets the image be read again",
	} {
		before, after := orig.Status.GetCondition(t), fn.Status.GetCondition(t)
		switch {
		case after == nil:
		case after.IsFalse() && (before == nil || !before.IsFalse() || before.Reason != after.Reason):
			r.Recorder.Event(fn, corev1.EventTypeWarning, after.Reason, after.Message)
		case after.IsTrue() && before != nil && before.IsFalse():
			r.Recorder.Event(fn, corev1.EventTypeNormal, string(t), what)
		}
	}
}

func commitOf(fn *v1alpha1.Function) string {
	if fn.Status.Git == nil {
		return ""
	}
	return fn.Status.Git.ObservedCommit
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
		// A build whose run this process sees first, but did not launch: another
		// process did, before a restart or a change of leader.
		if before == nil || before.ID != after.ID || (before.Phase == v1alpha1.BuildPhaseStarting && !r.launchedHere(fn, after.ID)) {
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

// launchedHere reports whether this process launched build id of fn.
func (r *Reconciler) launchedHere(fn *v1alpha1.Function, id string) bool {
	if r.Builds == nil {
		return false
	}
	launched, _, _ := r.Builds.Launcher.Launched(types.NamespacedName{Namespace: fn.Namespace, Name: fn.Name}, id)
	return launched
}

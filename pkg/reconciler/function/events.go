package function

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"knative.dev/pkg/apis"

	"github.com/fnops/func-operator/api/v1alpha1"
)

// recordEvents emits Events for transitions of the source and of builds, and for
// every reason that turns Ready False, never for a reconcile that changed nothing.
func (r *Reconciler) recordEvents(orig, fn *v1alpha1.Function) {
	rec := &tellingRecorder{EventRecorder: r.recorder, told: map[string]bool{}}
	switch was, is := orig.Status.GetCondition(v1alpha1.FunctionConditionSuspended) != nil, fn.Status.GetCondition(v1alpha1.FunctionConditionSuspended) != nil; {
	case is && !was:
		rec.Event(fn, corev1.EventTypeNormal, v1alpha1.ReasonSuspended, fn.Settings().SuspendFrom+" is true: no checks and no rebuilds")
	case was && !is:
		rec.Event(fn, corev1.EventTypeNormal, "Resumed", fn.Settings().SuspendFrom+" is false: checked again")
	}
	// A settings annotation that does not parse: once per new message, and once when fixed.
	switch before, after := orig.Status.GetCondition(v1alpha1.FunctionConditionSettingsValid), fn.Status.GetCondition(v1alpha1.FunctionConditionSettingsValid); {
	case after != nil && (before == nil || before.Message != after.Message):
		rec.Event(fn, corev1.EventTypeWarning, after.Reason, after.Message)
	case after == nil && before != nil:
		rec.Event(fn, corev1.EventTypeNormal, string(v1alpha1.FunctionConditionSettingsValid), "every settings annotation is valid again")
	}
	r.build.RecordEvents(rec, orig, fn)
	r.build.EmitOutcomes(orig, fn)
	emitDeploySeen(r.build.Outcomes, orig, fn, r.clock.Now())
	r.recordOutageEvents(rec, orig, fn)
	before := orig.Status.GetCondition(v1alpha1.FunctionConditionSourceReady)
	after := fn.Status.GetCondition(v1alpha1.FunctionConditionSourceReady)
	switch {
	case after == nil:
	case after.IsFalse() && (before == nil || !before.IsFalse() || before.Reason != after.Reason):
		rec.Event(fn, corev1.EventTypeWarning, after.Reason, after.Message)
	case after.IsTrue() && (before == nil || !before.IsTrue() || commitOf(orig) != commitOf(fn)):
		rec.Event(fn, corev1.EventTypeNormal, "SourceReady", after.Message)
	}
	recordReadyEvent(rec, orig, fn)
}

// recordReadyEvent emits an Event when Ready turns False, or its reason changes
// while False, unless an Event of that reason was emitted for this reconcile already
// (the source's, a build's, an outage's): so that `kubectl describe` tells every
// reason that holds a function back (RebuildNotPossible, ImageNotFound,
// ServiceNotFromFunc, ...). A rebuild on its way is Normal, anything else a Warning.
// A stall (kstatus' Stalled True: only a change can help, e.g. ImageNotFound, whose
// Ready is Unknown) is told the same way.
func recordReadyEvent(rec *tellingRecorder, orig, fn *v1alpha1.Function) {
	for _, t := range []apis.ConditionType{apis.ConditionReady, v1alpha1.FunctionConditionStalled} {
		holds := func(c *apis.Condition) bool {
			if t == v1alpha1.FunctionConditionStalled {
				return c != nil && c.IsTrue()
			}
			return c != nil && c.IsFalse()
		}
		before, after := orig.Status.GetCondition(t), fn.Status.GetCondition(t)
		if !holds(after) || (holds(before) && before.Reason == after.Reason) || rec.told[after.Reason] || failureTold(orig, fn, after) {
			continue
		}
		kind := corev1.EventTypeWarning
		if t == apis.ConditionReady && rebuildOnItsWay(fn) {
			kind = corev1.EventTypeNormal
		}
		rec.Event(fn, kind, after.Reason, after.Message)
	}
}

// failureTold is true when what holds c is a failed build whose failure was told
// already: build.RecordEvents tells it as the build's phase turns Failed, and the
// MiddlewareUpToDate that carries it into Ready may follow a reconcile later.
func failureTold(orig, fn *v1alpha1.Function, c *apis.Condition) bool {
	was, is := orig.Status.Build, fn.Status.Build
	mw := fn.Status.GetCondition(v1alpha1.FunctionConditionMiddlewareUpToDate)
	return is != nil && is.Phase == v1alpha1.BuildPhaseFailed && was != nil && was.ID == is.ID && was.Phase == is.Phase &&
		mw != nil && mw.Reason == c.Reason
}

// rebuildOnItsWay is true while a rebuild is pending, queued or running: what holds
// Ready back then is the operator's own work.
func rebuildOnItsWay(fn *v1alpha1.Function) bool {
	return fn.Status.Build.Pending() || (fn.Status.Middleware != nil && fn.Status.Middleware.PendingRebuild)
}

// tellingRecorder is an EventRecorder that remembers the reasons it was given.
type tellingRecorder struct {
	record.EventRecorder
	told map[string]bool
}

func (t *tellingRecorder) Event(object runtime.Object, eventtype, reason, message string) {
	t.told[reason] = true
	t.EventRecorder.Event(object, eventtype, reason, message)
}

func (t *tellingRecorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...interface{}) {
	t.told[reason] = true
	t.EventRecorder.Eventf(object, eventtype, reason, messageFmt, args...)
}

// recordOutageEvents emits an Event when the repository or the registry stops
// answering, and when it answers again.
func (r *Reconciler) recordOutageEvents(rec record.EventRecorder, orig, fn *v1alpha1.Function) {
	for t, what := range map[apis.ConditionType]string{
		v1alpha1.FunctionConditionSourceReachable:   "the repository answers again",
		v1alpha1.FunctionConditionRegistryReachable: "the registry lets the image be read again",
	} {
		before, after := orig.Status.GetCondition(t), fn.Status.GetCondition(t)
		switch {
		case after == nil:
		case after.IsFalse() && (before == nil || !before.IsFalse() || before.Reason != after.Reason):
			rec.Event(fn, corev1.EventTypeWarning, after.Reason, after.Message)
		case after.IsTrue() && before != nil && before.IsFalse():
			rec.Event(fn, corev1.EventTypeNormal, string(t), what)
		}
	}
}

func commitOf(fn *v1alpha1.Function) string {
	if fn.Status.Git == nil {
		return ""
	}
	return fn.Status.Git.ObservedCommit
}

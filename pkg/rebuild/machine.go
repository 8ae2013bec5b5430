package rebuild

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/text"
)

// Timings of a build's life that are not configurable.
const (
	// LaunchGrace is how long a build may stay Starting, without a PipelineRun, when
	// this process did not launch it: another process (before a restart) may still be
	// creating its PipelineRun. After it, the launch counts as lost and is retried.
	// With leader election, a build an earlier leader launched is retried sooner:
	// LeaderSettle into this process's leadership.
	LaunchGrace = 2 * time.Minute
	// DeployGrace is how long after a successful PipelineRun the function (its Knative
	// Service, or its raw or keda Deployment) may
	// still run the old image before the build counts as failed.
	DeployGrace = 2 * time.Minute
	// SameImageGrace is how long after a successful requested rebuild the function may
	// run the image it ran before until that counts as the rebuild's own (the same
	// image: nothing it is built from changed). func's deploy step ran before the
	// PipelineRun succeeded; this is the watch caches' lag, not a rollout.
	SameImageGrace = 15 * time.Second
	// LeaderSettle is how long a new leader waits before it counts a launch of an
	// earlier leader as lost: past the lease duration (15s), an earlier leader that
	// stalled has noticed it lost.
	LeaderSettle = 20 * time.Second
	// PollWhileWaiting is the requeue while waiting for a launch or a deploy.
	PollWhileWaiting = 2 * time.Second
	// maxMessage bounds a build message copied from Tekton or the func library.
	maxMessage = 1024
)

// EventKind names what the reconciler observed of a Function's build.
type EventKind int

// The events of a build's life, in the order they usually come.
const (
	// Due: a rebuild is due and the Function may build now. A failed build waits out
	// its backoff; otherwise the reconciler asks the queue for a slot (AskQueue).
	Due EventKind = iota + 1
	// NoSlot: the queue has no slot for the Function: it waits at Position.
	NoSlot
	// Admitted: the queue gave the Function a slot; the build (Start) is recorded
	// Starting, and launched once the status that records it is written.
	Admitted
	// GaveUp: the Function cannot or need not build now: a queued build gives its
	// place up (Waiting: the queue holds the Function, whatever the status says).
	GaveUp
	// RunSeen: the build's PipelineRun (Run) exists and has not finished.
	RunSeen
	// RunSucceeded: the build's PipelineRun (Run) succeeded, at Ended.
	RunSucceeded
	// RunFailed: the build's PipelineRun (Run) failed, at Ended, as Failure says.
	RunFailed
	// NoRun: the build in flight has no PipelineRun: launched by this process and on
	// its way (Launch), failed before its run existed, deleted, or lost.
	NoRun
	// LaunchLost: a process that is gone launched the build, and no PipelineRun came.
	LaunchLost
	// TimedOut: the build ran past its timeout and its runs were stopped (Failure
	// says how).
	TimedOut
	// Bound: the Function is bound to the Knative Service (or raw or keda Deployment) BoundUID ("" for none). A
	// build in flight for another Service must be stopped (Stop).
	Bound
	// Stopped: the build was stopped (Failure says why).
	Stopped
	// Deployed: the build succeeded; Deploy is what the function runs now.
	Deployed
)

// Event is one observation of a Function's build.
type Event struct {
	Kind EventKind
	// At is when it was observed (now).
	At time.Time

	// Run is the build's PipelineRun (RunSeen, RunSucceeded, RunFailed).
	Run string
	// RunStart and RunCreated are when Run started (nil: not yet) and was created (RunSeen).
	RunStart   *metav1.Time
	RunCreated metav1.Time
	// Timeout is how long a build may run (RunSeen).
	Timeout time.Duration
	// Ended is when Run ended (RunSucceeded, RunFailed).
	Ended time.Time
	// Failure is where and why the build failed (RunFailed, TimedOut, Stopped).
	Failure Failure

	// Launch is what this process knows of the build's launch (NoRun).
	Launch LaunchState

	// Position is the Function's place in the queue (NoSlot).
	Position int32
	// QueuedAt is when the Function joined the queue (NoSlot, Admitted).
	QueuedAt time.Time
	// Start is the build the queue admitted (Admitted).
	Start Start
	// Waiting: the queue holds the Function in its waiting list (GaveUp).
	Waiting bool
	// Requested: a user asked for this rebuild (Due): a failed build's backoff is not waited out.
	Requested bool

	// BoundUID is the Knative Service (or raw or keda Deployment) the Function is bound to now (Bound).
	BoundUID types.UID
	// Deploy is what the function runs now (Deployed).
	Deploy Deploy
}

// LaunchState is what this process knows of a build's launch (Launcher.Launched).
type LaunchState struct {
	// Here: this process launched the build; Ended: the launch returned, with Err.
	Here, Ended bool
	Err         error
	// Result is what an in-process build (a rebase) returned: the image it pushed.
	Result string
}

// Start is a build the queue admitted, as the status records it before its launch.
type Start struct {
	ID, Commit, FromImage, FromMiddleware, ToMiddleware string
	// Cause is why the build starts (v1alpha1.BuildCause*); Method how it is built
	// (v1alpha1.BuildMethod*; "" is Pipeline).
	Cause, Method string
	// BoundUID is what the Function is bound to: a Knative Service, or a raw or keda Deployment.
	BoundUID types.UID
}

// Deploy is what a Function whose build succeeded runs now: its Knative Service, or
// its raw or keda Deployment.
type Deploy struct {
	// Recorded: the build's rebuild is already recorded (status.middleware.lastRebuild).
	Recorded bool
	// BoundUID and Image are the bound Service's (or raw Deployment's) and the image it runs.
	BoundUID types.UID
	Image    string
	// RollingOut: a raw or keda Deployment has not yet rolled its template out to
	// every replica, or a Knative Service's latest Revision is not its ready one (or
	// Knative has not observed its template yet): Image may not be what serves.
	RollingOut bool
	// Failure, when its Revision is set, is Knative's report that the newest deploy
	// does not serve (a failed Revision), while Image, the old one, does.
	Failure RevisionFailure
	// Current is the middleware the Service runs ("" when unknown), Available the one
	// a rebuild brings, and RebuildDue whether a rebuild is due still.
	Current, Available string
	RebuildDue         bool
}

// Slot is what a transition does to the Function's place in the fleet's queue.
type Slot int

const (
	// SlotKeep leaves the queue as it is.
	SlotKeep Slot = iota
	// SlotHold: the build runs and holds a slot (Queue.Running).
	SlotHold
	// SlotRelease frees the build's slot (Queue.Release).
	SlotRelease
	// SlotLeave takes the Function out of the queue (Queue.Forget).
	SlotLeave
)

// DeployVerdict is what a Deployed event concluded of a successful build.
type DeployVerdict int

const (
	// DeployNone: not a Deployed event.
	DeployNone DeployVerdict = iota
	// DeployRecorded: the rebuild was recorded before: nothing new.
	DeployRecorded
	// DeployWaiting: the Service does not run the new image yet; back in RequeueAfter.
	DeployWaiting
	// DeployFailed: the build did not bring what it was to: recorded Failed.
	DeployFailed
	// DeployVerified: the Service runs the new image with the new middleware: the
	// rebuild is to be recorded (Build.Message says what it brought).
	DeployVerified
)

// Transition is what the reconciler applies after an event: the build's status, the
// queue, the launch, and what to do or observe next.
type Transition struct {
	// Build is status.build after the event (a copy; nil: none).
	Build *v1alpha1.BuildStatus
	// Slot is the change of the Function's place in the queue.
	Slot Slot
	// LaunchDone: the launch's outcome is recorded, the Launcher may forget it.
	LaunchDone bool
	// Stop: stop the build's runs, then report Stopped (Bound) or TimedOut (RunSeen).
	Stop bool
	// AskQueue: ask the queue for a slot (Queue.Admit) with QueuedAt, then report
	// NoSlot or Admitted (Due).
	AskQueue bool
	QueuedAt time.Time
	// Backoff: a failed build waits out its backoff, until RequeueAfter (Due).
	Backoff bool
	// AskLeader: a launch another process made may be an earlier leader's, which is
	// gone: if it is, report LaunchLost; otherwise come back in RequeueAfter (NoRun).
	AskLeader bool
	// RequeueAfter, when not zero, brings the Function back that soon.
	RequeueAfter time.Duration
	// Deploy is the verdict of a Deployed event.
	Deploy DeployVerdict
}

// Machine holds every phase change of a build: Queued, Starting, Running, Succeeded,
// Failed, and none. It is pure: the reconciler observes (PipelineRuns, the launch,
// the queue, the Knative Service) and applies the Transition it returns.
type Machine struct {
	// RetryDelay is the backoff before retry failures+1 of a failed build.
	RetryDelay func(failures int32) time.Duration
}

// InFlight reports whether b is a build in flight: Starting or Running.
func InFlight(b *v1alpha1.BuildStatus) bool {
	return b.InFlight()
}

// inFlightOnly are the events of a build in flight: for any other build they change
// nothing.
var inFlightOnly = map[EventKind]bool{RunSeen: true, RunSucceeded: true, RunFailed: true, NoRun: true, LaunchLost: true, TimedOut: true, Stopped: true}

// Next returns what follows event ev of build b (status.build; nil for none). b is
// not changed. Every phase change of a build is here:
//
//	none, Failed (after its backoff) → Queued (NoSlot) or Starting (Admitted)
//	Queued → none (GaveUp)
//	Starting → Running (RunSeen)
//	Running → Succeeded (RunSucceeded), Failed (RunFailed, TimedOut)
//	Starting, Running → Failed (NoRun: launch error, run deleted, launch lost; Stopped)
//	Succeeded → verified, or Failed (Deployed)
func (m Machine) Next(b *v1alpha1.BuildStatus, ev Event) Transition {
	t := Transition{Build: b.DeepCopy()}
	nb := t.Build
	if inFlightOnly[ev.Kind] && !InFlight(nb) {
		return t
	}
	switch ev.Kind {
	case Due:
		return m.due(t, ev)
	case NoSlot:
		queuedAt := metav1.NewTime(ev.QueuedAt)
		t.Build = &v1alpha1.BuildStatus{Phase: v1alpha1.BuildPhaseQueued, QueuedAt: &queuedAt,
			QueuePosition: ev.Position, Failures: failures(b)}
	case Admitted:
		queuedAt, start := metav1.NewTime(ev.QueuedAt), metav1.NewTime(ev.At)
		s := ev.Start
		t.Build = &v1alpha1.BuildStatus{
			ID: s.ID, Phase: v1alpha1.BuildPhaseStarting, StartTime: &start, QueuedAt: &queuedAt,
			Commit: s.Commit, FromImage: s.FromImage, FromMiddleware: s.FromMiddleware, ToMiddleware: s.ToMiddleware,
			Failures: failures(b), Cause: s.Cause, Method: s.Method, ServiceUID: s.BoundUID,
		}
		t.RequeueAfter = PollWhileWaiting
	case GaveUp:
		// Only a queued Function leaves: leaving wakes the head of the queue, which
		// every up-to-date Function's check must not do. A Queued status counts too,
		// before the queue is seeded from it.
		queued := nb != nil && nb.Phase == v1alpha1.BuildPhaseQueued
		if queued {
			t.Build = nil
		}
		if queued || ev.Waiting {
			t.Slot = SlotLeave
		}
	case RunSeen:
		return m.runSeen(t, ev)
	case RunSucceeded:
		nb.PipelineRun = ev.Run
		nb.Phase, nb.Failures, nb.RetryAfter = v1alpha1.BuildPhaseSucceeded, 0, nil
		nb.FailedTask, nb.FailedStep = "", ""
		nb.CompletionTime = &metav1.Time{Time: ev.Ended}
		nb.Message = fmt.Sprintf("PipelineRun %s succeeded", ev.Run)
		t.Slot, t.LaunchDone = SlotRelease, true
	case RunFailed:
		nb.PipelineRun = ev.Run
		t = m.failed(t, ev.Ended, ev.Failure)
		t.LaunchDone = true
	case NoRun:
		return m.noRun(t, ev)
	case LaunchLost:
		// Retried now, without counting as a failure.
		nb.Phase, nb.Message = v1alpha1.BuildPhaseFailed, "the build's launch was interrupted before its PipelineRun existed (the operator restarted?): it is retried now"
		nb.CompletionTime, nb.RetryAfter = &metav1.Time{Time: ev.At}, &metav1.Time{Time: ev.At}
		t.Slot = SlotRelease
	case TimedOut, Stopped:
		t = m.failed(t, ev.At, ev.Failure)
	case Bound:
		// A build never goes on to deploy over a Service whose binding changed.
		t.Stop = InFlight(nb) && nb.ServiceUID != "" && nb.ServiceUID != ev.BoundUID
	case Deployed:
		if nb != nil && nb.Phase == v1alpha1.BuildPhaseSucceeded {
			return m.deployed(t, ev)
		}
	}
	return t
}

// due: a failed build waits out its backoff; otherwise the queue is asked, with the
// time a queued build joined it.
func (m Machine) due(t Transition, ev Event) Transition {
	b := t.Build
	if b != nil && b.Phase == v1alpha1.BuildPhaseFailed && b.RetryAfter != nil && ev.At.Before(b.RetryAfter.Time) && !ev.Requested {
		t.Backoff, t.RequeueAfter = true, b.RetryAfter.Sub(ev.At)
		return t
	}
	t.AskQueue, t.QueuedAt = true, ev.At
	if b != nil && b.Phase == v1alpha1.BuildPhaseQueued && b.QueuedAt != nil {
		t.QueuedAt = b.QueuedAt.Time
	}
	return t
}

// runSeen: Starting → Running, holding a slot until its deadline; past it, stopped.
func (m Machine) runSeen(t Transition, ev Event) Transition {
	b := t.Build
	launched := b.StartTime
	b.PipelineRun, b.Phase = ev.Run, v1alpha1.BuildPhaseRunning
	if st := ev.RunStart; st != nil && (launched == nil || st.Before(launched)) {
		b.StartTime = st.DeepCopy()
	}
	if launched == nil {
		launched = &ev.RunCreated
	}
	if left := launched.Add(ev.Timeout).Sub(ev.At); left > 0 {
		t.Slot, t.RequeueAfter = SlotHold, left
		return t
	}
	t.Stop = true
	return t
}

// noRun follows a build in flight without a PipelineRun.
func (m Machine) noRun(t Transition, ev Event) Transition {
	b := t.Build
	switch {
	case ev.Launch.Here && !ev.Launch.Ended:
		t.RequeueAfter = PollWhileWaiting // the PipelineRun is on its way, or the rebase runs
	case ev.Launch.Here && ev.Launch.Err == nil && b.Method == v1alpha1.BuildMethodRebase:
		// A rebase has no PipelineRun: its launch returning is its end.
		b.Phase, b.Failures, b.RetryAfter = v1alpha1.BuildPhaseSucceeded, 0, nil
		b.ToImage, b.CompletionTime = ev.Launch.Result, &metav1.Time{Time: ev.At}
		b.Message = fmt.Sprintf("rebased and pushed %s; deployed it", ev.Launch.Result)
		t.Slot, t.LaunchDone, t.RequeueAfter = SlotRelease, true, PollWhileWaiting
	case ev.Launch.Here && ev.Launch.Err != nil && b.Method == v1alpha1.BuildMethodRebase:
		t = m.failed(t, ev.At, Failure{Message: fmt.Sprintf("the rebase failed: %s", ev.Launch.Err)})
		t.LaunchDone = true
	case ev.Launch.Here && ev.Launch.Err != nil:
		t = m.failed(t, ev.At, Failure{Message: fmt.Sprintf("starting the build failed: %s", ev.Launch.Err)})
		t.LaunchDone = true
	case b.Phase == v1alpha1.BuildPhaseRunning:
		t = m.failed(t, ev.At, Failure{Message: fmt.Sprintf("PipelineRun %s was deleted before it finished", b.PipelineRun)})
		t.LaunchDone = true
	case b.StartTime != nil && ev.At.Sub(b.StartTime.Time) < LaunchGrace:
		t.AskLeader, t.RequeueAfter = true, min(LaunchGrace-ev.At.Sub(b.StartTime.Time), LeaderSettle)
	default:
		ev.Kind = LaunchLost
		return m.Next(t.Build, ev)
	}
	return t
}

// deployed follows a successful build until the function runs its image with
// the middleware it was to bring.
func (m Machine) deployed(t Transition, ev Event) Transition {
	b, d := t.Build, ev.Deploy
	if b.Method == v1alpha1.BuildMethodRebase && !d.Recorded {
		return m.rebaseDeployed(t, ev)
	}
	switch {
	case d.Recorded:
		t.Deploy = DeployRecorded
	case b.ServiceUID != "" && b.ServiceUID != d.BoundUID:
		t = m.failed(t, ev.At, Failure{Message: fmt.Sprintf("PipelineRun %s succeeded, but what func deployed that it was started for "+
			"(UID %s: a Knative Service, or a raw or keda Deployment) was replaced since: not counted as a rebuild",
			b.PipelineRun, b.ServiceUID)})
		t.Deploy = DeployFailed
	case d.Image == b.FromImage && b.FromImage != "" && b.CompletionTime != nil && ev.At.Sub(b.CompletionTime.Time) > SameImageGrace &&
		b.Cause == v1alpha1.BuildCauseRequest && !d.RebuildDue:
		// A requested rebuild of an unchanged commit, builder and base is the same image
		// (buildpacks builds are reproducible): func's deploy step ran before the
		// PipelineRun succeeded, and nothing changed.
		b.Message = fmt.Sprintf("%s by PipelineRun %s: the same image as before, %s (nothing it is built from changed)",
			UpdatedMessage(b, d.Current), b.PipelineRun, d.Image)
		t.Deploy = DeployVerified
	case d.Image == b.FromImage && b.FromImage != "" && d.Failure.Of(b, ev.At):
		// Knative says the new Revision will not serve: no need to wait DeployGrace.
		t = m.failed(t, ev.At, Failure{Message: fmt.Sprintf("PipelineRun %s succeeded but its deploy does not serve: %s; %s still serves",
			b.PipelineRun, d.Failure, b.FromImage)})
		t.Deploy = DeployFailed
	case d.Image == b.FromImage && b.FromImage != "" && b.CompletionTime != nil && ev.At.Sub(b.CompletionTime.Time) > DeployGrace:
		t = m.failed(t, ev.At, Failure{Message: fmt.Sprintf("PipelineRun %s succeeded but the function still runs %s after %s", b.PipelineRun, b.FromImage, DeployGrace)})
		t.Deploy = DeployFailed
	case d.Image == b.FromImage && b.FromImage != "":
		t.Deploy, t.RequeueAfter = DeployWaiting, PollWhileWaiting
	case d.RollingOut && b.CompletionTime != nil && ev.At.Sub(b.CompletionTime.Time) > DeployGrace:
		t = m.failed(t, ev.At, Failure{Message: fmt.Sprintf("PipelineRun %s succeeded but what func deployed has not rolled %s out "+
			"(to every replica of a Deployment, or to a ready latest Revision of a Knative Service) after %s", b.PipelineRun, d.Image, DeployGrace)})
		t.Deploy = DeployFailed
	case d.RollingOut:
		t.Deploy, t.RequeueAfter = DeployWaiting, PollWhileWaiting
	case d.RebuildDue:
		t = m.failed(t, ev.At, Failure{Message: fmt.Sprintf("PipelineRun %s succeeded but the new image %s runs middleware %s; %s is available",
			b.PipelineRun, d.Image, orUnknown(d.Current), d.Available)})
		t.Deploy = DeployFailed
	default:
		b.Message = fmt.Sprintf("%s by PipelineRun %s; the Service runs %s", UpdatedMessage(b, d.Current), b.PipelineRun, d.Image)
		t.Deploy = DeployVerified
	}
	return t
}

// rebaseDeployed follows a rebase until what func deployed serves its image: a
// Knative Service's latest ready Revision resolved to it, or a raw or keda Deployment
// rolled it out. Until then the old image serves; past DeployGrace it counts as failed.
func (m Machine) rebaseDeployed(t Transition, ev Event) Transition {
	b, d := t.Build, ev.Deploy
	late := b.CompletionTime != nil && ev.At.Sub(b.CompletionTime.Time) > DeployGrace
	switch {
	case b.ServiceUID != "" && b.ServiceUID != d.BoundUID:
		t = m.failed(t, ev.At, Failure{Message: fmt.Sprintf("rebased image %s was deployed, but what func deployed that it was started for "+
			"(UID %s) was replaced since: not counted", b.ToImage, b.ServiceUID)})
		t.Deploy = DeployFailed
	case d.Image == b.ToImage && !d.RollingOut:
		b.Message = fmt.Sprintf("%s; the function serves %s", UpdatedMessage(b, d.Current), d.Image)
		t.Deploy = DeployVerified
	case d.Image != b.ToImage && d.Failure.Of(b, ev.At):
		t = m.failed(t, ev.At, Failure{Message: fmt.Sprintf("rebased image %s was deployed, but it does not serve: %s; %s still serves",
			b.ToImage, d.Failure, orUnknown(d.Image))})
		t.Deploy = DeployFailed
	case late && d.Image == b.ToImage:
		t = m.failed(t, ev.At, Failure{Message: fmt.Sprintf("rebased image %s has not rolled out to every replica after %s", b.ToImage, DeployGrace)})
		t.Deploy = DeployFailed
	case late:
		t = m.failed(t, ev.At, Failure{Message: fmt.Sprintf("rebased image %s was deployed, but the function still serves %s after %s "+
			"(a Revision that does not become ready keeps the old one serving)", b.ToImage, orUnknown(d.Image), DeployGrace)})
		t.Deploy = DeployFailed
	default:
		t.Deploy, t.RequeueAfter = DeployWaiting, PollWhileWaiting
	}
	return t
}

// UpdatedMessage says what a verified rebuild brought: the history entry and event.
func UpdatedMessage(b *v1alpha1.BuildStatus, current string) string {
	if b.Cause == v1alpha1.BuildCauseRequest {
		return fmt.Sprintf("Rebuilt as requested (middleware %s)", orUnknown(current))
	}
	if b.Cause == v1alpha1.BuildCauseSource {
		return fmt.Sprintf("Built and deployed commit %s (middleware %s)", v1alpha1.ShortCommit(b.Commit), orUnknown(current))
	}
	if b.Cause == v1alpha1.BuildCauseBase {
		if b.Method == v1alpha1.BuildMethodRebase {
			return fmt.Sprintf("Rebased onto its new run image: %s (middleware %s)", b.ToImage, orUnknown(current))
		}
		return fmt.Sprintf("Rebuilt on its new base (middleware %s)", orUnknown(current))
	}
	return fmt.Sprintf("Middleware updated from %s to %s", orUnknown(b.FromMiddleware), orUnknown(current))
}

// failed records t's build failed at at, and when it may be retried, and frees its slot.
func (m Machine) failed(t Transition, at time.Time, f Failure) Transition {
	b := t.Build
	b.Phase, b.FailedTask, b.FailedStep = v1alpha1.BuildPhaseFailed, f.Task, f.Step
	b.Message = bound(f.Message)
	b.Failures++
	b.CompletionTime = &metav1.Time{Time: at}
	b.RetryAfter = &metav1.Time{Time: at.Add(m.RetryDelay(b.Failures))}
	t.Slot = SlotRelease
	return t
}

func failures(b *v1alpha1.BuildStatus) int32 {
	if b == nil {
		return 0
	}
	return b.Failures
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func bound(s string) string {
	if len(s) > maxMessage {
		return text.Prefix(s, maxMessage) + "…" // never half a character
	}
	return s
}

package rebuild

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fnops/func-operator/api/v1alpha1"
)

// TestMachine_Next holds every phase change of a build: one row per transition.
func TestMachine_Next(t *testing.T) {
	t0 := time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: t0.Add(d)} }
	m := Machine{RetryDelay: func(failures int32) time.Duration { return time.Duration(failures) * 10 * time.Second }}
	const timeout = time.Hour

	queued := &v1alpha1.BuildStatus{Phase: v1alpha1.BuildPhaseQueued, QueuedAt: at(-time.Minute), QueuePosition: 3, Failures: 1}
	starting := &v1alpha1.BuildStatus{ID: "b1", Phase: v1alpha1.BuildPhaseStarting, StartTime: at(-time.Minute), Failures: 1, ServiceUID: "svc-1"}
	running := &v1alpha1.BuildStatus{ID: "b1", Phase: v1alpha1.BuildPhaseRunning, PipelineRun: "fn-run-b1", StartTime: at(-time.Minute), Failures: 1, ServiceUID: "svc-1"}
	failed := &v1alpha1.BuildStatus{ID: "b1", Phase: v1alpha1.BuildPhaseFailed, Failures: 2, FailedTask: "build", Message: "boom",
		CompletionTime: at(-time.Minute), RetryAfter: at(20 * time.Second)}
	succeeded := &v1alpha1.BuildStatus{ID: "b1", Phase: v1alpha1.BuildPhaseSucceeded, PipelineRun: "fn-run-b1", Message: "PipelineRun fn-run-b1 succeeded",
		FromImage: "img@old", FromMiddleware: "v1", ToMiddleware: "v2", ServiceUID: "svc-1", CompletionTime: at(-time.Minute)}
	rebasing := &v1alpha1.BuildStatus{ID: "r1", Phase: v1alpha1.BuildPhaseStarting, StartTime: at(-time.Minute), Failures: 1, ServiceUID: "svc-1",
		Cause: v1alpha1.BuildCauseBase, Method: v1alpha1.BuildMethodRebase, FromImage: "img@old", FromMiddleware: "v1", ToMiddleware: "v1"}
	rebased := &v1alpha1.BuildStatus{ID: "r1", Phase: v1alpha1.BuildPhaseSucceeded, StartTime: at(-time.Minute), ServiceUID: "svc-1",
		Cause: v1alpha1.BuildCauseBase, Method: v1alpha1.BuildMethodRebase, FromImage: "img@old", FromMiddleware: "v1", ToMiddleware: "v1",
		ToImage: "img@rebased", CompletionTime: at(-time.Minute), Message: "rebased and pushed img@rebased; deployed it"}
	// with returns a copy of b changed by f.
	with := func(b *v1alpha1.BuildStatus, f func(*v1alpha1.BuildStatus)) *v1alpha1.BuildStatus {
		b = b.DeepCopy()
		f(b)
		return b
	}
	// started is a build with its start time (a Knative Revision made after it is its deploy's).
	started := func(b *v1alpha1.BuildStatus) *v1alpha1.BuildStatus {
		return with(b, func(b *v1alpha1.BuildStatus) { b.StartTime = at(-time.Minute) })
	}
	// failedAt is b failed at t0+d with message msg: one more failure, retried after its backoff.
	failedAt := func(b *v1alpha1.BuildStatus, d time.Duration, msg string) *v1alpha1.BuildStatus {
		return with(b, func(b *v1alpha1.BuildStatus) {
			b.Phase, b.Message, b.FailedTask, b.FailedStep = v1alpha1.BuildPhaseFailed, msg, "", ""
			b.Failures++
			b.CompletionTime, b.RetryAfter = at(d), at(d+time.Duration(b.Failures)*10*time.Second)
		})
	}

	tests := []struct {
		name  string
		build *v1alpha1.BuildStatus
		event Event
		want  Transition
	}{{
		name:  "none, due: ask the queue, queued now",
		event: Event{Kind: Due, At: t0},
		want:  Transition{AskQueue: true, QueuedAt: t0},
	}, {
		name:  "Queued, due: ask the queue, keeping its place",
		build: queued, event: Event{Kind: Due, At: t0},
		want: Transition{Build: queued, AskQueue: true, QueuedAt: t0.Add(-time.Minute)},
	}, {
		name:  "Failed, due within its backoff: back when it is over",
		build: failed, event: Event{Kind: Due, At: t0},
		want: Transition{Build: failed, Backoff: true, RequeueAfter: 20 * time.Second},
	}, {
		name:  "Failed, requested within its backoff: a user's request does not wait it out (ask the queue)",
		build: failed, event: Event{Kind: Due, At: t0, Requested: true},
		want: Transition{Build: failed, AskQueue: true, QueuedAt: t0},
	}, {
		name:  "Failed, due after its backoff: retried (ask the queue)",
		build: failed, event: Event{Kind: Due, At: t0.Add(time.Minute)},
		want: Transition{Build: failed, AskQueue: true, QueuedAt: t0.Add(time.Minute)},
	}, {
		name:  "Failed → Queued: no slot, its failures kept",
		build: failed, event: Event{Kind: NoSlot, At: t0, QueuedAt: t0, Position: 2},
		want: Transition{Build: &v1alpha1.BuildStatus{Phase: v1alpha1.BuildPhaseQueued, QueuedAt: at(0), QueuePosition: 2, Failures: 2}},
	}, {
		name:  "Queued → Starting: admitted, recorded before its launch",
		build: queued,
		event: Event{Kind: Admitted, At: t0, QueuedAt: t0.Add(-time.Minute), Start: Start{ID: "b2", Commit: "c1", FromImage: "img@old",
			FromMiddleware: "v1", ToMiddleware: "v2", Cause: v1alpha1.BuildCauseMiddleware, BoundUID: "svc-1"}},
		want: Transition{Build: &v1alpha1.BuildStatus{ID: "b2", Phase: v1alpha1.BuildPhaseStarting, StartTime: at(0), QueuedAt: at(-time.Minute),
			Commit: "c1", FromImage: "img@old", FromMiddleware: "v1", ToMiddleware: "v2", Failures: 1, Cause: v1alpha1.BuildCauseMiddleware, ServiceUID: "svc-1"},
			RequeueAfter: PollWhileWaiting},
	}, {
		name:  "Queued → Starting: a rebase admitted, its method recorded",
		build: queued,
		event: Event{Kind: Admitted, At: t0, QueuedAt: t0.Add(-time.Minute), Start: Start{ID: "r2", FromImage: "img@old",
			FromMiddleware: "v1", ToMiddleware: "v1", Cause: v1alpha1.BuildCauseBase, Method: v1alpha1.BuildMethodRebase, BoundUID: "svc-1"}},
		want: Transition{Build: &v1alpha1.BuildStatus{ID: "r2", Phase: v1alpha1.BuildPhaseStarting, StartTime: at(0), QueuedAt: at(-time.Minute),
			FromImage: "img@old", FromMiddleware: "v1", ToMiddleware: "v1", Failures: 1, Cause: v1alpha1.BuildCauseBase, Method: v1alpha1.BuildMethodRebase, ServiceUID: "svc-1"},
			RequeueAfter: PollWhileWaiting},
	}, {
		name:  "Queued → none: gave its place up",
		build: queued, event: Event{Kind: GaveUp, At: t0},
		want: Transition{Slot: SlotLeave},
	}, {
		name:  "none but waiting in the queue: gave its place up",
		event: Event{Kind: GaveUp, At: t0, Waiting: true},
		want:  Transition{Slot: SlotLeave},
	}, {
		name:  "none, not waiting: nothing to give up (no wake of the queue's head)",
		event: Event{Kind: GaveUp, At: t0},
		want:  Transition{},
	}, {
		name:  "Failed: giving up keeps the record",
		build: failed, event: Event{Kind: GaveUp, At: t0},
		want: Transition{Build: failed},
	}, {
		name:  "Starting → Running: run seen, holds a slot until its deadline",
		build: starting, event: Event{Kind: RunSeen, At: t0, Run: "fn-run-b1", RunStart: at(-30 * time.Second), RunCreated: *at(-30 * time.Second), Timeout: timeout},
		want: Transition{Build: with(starting, func(b *v1alpha1.BuildStatus) { b.Phase, b.PipelineRun = v1alpha1.BuildPhaseRunning, "fn-run-b1" }),
			Slot: SlotHold, RequeueAfter: timeout - time.Minute},
	}, {
		name:  "Starting → Running: a run that started before the recorded start moves it back",
		build: starting, event: Event{Kind: RunSeen, At: t0, Run: "fn-run-b1", RunStart: at(-2 * time.Minute), Timeout: timeout},
		want: Transition{Build: with(starting, func(b *v1alpha1.BuildStatus) {
			b.Phase, b.PipelineRun, b.StartTime = v1alpha1.BuildPhaseRunning, "fn-run-b1", at(-2*time.Minute)
		}), Slot: SlotHold, RequeueAfter: timeout - time.Minute},
	}, {
		name:  "Running past its timeout: stop it (then TimedOut)",
		build: running, event: Event{Kind: RunSeen, At: t0.Add(timeout), Run: "fn-run-b1", RunStart: at(-time.Minute), Timeout: timeout},
		want: Transition{Build: running, Stop: true},
	}, {
		name:  "Running → Succeeded: its slot freed, its launch forgotten, its failures reset",
		build: running, event: Event{Kind: RunSucceeded, At: t0, Run: "fn-run-b1", Ended: t0},
		want: Transition{Build: with(running, func(b *v1alpha1.BuildStatus) {
			b.Phase, b.Failures, b.CompletionTime, b.Message = v1alpha1.BuildPhaseSucceeded, 0, at(0), "PipelineRun fn-run-b1 succeeded"
		}), Slot: SlotRelease, LaunchDone: true},
	}, {
		name:  "Running → Failed: run ended, where it failed, retried after its backoff",
		build: running, event: Event{Kind: RunFailed, At: t0, Run: "fn-run-b1", Ended: t0.Add(-time.Second),
			Failure: Failure{Task: "build", Step: "build", Message: "TaskRun x: exit 1"}},
		want: Transition{Build: with(failedAt(running, -time.Second, "TaskRun x: exit 1"), func(b *v1alpha1.BuildStatus) {
			b.FailedTask, b.FailedStep = "build", "build"
		}), Slot: SlotRelease, LaunchDone: true},
	}, {
		name:  "Running → Failed: its message bounded",
		build: running, event: Event{Kind: RunFailed, At: t0, Run: "fn-run-b1", Ended: t0, Failure: Failure{Message: strings.Repeat("x", 2000)}},
		want: Transition{Build: failedAt(running, 0, strings.Repeat("x", maxMessage)+"…"), Slot: SlotRelease, LaunchDone: true},
	}, {
		name:  "Starting, launched here and on its way: poll",
		build: starting, event: Event{Kind: NoRun, At: t0, Launch: LaunchState{Here: true}},
		want: Transition{Build: starting, RequeueAfter: PollWhileWaiting},
	}, {
		name:  "Starting → Failed: launch error",
		build: starting, event: Event{Kind: NoRun, At: t0, Launch: LaunchState{Here: true, Ended: true, Err: errors.New("boom")}},
		want: Transition{Build: failedAt(starting, 0, "starting the build failed: boom"), Slot: SlotRelease, LaunchDone: true},
	}, {
		name:  "Running → Failed: its run deleted",
		build: running, event: Event{Kind: NoRun, At: t0},
		want: Transition{Build: failedAt(running, 0, "PipelineRun fn-run-b1 was deleted before it finished"), Slot: SlotRelease, LaunchDone: true},
	}, {
		name:  "Starting, launched elsewhere within LaunchGrace: ask whether an earlier leader launched it",
		build: starting, event: Event{Kind: NoRun, At: t0},
		want: Transition{Build: starting, AskLeader: true, RequeueAfter: LeaderSettle},
	}, {
		name:  "Starting, launched elsewhere, LaunchGrace nearly over: back when it is",
		build: starting, event: Event{Kind: NoRun, At: t0.Add(50 * time.Second)},
		want: Transition{Build: starting, AskLeader: true, RequeueAfter: 10 * time.Second},
	}, {
		name:  "Starting → Failed: launch lost past LaunchGrace, retried now without counting",
		build: starting, event: Event{Kind: NoRun, At: t0.Add(LaunchGrace)},
		want: Transition{Build: with(starting, func(b *v1alpha1.BuildStatus) {
			b.Phase = v1alpha1.BuildPhaseFailed
			b.Message = "the build's launch was interrupted before its PipelineRun existed (the operator restarted?): it is retried now"
			b.CompletionTime, b.RetryAfter = at(LaunchGrace), at(LaunchGrace)
		}), Slot: SlotRelease},
	}, {
		name:  "Starting → Failed: launch lost (an earlier leader's)",
		build: starting, event: Event{Kind: LaunchLost, At: t0},
		want: Transition{Build: with(starting, func(b *v1alpha1.BuildStatus) {
			b.Phase = v1alpha1.BuildPhaseFailed
			b.Message = "the build's launch was interrupted before its PipelineRun existed (the operator restarted?): it is retried now"
			b.CompletionTime, b.RetryAfter = at(0), at(0)
		}), Slot: SlotRelease},
	}, {
		name:  "Running → Failed: timed out, its runs stopped",
		build: running, event: Event{Kind: TimedOut, At: t0, Failure: Failure{Message: "did not finish within 1h0m0s"}},
		want: Transition{Build: failedAt(running, 0, "did not finish within 1h0m0s"), Slot: SlotRelease},
	}, {
		name:  "Running, bound to its Service: goes on",
		build: running, event: Event{Kind: Bound, At: t0, BoundUID: "svc-1"},
		want: Transition{Build: running},
	}, {
		name:  "Running, bound to another Service: stop it (then Stopped)",
		build: running, event: Event{Kind: Bound, At: t0, BoundUID: "svc-2"},
		want: Transition{Build: running, Stop: true},
	}, {
		name:  "Starting, the Function bound to no Service any more: stop it",
		build: starting, event: Event{Kind: Bound, At: t0},
		want: Transition{Build: starting, Stop: true},
	}, {
		name:  "Running, started for no known Service: goes on",
		build: with(running, func(b *v1alpha1.BuildStatus) { b.ServiceUID = "" }), event: Event{Kind: Bound, At: t0, BoundUID: "svc-2"},
		want: Transition{Build: with(running, func(b *v1alpha1.BuildStatus) { b.ServiceUID = "" })},
	}, {
		name:  "Succeeded, bound elsewhere: not in flight, nothing to stop",
		build: succeeded, event: Event{Kind: Bound, At: t0, BoundUID: "svc-2"},
		want: Transition{Build: succeeded},
	}, {
		name:  "Running → Failed: stopped (unbound Service)",
		build: running, event: Event{Kind: Stopped, At: t0, Failure: Failure{Message: "stopped: …"}},
		want: Transition{Build: failedAt(running, 0, "stopped: …"), Slot: SlotRelease},
	}, {
		name:  "Failed: a late run end changes nothing",
		build: failed, event: Event{Kind: RunSucceeded, At: t0, Run: "fn-run-b1", Ended: t0},
		want: Transition{Build: failed},
	}, {
		name:  "Succeeded, recorded before: nothing new",
		build: succeeded, event: Event{Kind: Deployed, At: t0, Deploy: Deploy{Recorded: true}},
		want: Transition{Build: succeeded, Deploy: DeployRecorded},
	}, {
		name:  "Succeeded, the Service still runs the old image: wait",
		build: succeeded, event: Event{Kind: Deployed, At: t0, Deploy: Deploy{BoundUID: "svc-1", Image: "img@old"}},
		want: Transition{Build: succeeded, Deploy: DeployWaiting, RequeueAfter: PollWhileWaiting},
	}, {
		name:  "Succeeded → Failed before DeployGrace: Knative reports the build's Revision failed for RevisionFailedGrace",
		build: started(succeeded), event: Event{Kind: Deployed, At: t0.Add(RevisionFailedGrace), Deploy: Deploy{BoundUID: "svc-1", Image: "img@old",
			Failure: RevisionFailure{Revision: "fn-00002", Reason: "ImagePullBackOff", Since: t0, Created: t0.Add(-time.Second)}}},
		want: Transition{Build: failedAt(started(succeeded), RevisionFailedGrace, "PipelineRun fn-run-b1 succeeded but its deploy does not serve: "+
			"Knative reports Revision fn-00002 failed (ImagePullBackOff); img@old still serves"),
			Slot: SlotRelease, Deploy: DeployFailed},
	}, {
		name:  "Succeeded, Knative reports the build's Revision failed, not for RevisionFailedGrace yet (it may end by itself): wait",
		build: started(succeeded), event: Event{Kind: Deployed, At: t0.Add(RevisionFailedGrace - time.Second), Deploy: Deploy{BoundUID: "svc-1", Image: "img@old",
			Failure: RevisionFailure{Revision: "fn-00002", Reason: "Unschedulable", Since: t0, Created: t0}}},
		want: Transition{Build: started(succeeded), Deploy: DeployWaiting, RequeueAfter: PollWhileWaiting},
	}, {
		name:  "Succeeded, Knative reports a Revision made before the build failed (not the build's deploy): wait",
		build: started(succeeded), event: Event{Kind: Deployed, At: t0.Add(RevisionFailedGrace), Deploy: Deploy{BoundUID: "svc-1", Image: "img@old",
			Failure: RevisionFailure{Revision: "fn-00002", Reason: "ExitCode1", Since: t0.Add(-2 * time.Minute), Created: t0.Add(-2 * time.Minute)}}},
		want: Transition{Build: started(succeeded), Deploy: DeployWaiting, RequeueAfter: PollWhileWaiting},
	}, {
		name:  "Succeeded, a Revision failed but the new image serves: verified (a later deploy's failure is not the build's)",
		build: started(succeeded), event: Event{Kind: Deployed, At: t0.Add(time.Hour), Deploy: Deploy{BoundUID: "svc-1", Image: "img@new", Current: "v2", Available: "v2",
			Failure: RevisionFailure{Revision: "fn-00003", Reason: "ExitCode1", Since: t0, Created: t0}}},
		want: Transition{Build: with(started(succeeded), func(b *v1alpha1.BuildStatus) {
			b.Message = "Middleware updated from v1 to v2 by PipelineRun fn-run-b1; the Service runs img@new"
		}), Deploy: DeployVerified},
	}, {
		name:  "Succeeded → Failed: the old image past DeployGrace",
		build: succeeded, event: Event{Kind: Deployed, At: t0.Add(DeployGrace), Deploy: Deploy{BoundUID: "svc-1", Image: "img@old"}},
		want: Transition{Build: failedAt(succeeded, DeployGrace, "PipelineRun fn-run-b1 succeeded but the function still runs img@old after 2m0s"),
			Slot: SlotRelease, Deploy: DeployFailed},
	}, {
		name:  "Succeeded, requested, the same image past SameImageGrace: verified, nothing it is built from changed",
		build: with(succeeded, func(b *v1alpha1.BuildStatus) { b.Cause, b.ToMiddleware = v1alpha1.BuildCauseRequest, "v1" }),
		event: Event{Kind: Deployed, At: t0.Add(SameImageGrace), Deploy: Deploy{BoundUID: "svc-1", Image: "img@old", Current: "v1", Available: "v1"}},
		want: Transition{Build: with(succeeded, func(b *v1alpha1.BuildStatus) {
			b.Cause, b.ToMiddleware = v1alpha1.BuildCauseRequest, "v1"
			b.Message = "Rebuilt as requested (middleware v1) by PipelineRun fn-run-b1: the same image as before, img@old (nothing it is built from changed)"
		}), Deploy: DeployVerified},
	}, {
		name:  "Succeeded, requested, the same image within SameImageGrace: wait (the caches may lag)",
		build: with(succeeded, func(b *v1alpha1.BuildStatus) { b.Cause = v1alpha1.BuildCauseRequest }),
		event: Event{Kind: Deployed, At: t0.Add(-time.Minute + time.Second), Deploy: Deploy{BoundUID: "svc-1", Image: "img@old", Current: "v1", Available: "v1"}},
		want:  Transition{Build: with(succeeded, func(b *v1alpha1.BuildStatus) { b.Cause = v1alpha1.BuildCauseRequest }), Deploy: DeployWaiting, RequeueAfter: PollWhileWaiting},
	}, {
		name:  "Succeeded → Failed: the Service it was started for was replaced",
		build: succeeded, event: Event{Kind: Deployed, At: t0, Deploy: Deploy{BoundUID: "svc-2", Image: "img@new"}},
		want: Transition{Build: failedAt(succeeded, 0, "PipelineRun fn-run-b1 succeeded, but what func deployed that it was started for (UID svc-1: a Knative Service, or a raw or keda Deployment) was replaced since: not counted as a rebuild"),
			Slot: SlotRelease, Deploy: DeployFailed},
	}, {
		name:  "Succeeded, a raw Deployment still rolling the new image out: wait",
		build: succeeded, event: Event{Kind: Deployed, At: t0, Deploy: Deploy{BoundUID: "svc-1", Image: "img@new", RollingOut: true, Current: "v2", Available: "v2"}},
		want: Transition{Build: succeeded, Deploy: DeployWaiting, RequeueAfter: PollWhileWaiting},
	}, {
		name:  "Succeeded → Failed: a raw Deployment not rolled out past DeployGrace",
		build: succeeded, event: Event{Kind: Deployed, At: t0.Add(DeployGrace + time.Second), Deploy: Deploy{BoundUID: "svc-1", Image: "img@new", RollingOut: true, Current: "v2", Available: "v2"}},
		want: Transition{Build: failedAt(succeeded, DeployGrace+time.Second, "PipelineRun fn-run-b1 succeeded but what func deployed has not rolled img@new out "+
			"(to every replica of a Deployment, or to a ready latest Revision of a Knative Service) after 2m0s"),
			Slot: SlotRelease, Deploy: DeployFailed},
	}, {
		name:  "Succeeded → Failed: the new image runs old middleware",
		build: succeeded, event: Event{Kind: Deployed, At: t0, Deploy: Deploy{BoundUID: "svc-1", Image: "img@new", Current: "v1", Available: "v2", RebuildDue: true}},
		want: Transition{Build: failedAt(succeeded, 0, "PipelineRun fn-run-b1 succeeded but the new image img@new runs middleware v1; v2 is available"),
			Slot: SlotRelease, Deploy: DeployFailed},
	}, {
		name:  "Rebase starting, launched here and running: wait for it",
		build: rebasing, event: Event{Kind: NoRun, At: t0, Launch: LaunchState{Here: true}},
		want: Transition{Build: rebasing, RequeueAfter: PollWhileWaiting},
	}, {
		name:  "Rebase starting → Succeeded: its launch returned the image it pushed and deployed",
		build: rebasing, event: Event{Kind: NoRun, At: t0, Launch: LaunchState{Here: true, Ended: true, Result: "img@rebased"}},
		want: Transition{Build: with(rebasing, func(b *v1alpha1.BuildStatus) {
			b.Phase, b.Failures, b.ToImage, b.CompletionTime = v1alpha1.BuildPhaseSucceeded, 0, "img@rebased", at(0)
			b.Message = "rebased and pushed img@rebased; deployed it"
		}), Slot: SlotRelease, LaunchDone: true, RequeueAfter: PollWhileWaiting},
	}, {
		name:  "Rebase starting → Failed: the rebase returned an error",
		build: rebasing, event: Event{Kind: NoRun, At: t0, Launch: LaunchState{Here: true, Ended: true, Err: errors.New("run image not found")}},
		want: Transition{Build: failedAt(rebasing, 0, "the rebase failed: run image not found"), Slot: SlotRelease, LaunchDone: true},
	}, {
		name:  "Rebased, the function still serves the old image: wait (the old Revision serves)",
		build: rebased, event: Event{Kind: Deployed, At: t0, Deploy: Deploy{BoundUID: "svc-1", Image: "img@old", Current: "v1", Available: "v2", RebuildDue: true}},
		want: Transition{Build: rebased, Deploy: DeployWaiting, RequeueAfter: PollWhileWaiting},
	}, {
		name:  "Rebased → Failed before DeployGrace: Knative reports the rebased Revision failed for RevisionFailedGrace",
		build: rebased, event: Event{Kind: Deployed, At: t0.Add(RevisionFailedGrace), Deploy: Deploy{BoundUID: "svc-1", Image: "img@old",
			Failure: RevisionFailure{Revision: "fn-00002", Reason: "ExitCode1", Since: t0, Created: t0}}},
		want: Transition{Build: failedAt(rebased, RevisionFailedGrace, "rebased image img@rebased was deployed, but it does not serve: "+
			"Knative reports Revision fn-00002 failed (ExitCode1); img@old still serves"), Slot: SlotRelease, Deploy: DeployFailed},
	}, {
		name:  "Rebased → Failed: the old image still serves past DeployGrace",
		build: rebased, event: Event{Kind: Deployed, At: t0.Add(DeployGrace), Deploy: Deploy{BoundUID: "svc-1", Image: "img@old"}},
		want: Transition{Build: failedAt(rebased, DeployGrace, "rebased image img@rebased was deployed, but the function still serves img@old after 2m0s "+
			"(a Revision that does not become ready keeps the old one serving)"), Slot: SlotRelease, Deploy: DeployFailed},
	}, {
		name:  "Rebased, served: verified, whatever the middleware (a rebase keeps it)",
		build: rebased, event: Event{Kind: Deployed, At: t0, Deploy: Deploy{BoundUID: "svc-1", Image: "img@rebased", Current: "v1", Available: "v2", RebuildDue: true}},
		want: Transition{Build: with(rebased, func(b *v1alpha1.BuildStatus) {
			b.Message = "Rebased onto its new run image: img@rebased (middleware v1); the function serves img@rebased"
		}), Deploy: DeployVerified},
	}, {
		name:  "Rebased, a raw Deployment rolling it out: wait",
		build: rebased, event: Event{Kind: Deployed, At: t0, Deploy: Deploy{BoundUID: "svc-1", Image: "img@rebased", RollingOut: true}},
		want: Transition{Build: rebased, Deploy: DeployWaiting, RequeueAfter: PollWhileWaiting},
	}, {
		name:  "Rebased → Failed: what it was started for was replaced",
		build: rebased, event: Event{Kind: Deployed, At: t0, Deploy: Deploy{BoundUID: "svc-2", Image: "img@rebased"}},
		want: Transition{Build: failedAt(rebased, 0, "rebased image img@rebased was deployed, but what func deployed that it was started for (UID svc-1) was replaced since: not counted"),
			Slot: SlotRelease, Deploy: DeployFailed},
	}, {
		name:  "Succeeded, verified: the rebuild is recorded",
		build: succeeded, event: Event{Kind: Deployed, At: t0, Deploy: Deploy{BoundUID: "svc-1", Image: "img@new", Current: "v2", Available: "v2"}},
		want: Transition{Build: with(succeeded, func(b *v1alpha1.BuildStatus) {
			b.Message = "Middleware updated from v1 to v2 by PipelineRun fn-run-b1; the Service runs img@new"
		}), Deploy: DeployVerified},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.build.DeepCopy()
			got := m.Next(tt.build, tt.event)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Next() (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tt.build); diff != "" {
				t.Errorf("Next() changed the build it was given (-before +after):\n%s", diff)
			}
		})
	}
}

// TestBound_NeverSplitsACharacter: a build message cut to maxMessage bytes ends on a
// character boundary (it used to cut inside one, and the status then held invalid
// UTF-8); one that fits is kept.
func TestBound_NeverSplitsACharacter(t *testing.T) {
	msg := strings.Repeat("é", maxMessage) // two bytes each: maxMessage bytes fall mid-text
	got := bound("x" + msg)
	if !utf8.ValidString(got) || len(got) > maxMessage+len("…") || !strings.HasSuffix(got, "é…") {
		t.Errorf("bound of %d bytes: %d bytes, valid UTF-8 %t, ends %q", 1+len(msg), len(got), utf8.ValidString(got), got[len(got)-6:])
	}
	if ok := strings.Repeat("é", maxMessage/2); bound(ok) != ok {
		t.Errorf("a message of maxMessage bytes was cut")
	}
}

// TestUpdatedMessage: the history entry and Event of a verified build say what it
// brought, by its cause.
func TestUpdatedMessage(t *testing.T) {
	for _, tt := range []struct {
		b    v1alpha1.BuildStatus
		want string
	}{
		{b: v1alpha1.BuildStatus{Cause: v1alpha1.BuildCauseMiddleware, FromMiddleware: "v1"}, want: "Middleware updated from v1 to v2"},
		{b: v1alpha1.BuildStatus{}, want: "Middleware updated from unknown to v2"},
		{b: v1alpha1.BuildStatus{Cause: v1alpha1.BuildCauseRequest}, want: "Rebuilt as requested (middleware v2)"},
		{b: v1alpha1.BuildStatus{Cause: v1alpha1.BuildCauseSource, Commit: strings.Repeat("ab", 20)},
			want: "Built and deployed commit abababababab (middleware v2)"},
	} {
		if got := UpdatedMessage(&tt.b, "v2"); got != tt.want {
			t.Errorf("UpdatedMessage(%+v) = %q, want %q", tt.b, got, tt.want)
		}
	}
}

package function

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/git"
	"github.com/fnops/func-operator/pkg/rebuild"
	"github.com/fnops/func-operator/pkg/reconciler/function/build"
	"github.com/fnops/func-operator/pkg/reconciler/function/resources"
	"github.com/fnops/func-operator/pkg/rerror"
	"github.com/fnops/func-operator/pkg/workload"
)

// testFunctionUID is the UID of Function "fn" in the observeBuild tests.
const testFunctionUID = "fn-uid"

// taskRunsUnreadable fails every read of a TaskRun.
type taskRunsUnreadable struct{ client.Reader }

func (r taskRunsUnreadable) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*pipelinev1.TaskRun); ok {
		return errors.New("reading TaskRuns is broken")
	}
	return r.Reader.Get(ctx, key, obj, opts...)
}

// unreadable is a Fetcher whose reads of func.yaml stall, as a path that is gone at
// the commit does.
type unreadable struct{ Fetcher }

func (unreadable) Read(context.Context, string, git.Head, string, *git.Auth, time.Duration) (git.Result, error) {
	return git.Result{}, rerror.NewStalling(v1alpha1.ReasonPathNotFound, "no func.yaml at the commit (simulated)")
}

// lagging is a cache that has not seen any PipelineRun yet, as one listed from a
// lagging watch cache has not.
type lagging struct{ client.Client }

func (c lagging) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*pipelinev1.PipelineRunList); ok {
		return nil
	}
	return c.Client.List(ctx, list, opts...)
}

func TestReconciler_observeBuild(t *testing.T) {
	onFakeClient(t)
	ago := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: time.Now().Add(-d)} }
	tests := []struct {
		name  string
		build *v1alpha1.BuildStatus // status.build before the step
		run   *pipelineRun
		// copies are more runs, created before run: look-alikes a tenant made.
		copies    []pipelineRun
		holdsSlot bool // the Function holds a slot before the step
		want      buildOutcome
		wantSoon  time.Duration // RequeueAfter at most this, when not zero
		wantMsg   string        // substring of status.build.message
		// taskRunsUnreadable makes reading TaskRuns fail, as a broken API server would.
		taskRunsUnreadable bool
		// wantRuns, when set, is how many PipelineRuns are left (not being deleted).
		wantRuns *int
		// leadingFor, when set, is how long this process has led (leader election on).
		leadingFor time.Duration
		// cacheLags hides every PipelineRun from the cache (not from the API server).
		cacheLags bool
	}{{
		name: "no build, no run: nothing",
	}, {
		// A tenant who may create PipelineRuns labels one as a build, even controlled by
		// the Function: adopting it would let them hold a slot of the fleet budget.
		name:     "no build, an unfinished run with the operator's labels and owner: not adopted, no slot, left alone",
		run:      &pipelineRun{id: "forged", succeeded: corev1.ConditionUnknown, serviceUID: "svc-uid-1"},
		want:     buildOutcome{},
		wantRuns: ptrTo(1),
	}, {
		name:     "a build ended, an unfinished run of another ID: not adopted, no slot, left alone",
		build:    &v1alpha1.BuildStatus{ID: "b1", Phase: v1alpha1.BuildPhaseSucceeded},
		run:      &pipelineRun{id: "forged", succeeded: corev1.ConditionUnknown},
		want:     buildOutcome{Phase: v1alpha1.BuildPhaseSucceeded},
		wantRuns: ptrTo(1),
	}, {
		name:     "a run of a build whose end is recorded is a leftover: deleted, never adopted",
		build:    &v1alpha1.BuildStatus{ID: "b1", Phase: v1alpha1.BuildPhaseFailed, Failures: 1, RetryAfter: ago(0)},
		run:      &pipelineRun{id: "b1", succeeded: corev1.ConditionUnknown},
		want:     buildOutcome{Phase: v1alpha1.BuildPhaseFailed, Failures: 1, Retry: true},
		wantRuns: ptrTo(0),
	}, {
		name:     "a run of the ended build's ID that the Function does not control: not the operator's to delete",
		build:    &v1alpha1.BuildStatus{ID: "b1", Phase: v1alpha1.BuildPhaseFailed, Failures: 1, RetryAfter: ago(0)},
		run:      &pipelineRun{id: "b1", succeeded: corev1.ConditionUnknown, foreign: true},
		want:     buildOutcome{Phase: v1alpha1.BuildPhaseFailed, Failures: 1, Retry: true},
		wantRuns: ptrTo(1),
	}, {
		// The ID shows in the status: a tenant may copy it, first.
		name:      "Starting, a copy of its ID made first by a tenant: the run the Function controls is followed",
		build:     &v1alpha1.BuildStatus{ID: "b1", Phase: v1alpha1.BuildPhaseStarting, StartTime: ago(time.Second)},
		copies:    []pipelineRun{{id: "b1", name: "copy", succeeded: corev1.ConditionFalse, message: "forged", foreign: true}},
		run:       &pipelineRun{id: "b1", succeeded: corev1.ConditionUnknown},
		holdsSlot: true,
		want:      buildOutcome{Phase: v1alpha1.BuildPhaseRunning, PipelineRun: "fn-run-b1", HoldsSlot: true},
		wantSoon:  config.DefaultBuildTimeout,
		wantRuns:  ptrTo(2),
	}, {
		name:      "Running in a recorded run, a failed copy of its ID controlled by the Function too: the recorded run is followed",
		build:     &v1alpha1.BuildStatus{ID: "b1", Phase: v1alpha1.BuildPhaseRunning, PipelineRun: "fn-run-b1", StartTime: ago(time.Minute)},
		copies:    []pipelineRun{{id: "b1", name: "a-copy", succeeded: corev1.ConditionFalse, message: "forged"}},
		run:       &pipelineRun{id: "b1", succeeded: corev1.ConditionUnknown},
		holdsSlot: true,
		want:      buildOutcome{Phase: v1alpha1.BuildPhaseRunning, PipelineRun: "fn-run-b1", HoldsSlot: true},
		wantSoon:  config.DefaultBuildTimeout,
	}, {
		name:      "Running, its recorded run deleted, a copy of its ID left: failed, the copy not followed",
		build:     &v1alpha1.BuildStatus{ID: "b1", Phase: v1alpha1.BuildPhaseRunning, PipelineRun: "fn-run-b1", StartTime: ago(time.Minute)},
		copies:    []pipelineRun{{id: "b1", name: "a-copy", succeeded: corev1.ConditionUnknown}},
		holdsSlot: true,
		want:      buildOutcome{Phase: v1alpha1.BuildPhaseFailed, PipelineRun: "fn-run-b1", Failures: 1, Retry: true},
		wantMsg:   "was deleted before it finished",
	}, {
		name:      "Starting, its run now runs",
		build:     &v1alpha1.BuildStatus{ID: "b1", Phase: v1alpha1.BuildPhaseStarting, StartTime: ago(time.Second)},
		run:       &pipelineRun{id: "b1", succeeded: corev1.ConditionUnknown},
		holdsSlot: true,
		want:      buildOutcome{Phase: v1alpha1.BuildPhaseRunning, PipelineRun: "fn-run-b1", HoldsSlot: true},
		wantSoon:  config.DefaultBuildTimeout, // back at its deadline at the latest
	}, {
		name:      "Running within buildTimeout: back at the deadline",
		build:     &v1alpha1.BuildStatus{ID: "b1", Phase: v1alpha1.BuildPhaseRunning, StartTime: ago(config.DefaultBuildTimeout - time.Minute)},
		run:       &pipelineRun{id: "b1", succeeded: corev1.ConditionUnknown},
		holdsSlot: true,
		want:      buildOutcome{Phase: v1alpha1.BuildPhaseRunning, PipelineRun: "fn-run-b1", HoldsSlot: true},
		wantSoon:  time.Minute,
		wantRuns:  ptrTo(1),
	}, {
		// No Tekton controller finishes it, or a task never resolves: it must not hold
		// a slot of the budget for ever.
		name:      "Running past buildTimeout: its run deleted, failed, the slot freed",
		build:     &v1alpha1.BuildStatus{ID: "b1", Phase: v1alpha1.BuildPhaseRunning, StartTime: ago(config.DefaultBuildTimeout + time.Second)},
		run:       &pipelineRun{id: "b1", succeeded: corev1.ConditionUnknown},
		holdsSlot: true,
		want:      buildOutcome{Phase: v1alpha1.BuildPhaseFailed, PipelineRun: "fn-run-b1", Failures: 1, Retry: true},
		wantMsg:   "did not finish within 1h0m0s (ConfigMap func-operator-config, key buildTimeout): PipelineRun fn-run-b1 deleted",
		wantRuns:  ptrTo(0),
	}, {
		name:      "Running, its run succeeded: the slot is freed",
		build:     &v1alpha1.BuildStatus{ID: "b1", Phase: v1alpha1.BuildPhaseRunning, Failures: 2},
		run:       &pipelineRun{id: "b1", succeeded: corev1.ConditionTrue},
		holdsSlot: true,
		want:      buildOutcome{Phase: v1alpha1.BuildPhaseSucceeded, PipelineRun: "fn-run-b1"},
		wantMsg:   "PipelineRun fn-run-b1 succeeded",
	}, {
		name:      "Running, its run failed: the failed task and step, a retry time, the slot freed",
		build:     &v1alpha1.BuildStatus{ID: "b1", Phase: v1alpha1.BuildPhaseRunning, Failures: 1},
		run:       &pipelineRun{id: "b1", succeeded: corev1.ConditionFalse, message: "Tasks Completed: 1 (Failed: 1)", failedTaskRun: "fn-run-b1-build"},
		holdsSlot: true,
		want:      buildOutcome{Phase: v1alpha1.BuildPhaseFailed, PipelineRun: "fn-run-b1", FailedTask: "build", FailedStep: "build", Failures: 2, Retry: true},
		wantMsg:   "TaskRun fn-run-b1-build: step build exited 1",
	}, {
		name:    "failed run whose TaskRun is gone: the PipelineRun's own message",
		build:   &v1alpha1.BuildStatus{ID: "b1", Phase: v1alpha1.BuildPhaseRunning},
		run:     &pipelineRun{id: "b1", succeeded: corev1.ConditionFalse, message: "boom", missingTaskRun: "fn-run-b1-gone"},
		want:    buildOutcome{Phase: v1alpha1.BuildPhaseFailed, PipelineRun: "fn-run-b1", Failures: 1, Retry: true},
		wantMsg: "PipelineRun fn-run-b1 failed (Reason): boom",
	}, {
		name:      "failed run whose TaskRun cannot be read: recorded all the same, the slot freed",
		build:     &v1alpha1.BuildStatus{ID: "b1", Phase: v1alpha1.BuildPhaseRunning},
		run:       &pipelineRun{id: "b1", succeeded: corev1.ConditionFalse, message: "boom", failedTaskRun: "fn-run-b1-build"},
		holdsSlot: true,
		want:      buildOutcome{Phase: v1alpha1.BuildPhaseFailed, PipelineRun: "fn-run-b1", Failures: 1, Retry: true},
		wantMsg:   "boom (TaskRun fn-run-b1-build could not be read: reading TaskRuns is broken)",
		// The control: the row above reads the same TaskRun and names the failed step.
		taskRunsUnreadable: true,
	}, {
		name:      "Starting without a run, launched elsewhere moments ago: wait for it",
		build:     &v1alpha1.BuildStatus{ID: "b1", Phase: v1alpha1.BuildPhaseStarting, StartTime: ago(10 * time.Second)},
		holdsSlot: true,
		want:      buildOutcome{Phase: v1alpha1.BuildPhaseStarting, HoldsSlot: true},
		wantSoon:  rebuild.LaunchGrace,
	}, {
		name:       "Starting without a run, launched by an earlier leader: lost, retried now",
		build:      &v1alpha1.BuildStatus{ID: "b1", Phase: v1alpha1.BuildPhaseStarting, StartTime: ago(40 * time.Second)},
		holdsSlot:  true,
		leadingFor: rebuild.LeaderSettle + time.Second,
		want:       buildOutcome{Phase: v1alpha1.BuildPhaseFailed, Retry: true},
		wantMsg:    "interrupted before its PipelineRun existed",
	}, {
		name:       "launched by an earlier leader, its run not in the lagging cache but on the API server: wait for it",
		build:      &v1alpha1.BuildStatus{ID: "b1", Phase: v1alpha1.BuildPhaseStarting, StartTime: ago(40 * time.Second)},
		run:        &pipelineRun{id: "b1", succeeded: corev1.ConditionUnknown},
		cacheLags:  true,
		holdsSlot:  true,
		leadingFor: rebuild.LeaderSettle + time.Second,
		want:       buildOutcome{Phase: v1alpha1.BuildPhaseStarting, HoldsSlot: true},
		wantSoon:   rebuild.LeaderSettle,
	}, {
		name:       "launched by an earlier leader, but this one leads for less than rebuild.LeaderSettle: wait",
		build:      &v1alpha1.BuildStatus{ID: "b1", Phase: v1alpha1.BuildPhaseStarting, StartTime: ago(40 * time.Second)},
		holdsSlot:  true,
		leadingFor: 5 * time.Second,
		want:       buildOutcome{Phase: v1alpha1.BuildPhaseStarting, HoldsSlot: true},
		wantSoon:   rebuild.LeaderSettle,
	}, {
		name:       "Starting without a run, launched since this process leads: wait for it",
		build:      &v1alpha1.BuildStatus{ID: "b1", Phase: v1alpha1.BuildPhaseStarting, StartTime: ago(2 * time.Second)},
		holdsSlot:  true,
		leadingFor: rebuild.LeaderSettle + 5*time.Second,
		want:       buildOutcome{Phase: v1alpha1.BuildPhaseStarting, HoldsSlot: true},
		wantSoon:   rebuild.LeaderSettle,
	}, {
		name:      "Starting without a run past the launch grace: lost, retried now",
		build:     &v1alpha1.BuildStatus{ID: "b1", Phase: v1alpha1.BuildPhaseStarting, StartTime: ago(rebuild.LaunchGrace + time.Second)},
		holdsSlot: true,
		want:      buildOutcome{Phase: v1alpha1.BuildPhaseFailed, Retry: true},
		wantMsg:   "interrupted before its PipelineRun existed",
	}, {
		name:      "Running, its run deleted: failed",
		build:     &v1alpha1.BuildStatus{ID: "b1", Phase: v1alpha1.BuildPhaseRunning, PipelineRun: "fn-run-b1"},
		holdsSlot: true,
		want:      buildOutcome{Phase: v1alpha1.BuildPhaseFailed, PipelineRun: "fn-run-b1", Failures: 1, Retry: true},
		wantMsg:   "was deleted before it finished",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := newNamespace(t)
			r, rec := newBuildReconciler(t)
			for _, c := range tt.copies {
				c.create(t, ns)
			}
			if tt.run != nil {
				tt.run.create(t, ns)
			}
			fn := &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fn", UID: testFunctionUID}}
			fn.Status.Build = tt.build
			if tt.holdsSlot {
				r.Builds.Queue.Running(types.NamespacedName{Namespace: ns, Name: "fn"})
			}
			if tt.taskRunsUnreadable {
				r.APIReader = taskRunsUnreadable{r.APIReader}
				r.wire()
			}
			if tt.cacheLags {
				r.Client = lagging{r.Client}
				r.wire()
			}
			if tt.leadingFor > 0 {
				r.Builds.Leading = rebuild.LeadingSince(time.Now().Add(-tt.leadingFor))
			}

			res, err := r.build.Observe(context.Background(), fn)
			if err != nil {
				t.Fatalf("observeBuild: %v", err)
			}
			if diff := cmp.Diff(tt.want, buildOutcomeOf(r, fn)); diff != "" {
				t.Errorf("build (-want +got):\n%s", diff)
			}
			if tt.wantMsg != "" && (fn.Status.Build == nil || !strings.Contains(fn.Status.Build.Message, tt.wantMsg)) {
				t.Errorf("status.build = %+v, want a message with %q", fn.Status.Build, tt.wantMsg)
			}
			if tt.wantSoon > 0 && (res.RequeueAfter <= 0 || res.RequeueAfter > tt.wantSoon) {
				t.Errorf("RequeueAfter = %s, want at most %s", res.RequeueAfter, tt.wantSoon)
			}
			if tt.wantSoon == 0 && res.RequeueAfter != 0 {
				t.Errorf("RequeueAfter = %s, want none", res.RequeueAfter)
			}
			if n := len(rec.requests()); n != 0 {
				t.Errorf("%d builds launched by observing, want none", n)
			}
			if tt.wantRuns != nil {
				var runs pipelinev1.PipelineRunList
				if err := k8sClient.List(context.Background(), &runs, client.InNamespace(ns)); err != nil {
					t.Fatal(err)
				}
				left := 0
				for _, pr := range runs.Items {
					if pr.DeletionTimestamp.IsZero() {
						left++
					}
				}
				if left != *tt.wantRuns {
					t.Errorf("%d PipelineRuns left, want %d", left, *tt.wantRuns)
				}
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

func TestReconciler_reconcileRebuild(t *testing.T) {
	onFakeClient(t)
	const image = "registry.invalid/fns/hello@sha256:0123"
	meta := funclib.Metadata{Name: "hello", Runtime: "go", Registry: "registry.invalid/fns"}
	followed := rebuildFrom{commit: "0123456789abcdef", source: v1alpha1.RebuildFromFollowed}
	due := middlewareVerdict{current: "v0.1.0", available: "v0.21.3", rebuildDue: true, from: followed}
	upToDate := middlewareVerdict{current: "v0.21.3", available: "v0.21.3", from: followed}
	now := time.Now()
	tests := []struct {
		name       string
		build      *v1alpha1.BuildStatus
		middleware middlewareVerdict
		budget     int
		noTekton   bool
		private    bool
		meta       funclib.Metadata
		queued     bool // the Function waits in the queue before the step
		// deployedWith is the deployer the deployment step found ("": none said).
		deployedWith string
		noKEDA       bool // the cluster serves no HTTPScaledObjects
		// pullSecret: the Function names a registry Secret, which the ServiceAccount of
		// func.yaml (meta.ServiceAccountName) gets as an image pull Secret; createSA
		// creates that ServiceAccount.
		pullSecret, createSA bool
		// bare: the namespace has not onboarded the operator; noKEDAGrant: not for keda
		// functions; unreadable: func.yaml cannot be read at the commit (a stall).
		bare, noKEDAGrant, unreadable bool
		// unread: the middleware step did not read the image (middleware in the source):
		// the commit is the followed one only when the policy says so (unreadFrom).
		unread bool
		// request is annotation functions.dev/rebuild-requested-at, handled the status's
		// lastHandledRebuildRequest before the step; wantHandled after it, and
		// wantRefused whether a RebuildRequestRefused Event was emitted.
		request, handled, wantHandled string
		wantRefused                   bool
		want                          outcome
		wantPhase                     string
		wantLaunch                    bool
		wantSoon                      time.Duration
		wantQueued                    bool // the Function waits in the queue after the step
	}{{
		name:       "due, a slot free: recorded Starting, launched after the patch",
		middleware: due, budget: 2, meta: meta,
		want:      outcome{Condition: "False/Rebuilding/"},
		wantPhase: v1alpha1.BuildPhaseStarting, wantLaunch: true, wantSoon: rebuild.PollWhileWaiting,
	}, {
		name:       "due, no slot: queued with its position",
		middleware: due, budget: 0, meta: meta,
		want:      outcome{Condition: "False/RebuildQueued/"},
		wantPhase: v1alpha1.BuildPhaseQueued, wantQueued: true,
	}, {
		name:       "no longer due while queued: leaves the queue",
		middleware: middlewareVerdict{current: "v0.21.3", available: "v0.21.3"}, budget: 0, meta: meta,
		build:  &v1alpha1.BuildStatus{Phase: v1alpha1.BuildPhaseQueued, QueuedAt: &metav1.Time{Time: now}},
		queued: true,
		want:   outcome{Condition: "Unknown//"},
	}, {
		name:       "queued, now impossible to build: leaves the queue and the status",
		middleware: due, budget: 0, meta: meta, noTekton: true,
		build:  &v1alpha1.BuildStatus{Phase: v1alpha1.BuildPhaseQueued, QueuedAt: &metav1.Time{Time: now}},
		queued: true,
		want:   outcome{Kind: "stalling", Reason: v1alpha1.ReasonRebuildNotPossible, Condition: "False/RebuildNotPossible/"},
	}, {
		name:       "a build runs: nothing new, still outdated",
		middleware: due, budget: 2, meta: meta,
		build:     &v1alpha1.BuildStatus{ID: "b1", Phase: v1alpha1.BuildPhaseRunning, PipelineRun: "fn-run-b1"},
		want:      outcome{Condition: "False/Rebuilding/"},
		wantPhase: v1alpha1.BuildPhaseRunning,
	}, {
		name:       "failed, backoff not over: back when it is",
		middleware: due, budget: 2, meta: meta,
		build: &v1alpha1.BuildStatus{ID: "b1", Phase: v1alpha1.BuildPhaseFailed, Failures: 1,
			RetryAfter: &metav1.Time{Time: now.Add(20 * time.Second)}},
		want:      outcome{Condition: "False/BuildFailed/"},
		wantPhase: v1alpha1.BuildPhaseFailed, wantSoon: 21 * time.Second,
	}, {
		name:       "no Tekton: stalls",
		middleware: due, budget: 2, meta: meta, noTekton: true,
		want: outcome{Kind: "stalling", Reason: v1alpha1.ReasonRebuildNotPossible, Condition: "False/RebuildNotPossible/"},
	}, {
		name:       "private repository: launched with the credentials the check read",
		middleware: due, budget: 2, meta: meta, private: true,
		want:      outcome{Condition: "False/Rebuilding/"},
		wantPhase: v1alpha1.BuildPhaseStarting, wantLaunch: true, wantSoon: rebuild.PollWhileWaiting,
	}, {
		name:       "nowhere to push: stalls",
		middleware: due, budget: 2, meta: funclib.Metadata{Name: "hello", Runtime: "go"},
		want: outcome{Kind: "stalling", Reason: v1alpha1.ReasonRebuildNotPossible, Condition: "False/RebuildNotPossible/"},
	}, {
		name:       "raw deployed, func.yaml names raw: launched",
		middleware: due, budget: 2, deployedWith: "raw",
		meta:      funclib.Metadata{Name: "hello", Runtime: "go", Registry: "registry.invalid/fns", Deployer: "raw"},
		want:      outcome{Condition: "False/Rebuilding/"},
		wantPhase: v1alpha1.BuildPhaseStarting, wantLaunch: true, wantSoon: rebuild.PollWhileWaiting,
	}, {
		name:       "raw deployed, func.yaml asks for keda: a safe switch, launched",
		middleware: due, budget: 2, deployedWith: "raw",
		meta:      funclib.Metadata{Name: "hello", Runtime: "go", Registry: "registry.invalid/fns", Deployer: "keda"},
		want:      outcome{Condition: "False/Rebuilding/"},
		wantPhase: v1alpha1.BuildPhaseStarting, wantLaunch: true, wantSoon: rebuild.PollWhileWaiting,
	}, {
		name:       "raw deployed, func.yaml names no deployer (knative): not rebuilt, it would strand the Deployment",
		middleware: due, budget: 2, meta: meta, deployedWith: "raw",
		want: outcome{Kind: "stalling", Reason: v1alpha1.ReasonDeployerMismatch, Condition: "False/DeployerMismatch/"},
	}, {
		name:       "knative deployed, func.yaml asks for raw: not rebuilt",
		middleware: due, budget: 2, deployedWith: "knative",
		meta: funclib.Metadata{Name: "hello", Runtime: "go", Registry: "registry.invalid/fns", Deployer: "raw"},
		want: outcome{Kind: "stalling", Reason: v1alpha1.ReasonDeployerMismatch, Condition: "False/DeployerMismatch/"},
	}, {
		name:       "raw deployed and asked for, but func.yaml records a knative deploy: func's own deploy would refuse it",
		middleware: due, budget: 2, deployedWith: "raw",
		meta: funclib.Metadata{Name: "hello", Runtime: "go", Registry: "registry.invalid/fns", Deployer: "raw", DeployedWith: "knative", DeployedNamespace: "fns"},
		want: outcome{Kind: "stalling", Reason: v1alpha1.ReasonDeployerMismatch, Condition: "False/DeployerMismatch/"},
	}, {
		name:       "keda, the cluster serves no HTTPScaledObjects: not rebuilt",
		middleware: due, budget: 2, deployedWith: "keda", noKEDA: true,
		meta: funclib.Metadata{Name: "hello", Runtime: "go", Registry: "registry.invalid/fns", Deployer: "keda"},
		want: outcome{Kind: "stalling", Reason: v1alpha1.ReasonRebuildNotPossible, Condition: "False/RebuildNotPossible/"},
	}, {
		name:       "keda, the cluster serves HTTPScaledObjects: launched (the positive control)",
		middleware: due, budget: 2, deployedWith: "keda",
		meta:      funclib.Metadata{Name: "hello", Runtime: "go", Registry: "registry.invalid/fns", Deployer: "keda"},
		want:      outcome{Condition: "False/Rebuilding/"},
		wantPhase: v1alpha1.BuildPhaseStarting, wantLaunch: true, wantSoon: rebuild.PollWhileWaiting,
	}, {
		name:       "requested, middleware up to date: launched (cause Request), the request handled",
		middleware: upToDate, budget: 2, meta: meta, request: "t1", wantHandled: "t1",
		want:      outcome{Condition: "False/Rebuilding/"},
		wantPhase: v1alpha1.BuildPhaseStarting, wantLaunch: true, wantSoon: rebuild.PollWhileWaiting,
	}, {
		name:       "requested again with the value handled: nothing",
		middleware: upToDate, budget: 2, meta: meta, request: "t1", handled: "t1", wantHandled: "t1",
		want: outcome{Condition: "Unknown//"},
	}, {
		name:       "requested within a failed build's backoff: launched at once",
		middleware: upToDate, budget: 2, meta: meta, request: "t2", handled: "t1", wantHandled: "t2",
		build:     &v1alpha1.BuildStatus{ID: "b0", Phase: v1alpha1.BuildPhaseFailed, Failures: 1, RetryAfter: &metav1.Time{Time: now.Add(time.Hour)}},
		want:      outcome{Condition: "False/Rebuilding/"},
		wantPhase: v1alpha1.BuildPhaseStarting, wantLaunch: true, wantSoon: rebuild.PollWhileWaiting,
	}, {
		name:       "requested, no slot: queued, the request kept until the build starts",
		middleware: upToDate, budget: 0, meta: meta, request: "t1",
		want:      outcome{Condition: "False/RebuildQueued/"},
		wantPhase: v1alpha1.BuildPhaseQueued, wantQueued: true,
	}, {
		name:       "requested, the namespace has not onboarded the operator: refused by an Event, handled, the conditions untouched",
		middleware: upToDate, budget: 2, meta: meta, bare: true, request: "t1", wantHandled: "t1", wantRefused: true,
		want: outcome{Condition: "Unknown//"},
	}, {
		name:       "requested, the middleware lives in the source (deployed commit unknown): refused",
		middleware: upToDate, budget: 2, meta: meta, unread: true, request: "t1", wantHandled: "t1", wantRefused: true,
		want: outcome{Condition: "Unknown//"},
	}, {
		name:       "a requested build failed, its backoff over: retried (cause Request), nothing new handled",
		middleware: upToDate, budget: 2, meta: meta, request: "t1", handled: "t1", wantHandled: "t1",
		build:     &v1alpha1.BuildStatus{ID: "b0", Phase: v1alpha1.BuildPhaseFailed, Failures: 1, Cause: v1alpha1.BuildCauseRequest, RetryAfter: &metav1.Time{Time: now.Add(-time.Second)}},
		want:      outcome{Condition: "False/Rebuilding/"},
		wantPhase: v1alpha1.BuildPhaseStarting, wantLaunch: true, wantSoon: rebuild.PollWhileWaiting,
	}, {
		name:       "a new request within a failed requested build's backoff: waits it out, kept pending",
		middleware: upToDate, budget: 2, meta: meta, request: "t2", handled: "t1", wantHandled: "t1",
		build:     &v1alpha1.BuildStatus{ID: "b0", Phase: v1alpha1.BuildPhaseFailed, Failures: 1, Cause: v1alpha1.BuildCauseRequest, RetryAfter: &metav1.Time{Time: now.Add(time.Hour)}},
		want:      outcome{Condition: "False/BuildFailed/"},
		wantPhase: v1alpha1.BuildPhaseFailed,
	}, {
		name:       "the namespace has not onboarded the operator: stalls and leaves the queue and the status",
		middleware: due, budget: 2, queued: true, bare: true, meta: meta,
		build: &v1alpha1.BuildStatus{Phase: v1alpha1.BuildPhaseQueued, QueuedAt: &metav1.Time{Time: now}},
		want:  outcome{Kind: "stalling", Reason: v1alpha1.ReasonNamespaceNotOnboarded, Condition: "False/NamespaceNotOnboarded/"},
	}, {
		name:       "keda, the namespace has not onboarded keda functions: stalls",
		middleware: due, budget: 2, deployedWith: "keda", noKEDAGrant: true,
		meta: funclib.Metadata{Name: "hello", Runtime: "go", Registry: "registry.invalid/fns", Deployer: "keda"},
		want: outcome{Kind: "stalling", Reason: v1alpha1.ReasonNamespaceNotOnboarded, Condition: "False/NamespaceNotOnboarded/"},
	}, {
		name:       "func.yaml cannot be read for the build (a stall): leaves the queue and the status",
		middleware: due, budget: 2, queued: true, unreadable: true, meta: meta,
		build: &v1alpha1.BuildStatus{Phase: v1alpha1.BuildPhaseQueued, QueuedAt: &metav1.Time{Time: now}},
		want:  outcome{Kind: "stalling", Reason: v1alpha1.ReasonRebuildNotPossible, Condition: "False/RebuildNotPossible/"},
	}, {
		name:       "the function's ServiceAccount does not exist: stalls, frees its slot and leaves the queue and the status",
		middleware: due, budget: 2, queued: true, pullSecret: true,
		build: &v1alpha1.BuildStatus{Phase: v1alpha1.BuildPhaseQueued, QueuedAt: &metav1.Time{Time: now}},
		meta:  funclib.Metadata{Name: "hello", Runtime: "go", Registry: "registry.invalid/fns", ServiceAccountName: "fn-sa"},
		want:  outcome{Kind: "stalling", Reason: v1alpha1.ReasonRebuildNotPossible, Condition: "False/RebuildNotPossible/"},
	}, {
		name:       "the function's ServiceAccount exists: it gets the pull Secret, launched (the positive control)",
		middleware: due, budget: 2, queued: true, pullSecret: true, createSA: true,
		meta:      funclib.Metadata{Name: "hello", Runtime: "go", Registry: "registry.invalid/fns", ServiceAccountName: "fn-sa"},
		want:      outcome{Condition: "False/Rebuilding/"},
		wantPhase: v1alpha1.BuildPhaseStarting, wantLaunch: true, wantSoon: rebuild.PollWhileWaiting,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := newNamespace(t)
			if tt.bare {
				ns = newBareNamespace(t)
			}
			r, rec := newBuildReconciler(t)
			if tt.unreadable {
				r.Fetcher = unreadable{r.Fetcher}
				r.wire()
			}
			cfg := r.Config.Load()
			cfg.MaxConcurrentBuilds = tt.budget
			r.Config.Set(cfg)
			r.Builds.Tekton = !tt.noTekton
			if tt.noKEDA {
				r.Workloads = &workload.Workloads{Reader: k8sClient}
				r.wire()
			}
			if funclib.DeployerOf(tt.meta) == funclib.DeployerKeda && !tt.noKEDAGrant {
				// A keda deploy needs config/namespace/onboard-keda.yaml's grant too.
				onboardKEDA(t, ns)
			}
			key := types.NamespacedName{Namespace: ns, Name: "fn"}
			if tt.queued {
				r.Builds.Queue.Admit(key, now)
			}
			fn := &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fn", UID: "uid-1"}}
			fn.Spec.Repository.URL = "http://127.0.0.1:1/fn.git"
			if tt.request != "" {
				fn.Annotations = map[string]string{v1alpha1.AnnotationRebuildRequestedAt: tt.request}
			}
			fn.Status.LastHandledRebuildRequest = tt.handled
			if tt.private {
				fn.Spec.Repository.AuthSecretRef = secretRef("git")
			}
			if tt.pullSecret {
				fn.Spec.Registry.AuthSecretRef = secretRef("registry")
			}
			if tt.createSA {
				mustCreate(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tt.meta.ServiceAccountName}})
			}
			fn.Status.InitializeConditions()
			fn.Status.Build = tt.build
			fn.Status.Middleware = &v1alpha1.MiddlewareStatus{}
			fn.Status.Deployment = &v1alpha1.DeploymentStatus{Image: image}
			if tt.unread {
				tt.middleware.from = unreadFrom(fn, config.Defaults(), "0123456789abcdef")
			}
			md := &tt.meta
			if tt.unreadable {
				md = nil // read again for the build, as after a restart
			}
			obs := &observation{
				source:     sourceArtifact{head: git.Head{Branch: "main", Commit: "0123456789abcdef"}, name: "hello", runtime: "go", metadata: md},
				deployment: deployment{image: image, found: testTarget(tt.deployedWith)},
				middleware: tt.middleware,
			}

			if tt.private {
				auth, err := git.AuthFromSecret(fn.Spec.Repository.URL, &corev1.Secret{Data: map[string][]byte{"token": []byte("tok")}})
				if err != nil {
					t.Fatal(err)
				}
				obs.source.auth = auth
			}

			res, err := r.build.Rebuild(context.Background(), fn, obs.forBuild())

			if diff := cmp.Diff(tt.want, outcomeOf(err, fn, v1alpha1.FunctionConditionMiddlewareUpToDate)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s\nerror: %v", diff, err)
			}
			phase := ""
			if fn.Status.Build != nil {
				phase = fn.Status.Build.Phase
			}
			if diff := cmp.Diff(tt.wantPhase, phase); diff != "" {
				t.Errorf("status.build.phase (-want +got):\n%s", diff)
			}
			if tt.wantSoon > 0 && (res.RequeueAfter <= 0 || res.RequeueAfter > tt.wantSoon) {
				t.Errorf("RequeueAfter = %s, want at most %s", res.RequeueAfter, tt.wantSoon)
			}
			if diff := cmp.Diff(tt.wantQueued, r.Builds.Queue.IsWaiting(key)); diff != "" {
				t.Errorf("waits in the queue (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantLaunch, r.Builds.Queue.IsRunning(key)); diff != "" {
				t.Errorf("holds a slot (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantHandled, fn.Status.LastHandledRebuildRequest); diff != "" {
				t.Errorf("status.lastHandledRebuildRequest (-want +got):\n%s", diff)
			}
			refused := false
			for events := r.Recorder.(*record.FakeRecorder).Events; len(events) > 0; {
				if e := <-events; strings.Contains(e, "RebuildRequestRefused") {
					refused = true
				}
			}
			if refused != tt.wantRefused {
				t.Errorf("RebuildRequestRefused Event emitted: %t, want %t", refused, tt.wantRefused)
			}
			// Nothing is launched before the status that records it is written.
			r.Builds.Launcher.Wait()
			if n := len(rec.requests()); n != 0 {
				t.Fatalf("%d builds launched before AfterPatch, want none", n)
			}
			if (res.AfterPatch != nil) != tt.wantLaunch {
				t.Fatalf("AfterPatch set = %t, want %t", res.AfterPatch != nil, tt.wantLaunch)
			}
			if !tt.wantLaunch {
				return
			}
			b := fn.Status.Build
			wantCause := v1alpha1.BuildCauseMiddleware
			if (tt.request != "" || tt.build != nil && tt.build.Cause == v1alpha1.BuildCauseRequest) && !tt.middleware.rebuildDue {
				wantCause = v1alpha1.BuildCauseRequest
			}
			if b.Commit != "0123456789abcdef" || b.FromImage != image || b.FromMiddleware != tt.middleware.current ||
				b.ToMiddleware != tt.middleware.available || b.Cause != wantCause {
				t.Errorf("status.build = %+v", b)
			}
			if tt.createSA {
				sa := &corev1.ServiceAccount{}
				if err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: tt.meta.ServiceAccountName}, sa); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff([]corev1.LocalObjectReference{{Name: "registry"}}, sa.ImagePullSecrets); diff != "" {
					t.Errorf("the ServiceAccount's image pull Secrets (-want +got):\n%s", diff)
				}
			}
			res.AfterPatch(true)
			r.Builds.Launcher.Wait()
			reqs := rec.requests()
			if len(reqs) != 1 || reqs[0].Revision != "0123456789abcdef" || reqs[0].Labels[resources.LabelBuildID] != b.ID {
				t.Errorf("launched %+v, want one build of the observed commit with id %s", reqs, b.ID)
			}
			var wantCreds *funclib.GitCredentials
			if tt.private {
				wantCreds = &funclib.GitCredentials{Username: "git", Password: "tok"}
			}
			if diff := cmp.Diff(wantCreds, reqs[0].GitCredentials); diff != "" {
				t.Errorf("the clone step's credentials (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(resources.Owner(fn), reqs[0].Owner); diff != "" || reqs[0].ID != b.ID {
				t.Errorf("build owner (-want +got):\n%s\nid %q, want %q", diff, reqs[0].ID, b.ID)
			}
			if !r.Builds.Queue.IsRunning(key) {
				t.Error("the launched build holds no slot")
			}
		})
	}

	t.Run("queued in the status before the queue is seeded, no longer due: the seed does not bring it back", func(t *testing.T) {
		r, _ := newBuildReconciler(t)
		r.Builds.Queue = rebuild.NewQueue(func() int { return 1 }, nil) // not seeded yet
		ns := newNamespace(t)
		key := types.NamespacedName{Namespace: ns, Name: "fn"}
		other := types.NamespacedName{Namespace: ns, Name: "other"}
		fn := &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fn"}}
		fn.Status.InitializeConditions()
		fn.Status.Build = &v1alpha1.BuildStatus{Phase: v1alpha1.BuildPhaseQueued, QueuedAt: &metav1.Time{Time: now}}
		if _, err := r.build.Rebuild(context.Background(), fn, build.Observed{}); err != nil {
			t.Fatal(err)
		}
		if fn.Status.Build != nil {
			t.Errorf("status.build = %+v, want none", fn.Status.Build)
		}
		// What the seeder listed before: both queued.
		r.Builds.Queue.Seed(nil, map[types.NamespacedName]time.Time{key: now, other: now.Add(time.Second)})
		if r.Builds.Queue.IsWaiting(key) {
			t.Error("the seed brought back a Function that left the queue")
		}
		if !r.Builds.Queue.IsWaiting(other) {
			t.Error("positive control: the seed did not queue the other Function")
		}
	})

	t.Run("the status write failed: nothing launched, the slot freed", func(t *testing.T) {
		r, rec := newBuildReconciler(t)
		ns := newNamespace(t)
		fn := &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fn", UID: "uid-1"}}
		fn.Spec.Repository.URL = "http://127.0.0.1:1/fn.git"
		fn.Status.InitializeConditions()
		fn.Status.Middleware = &v1alpha1.MiddlewareStatus{}
		fn.Status.Deployment = &v1alpha1.DeploymentStatus{Image: image}
		md := meta
		obs := &observation{source: sourceArtifact{head: git.Head{Branch: "main", Commit: "c1"}, metadata: &md}, middleware: due}
		res, err := r.build.Rebuild(context.Background(), fn, obs.forBuild())
		if err != nil || res.AfterPatch == nil {
			t.Fatalf("reconcileRebuild = %+v, %v; want a launch after the patch", res, err)
		}
		key := types.NamespacedName{Namespace: ns, Name: "fn"}
		if !r.Builds.Queue.IsRunning(key) {
			t.Fatal("positive control: the admitted build holds a slot before the patch")
		}
		res.AfterPatch(false)
		r.Builds.Launcher.Wait()
		if n := len(rec.requests()); n != 0 || r.Builds.Queue.IsRunning(key) {
			t.Errorf("after a failed status write: %d launched, holds a slot %t; want none and false", n, r.Builds.Queue.IsRunning(key))
		}
	})
}

// TestReconciler_recordBuildEvents_adopted: BuildAdopted is emitted for a build whose
// run this process sees first but another process launched (it recorded the build
// Starting before a restart), not for a build this process launched.
func TestReconciler_recordBuildEvents_adopted(t *testing.T) {
	onFakeClient(t)
	for _, tt := range []struct {
		name         string
		launchedHere bool
		want         []string
	}{
		{name: "launched by an earlier process: adopted", want: []string{"Normal BuildAdopted following build b1 already running in PipelineRun fn-run-b1"}},
		{name: "launched by this process: no event", launchedHere: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := newBuildReconciler(t)
			events := record.NewFakeRecorder(10)
			r.Recorder = events
			r.wire()
			fn := &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "fn"}}
			if tt.launchedHere {
				r.Builds.Launcher.Launch(types.NamespacedName{Namespace: "ns", Name: "fn"}, "b1", funclib.BuildRequest{})
				r.Builds.Launcher.Wait()
			}
			orig := fn.DeepCopy()
			orig.Status.Build = &v1alpha1.BuildStatus{ID: "b1", Phase: v1alpha1.BuildPhaseStarting}
			fn.Status.Build = &v1alpha1.BuildStatus{ID: "b1", Phase: v1alpha1.BuildPhaseRunning, PipelineRun: "fn-run-b1"}
			r.build.RecordEvents(r.Recorder, orig, fn)
			close(events.Events)
			var got []string
			for e := range events.Events {
				got = append(got, e)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReconciler_stopUnboundBuild_ServiceReplaced: a build started for one Service
// is stopped, its PipelineRun deleted, when the deployment step finds the Service
// replaced by another.
func TestReconciler_stopUnboundBuild_ServiceReplaced(t *testing.T) {
	onFakeClient(t)
	f := newBindingFixture(t)
	for _, tt := range []struct {
		name     string
		replaced bool
	}{
		{name: "the same Service: the build goes on"},
		{name: "the Service was replaced: the build is stopped", replaced: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ns := newNamespace(t)
			svc := f.service(t, ns, true)
			startedFor := svc.UID
			if tt.replaced {
				startedFor = "uid-of-the-replaced-service"
			}
			pipelineRun{id: "b1", succeeded: corev1.ConditionUnknown}.create(t, ns)
			r, _ := newBuildReconciler(t)
			key := types.NamespacedName{Namespace: ns, Name: "fn"}
			r.Builds.Queue.Running(key)
			fn := &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fn", UID: "fn-uid"}}
			fn.Status.InitializeConditions()
			fn.Status.Build = &v1alpha1.BuildStatus{ID: "b1", Phase: v1alpha1.BuildPhaseRunning, PipelineRun: "fn-run-b1", ServiceUID: startedFor}

			obs := &observation{source: sourceArtifact{name: "hello"}}
			_, err := r.reconcileDeployment(context.Background(), fn, obs)
			if err != nil {
				t.Fatalf("reconcileDeployment: %v", err)
			}
			if err := r.build.StopUnbound(context.Background(), fn, obs.forBuild().Deployed); err != nil {
				t.Fatalf("stopUnboundBuild: %v", err)
			}
			var runs pipelinev1.PipelineRunList
			if err := k8sClient.List(context.Background(), &runs, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			want := buildOutcome{Phase: v1alpha1.BuildPhaseRunning, PipelineRun: "fn-run-b1", HoldsSlot: true, ServiceUID: startedFor}
			wantRuns := 1
			if tt.replaced {
				want = buildOutcome{Phase: v1alpha1.BuildPhaseFailed, PipelineRun: "fn-run-b1", Failures: 1, Retry: true, ServiceUID: startedFor}
				wantRuns = 0
			}
			if diff := cmp.Diff(want, buildOutcomeOf(r, fn)); diff != "" {
				t.Errorf("build (-want +got):\n%s\nmessage: %s", diff, fn.Status.Build.Message)
			}
			if len(runs.Items) != wantRuns {
				t.Errorf("%d PipelineRuns left, want %d", len(runs.Items), wantRuns)
			}
		})
	}
}

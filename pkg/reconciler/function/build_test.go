package function

import (
	"context"
	"strings"
	"testing"
	"time"

	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"knative.dev/pkg/apis"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/rebuild"
	"github.com/fnops/func-operator/pkg/reconciler/function/resources"
	"github.com/fnops/func-operator/test/gitserver"
	"github.com/fnops/func-operator/test/registrytest"
)

func TestReconcile_Rebuild(t *testing.T) {
	apiServer(t)
	reg := registrytest.Start(t)
	outdated := reg.Push(t, "fns/hello", "v0.1.0")
	root := gitserver.NewRepoRoot(t)
	srv := gitserver.StartHTTP(t, root)
	withRegistry := funcYAML("hello", "go") + "registry: " + reg.Host + "/fns\n"
	commit := gitserver.CreateRepo(t, root, "fn").Commit(t, "main", map[string]string{
		"fns/hello/func.yaml": withRegistry,
	}, "hello")
	gitserver.CreateRepo(t, root, "noregistry").Commit(t, "main", map[string]string{"func.yaml": funcYAML("hello", "go")}, "no registry")
	gitserver.CreateRepo(t, root, "buildpacks").Commit(t, "main", map[string]string{
		"func.yaml": "specVersion: 0.36.0\nname: hello\nruntime: go\nregistry: " + reg.Host + "/fns\nbuild:\n  builder: pack\n  buildpacks: [x]\n",
	}, "host")
	srv.RequireToken("private", testToken)
	privateCommit := gitserver.CreateRepo(t, root, "private").Commit(t, "main", map[string]string{"func.yaml": withRegistry}, "private")

	off := false
	now := time.Now()
	tests := []struct {
		name       string
		repo       v1alpha1.Repository
		autoUpdate *bool
		noTekton   bool
		budget     int
		build      *v1alpha1.BuildStatus // status.build before the reconcile
		wantReason string
		wantMsg    string // substring of the MiddlewareUpToDate message
		wantPhase  string // of status.build; "" for none
		wantLaunch bool
		wantStall  bool
		wantSoon   time.Duration             // a RequeueAfter at most this, when not zero
		namespace  func(t *testing.T) string // newNamespace when nil
	}{{
		name:       "outdated, a slot free: the build is recorded, then launched",
		repo:       v1alpha1.Repository{URL: srv.URL("fn"), Path: "fns/hello"},
		budget:     2,
		wantReason: v1alpha1.ReasonRebuilding, wantMsg: "starting: rebuilding commit " + commit[:12],
		wantPhase: v1alpha1.BuildPhaseStarting, wantLaunch: true, wantSoon: rebuild.PollWhileWaiting,
	}, {
		name:       "auto-update off: no build",
		repo:       v1alpha1.Repository{URL: srv.URL("fn"), Path: "fns/hello"},
		autoUpdate: &off, budget: 2,
		wantReason: v1alpha1.ReasonAutoUpdateDisabled,
	}, {
		name:       "no budget: queued, with the position",
		repo:       v1alpha1.Repository{URL: srv.URL("fn"), Path: "fns/hello"},
		budget:     0,
		wantReason: v1alpha1.ReasonRebuildQueued, wantMsg: "position 1 of 1; at most 0 rebuilds run at once",
		wantPhase: v1alpha1.BuildPhaseQueued,
	}, {
		name:     "no Tekton on the cluster",
		repo:     v1alpha1.Repository{URL: srv.URL("fn"), Path: "fns/hello"},
		noTekton: true, budget: 2,
		wantReason: v1alpha1.ReasonRebuildNotPossible, wantMsg: "no Tekton Pipelines API", wantStall: true,
	}, {
		name:       "private repository: launched with the credentials the check read it with",
		repo:       v1alpha1.Repository{URL: srv.URL("private"), AuthSecretRef: secretRef("git")},
		budget:     2,
		wantReason: v1alpha1.ReasonRebuilding, wantMsg: "starting: rebuilding commit",
		wantPhase: v1alpha1.BuildPhaseStarting, wantLaunch: true, wantSoon: rebuild.PollWhileWaiting,
	}, {
		name:       "func.yaml without registry: nowhere to push",
		repo:       v1alpha1.Repository{URL: srv.URL("noregistry")},
		budget:     2,
		wantReason: v1alpha1.ReasonRebuildNotPossible, wantMsg: "neither image nor registry", wantStall: true,
	}, {
		name:       "buildpacks func's pipeline does not support",
		repo:       v1alpha1.Repository{URL: srv.URL("buildpacks")},
		budget:     2,
		wantReason: v1alpha1.ReasonRebuildNotPossible, wantMsg: "cannot build the function", wantStall: true,
	}, {
		name:       "namespace not onboarded: no build, and what is missing named",
		repo:       v1alpha1.Repository{URL: srv.URL("fn"), Path: "fns/hello"},
		budget:     2,
		namespace:  newBareNamespace,
		wantReason: v1alpha1.ReasonNamespaceNotOnboarded, wantStall: true,
		wantMsg: "has not onboarded func-operator: the build ServiceAccount func-operator-builder does not exist; " +
			"a namespace admin grants it with `kubectl apply -n ",
	}, {
		name:   "the build ServiceAccount without its RoleBinding: no build",
		repo:   v1alpha1.Repository{URL: srv.URL("fn"), Path: "fns/hello"},
		budget: 2,
		namespace: func(t *testing.T) string {
			ns := newBareNamespace(t)
			mustCreate(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "func-operator-builder"}})
			return ns
		},
		wantReason: v1alpha1.ReasonNamespaceNotOnboarded, wantStall: true,
		wantMsg: "the build ServiceAccount func-operator-builder holds none of ClusterRole func-operator-builder here (RoleBinding func-operator-builder)",
	}, {
		name:   "failed, backoff not over: no build, back when it is",
		repo:   v1alpha1.Repository{URL: srv.URL("fn"), Path: "fns/hello"},
		budget: 2,
		build: &v1alpha1.BuildStatus{ID: "b1", Phase: v1alpha1.BuildPhaseFailed, Failures: 2, FailedTask: "build", Message: "exit 1",
			RetryAfter: &metav1.Time{Time: now.Add(30 * time.Second)}},
		wantReason: v1alpha1.ReasonBuildFailed, wantMsg: "build b1 failed in task build (2 in a row): exit 1; the running revision keeps serving; retry 3 at",
		wantPhase: v1alpha1.BuildPhaseFailed, wantSoon: 31 * time.Second,
	}, {
		name:   "failed, backoff over: built again, the failures kept",
		repo:   v1alpha1.Repository{URL: srv.URL("fn"), Path: "fns/hello"},
		budget: 2,
		build: &v1alpha1.BuildStatus{ID: "b1", Phase: v1alpha1.BuildPhaseFailed, Failures: 2,
			RetryAfter: &metav1.Time{Time: now.Add(-time.Second)}},
		wantReason: v1alpha1.ReasonRebuilding, wantPhase: v1alpha1.BuildPhaseStarting, wantLaunch: true, wantSoon: rebuild.PollWhileWaiting,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			newNS := newNamespace
			if tt.namespace != nil {
				newNS = tt.namespace
			}
			ns := newNS(t)
			mustCreate(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "git"}, Data: map[string][]byte{"token": []byte(testToken)}})
			knativeService{image: outdated, ready: &apis.Condition{Type: apis.ConditionReady, Status: corev1.ConditionTrue}}.create(t, ns)
			fn := newFunction(ns, "hello", tt.repo)
			fn.Spec.AutoUpdateMiddleware = tt.autoUpdate
			mustCreate(t, fn)
			if tt.build != nil {
				fn.Status.Build = tt.build
				if err := k8sClient.Status().Update(context.Background(), fn); err != nil {
					t.Fatal(err)
				}
			}

			r, _ := newTestReconciler(t, 100)
			cfg := config.Defaults()
			cfg.MaxConcurrentBuilds = tt.budget
			cfg.BuilderImages = map[string]string{"pack/go": "builder:pinned"}
			cfg.BashImage, cfg.BuildahImage = "bash@sha256:"+strings.Repeat("1", 64), "buildah@sha256:"+strings.Repeat("2", 64)
			r.Config.Set(cfg)
			rec := &recordingRun{}
			r.Builds = &rebuild.Builds{
				Queue:    rebuild.NewQueue(func() int { return r.Config.Load().MaxConcurrentBuilds }, nil),
				Launcher: rebuild.NewLauncher(rec.run, nil, logr.Discard()),
				Tekton:   !tt.noTekton,
				WorkDir:  t.TempDir(),
			}
			r.Builds.Queue.Seed(nil, nil)
			r.wire()

			res, err := reconcileOnce(t, r, ns, "hello")
			if err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			r.Builds.Launcher.Wait()
			got := getFunction(t, ns, "hello")
			c := got.Status.GetCondition(v1alpha1.FunctionConditionMiddlewareUpToDate)
			if c.Reason != tt.wantReason || !strings.Contains(c.Message, tt.wantMsg) {
				t.Errorf("MiddlewareUpToDate = %s %s %q, want reason %s and a message with %q", c.Status, c.Reason, c.Message, tt.wantReason, tt.wantMsg)
			}
			phase := ""
			if got.Status.Build != nil {
				phase = got.Status.Build.Phase
			}
			if phase != tt.wantPhase {
				t.Errorf("status.build = %+v, want phase %q", got.Status.Build, tt.wantPhase)
			}
			if tt.wantSoon > 0 && (res.RequeueAfter <= 0 || res.RequeueAfter > tt.wantSoon) {
				t.Errorf("RequeueAfter = %s, want at most %s", res.RequeueAfter, tt.wantSoon)
			}
			reqs := rec.requests()
			if !tt.wantLaunch {
				if len(reqs) != 0 {
					t.Errorf("%d builds launched, want none", len(reqs))
				}
				return
			}
			if len(reqs) != 1 {
				t.Fatalf("%d builds launched, want 1", len(reqs))
			}
			b := got.Status.Build
			wantCommit := commit
			if tt.repo.AuthSecretRef != nil {
				wantCommit = privateCommit
			}
			want := funclib.BuildRequest{
				Namespace: ns,
				GitURL:    tt.repo.URL, Revision: wantCommit, ContextDir: tt.repo.Path,
				ID: b.ID, Owner: resources.Owner(got),
				Labels:       map[string]string{resources.LabelFunction: "hello", resources.LabelBuildID: b.ID, resources.LabelManagedBy: resources.ManagedBy},
				BuilderImage: "builder:pinned",
				StepImages:   funclib.StepImages{Bash: "bash@sha256:" + strings.Repeat("1", 64), Buildah: "buildah@sha256:" + strings.Repeat("2", 64)},
				WorkDir:      r.Builds.WorkDir,
			}
			if tt.repo.AuthSecretRef != nil {
				want.GitCredentials = &funclib.GitCredentials{Username: "git", Password: testToken}
			}
			gotReq := reqs[0]
			gotReq.Function, gotReq.Credentials = funclib.Metadata{}, nil
			// The build's objects name the Service it was started for: the one the Function is bound to.
			if got.Status.Service == nil || got.Status.Service.UID == "" || b.ServiceUID != got.Status.Service.UID {
				t.Errorf("status.build.serviceUID = %q, status.service = %+v; want the bound Service's UID", b.ServiceUID, got.Status.Service)
			}
			want.Labels[resources.LabelServiceUID] = string(b.ServiceUID)
			if diff := cmp.Diff(want, gotReq); diff != "" {
				t.Errorf("build request (-want +got):\n%s", diff)
			}
			if reqs[0].Function.Registry != reg.Host+"/fns" || reqs[0].Function.Name != "hello" {
				t.Errorf("build request function = %+v", reqs[0].Function)
			}
			if b.Commit != wantCommit || b.FromImage != outdated || b.FromMiddleware != "v0.1.0" || b.StartTime == nil || b.Failures != failuresBefore(tt.build) {
				t.Errorf("status.build = %+v", b)
			}
			if !r.Builds.Queue.IsRunning(types.NamespacedName{Namespace: ns, Name: "hello"}) {
				t.Error("the launched build holds no slot of the budget")
			}

			// The next reconcile, before any PipelineRun shows up, starts nothing more.
			if _, err := reconcileOnce(t, r, ns, "hello"); err != nil {
				t.Fatal(err)
			}
			r.Builds.Launcher.Wait()
			if n := len(rec.requests()); n != 1 {
				t.Errorf("%d builds after a second reconcile, want 1", n)
			}
		})
	}
}

func failuresBefore(b *v1alpha1.BuildStatus) int32 {
	if b == nil {
		return 0
	}
	return b.Failures
}

// TestReconcile_QueuedGivesUpItsPlace: a queued Function whose earlier steps start
// failing (its path gone from the repository, its Service deleted) leaves the queue
// and its Queued build, so that it cannot hold the head of the queue while it cannot
// build; once it can again, it joins the queue anew.
func TestReconcile_QueuedGivesUpItsPlace(t *testing.T) {
	apiServer(t)
	reg := registrytest.Start(t)
	outdated := reg.Push(t, "fns/hello", "v0.1.0")
	root := gitserver.NewRepoRoot(t)
	srv := gitserver.StartHTTP(t, root)
	gitserver.CreateRepo(t, root, "fn").Commit(t, "main", map[string]string{
		"fns/hello/func.yaml": funcYAML("hello", "go") + "registry: " + reg.Host + "/fns\n",
	}, "hello")
	for _, tt := range []struct {
		name    string
		breakIt func(t *testing.T, ns string)
	}{{
		name: "its path gone from the spec's repository",
		breakIt: func(t *testing.T, ns string) {
			fn := getFunction(t, ns, "hello")
			fn.Spec.Repository.Path = "fns/gone"
			if err := k8sClient.Update(context.Background(), fn); err != nil {
				t.Fatal(err)
			}
		},
	}, {
		name: "its Service deleted",
		breakIt: func(t *testing.T, ns string) {
			mustDelete(t, &servingv1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hello"}})
		},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			ns := newNamespace(t)
			knativeService{image: outdated, ready: &apis.Condition{Type: apis.ConditionReady, Status: corev1.ConditionTrue}}.create(t, ns)
			mustCreate(t, newFunction(ns, "hello", v1alpha1.Repository{URL: srv.URL("fn"), Path: "fns/hello"}))
			r, _ := newBuildReconciler(t)
			cfg := r.Config.Load()
			cfg.MaxConcurrentBuilds = 0
			r.Config.Set(cfg)
			key := types.NamespacedName{Namespace: ns, Name: "hello"}
			if _, err := reconcileOnce(t, r, ns, "hello"); err != nil {
				t.Fatal(err)
			}
			// The positive control: queued, holding a place.
			if b := getFunction(t, ns, "hello").Status.Build; b == nil || b.Phase != v1alpha1.BuildPhaseQueued || !r.Builds.Queue.IsWaiting(key) {
				t.Fatalf("before: build %+v, waiting %t; want Queued and waiting", b, r.Builds.Queue.IsWaiting(key))
			}
			tt.breakIt(t, ns)
			_, _ = reconcileOnce(t, r, ns, "hello")
			if b := getFunction(t, ns, "hello").Status.Build; b != nil || r.Builds.Queue.IsWaiting(key) {
				t.Errorf("after: build %+v, waiting %t; want no build and no place in the queue", b, r.Builds.Queue.IsWaiting(key))
			}
		})
	}
}

// TestReconcile_FailedBuildShownWhenStepsStop: a build seen failing in a reconcile
// whose later steps stop (here: the repository does not answer, an outage) is shown as
// failed, not left "Rebuilding" until the next reconcile.
func TestReconcile_FailedBuildShownWhenStepsStop(t *testing.T) {
	ns := newNamespace(t)
	r, _ := newBuildReconciler(t)
	pipelineRun{id: "b1", succeeded: corev1.ConditionFalse, message: "boom", missingTaskRun: "fn-run-b1-gone"}.create(t, ns)
	fn := newFunction(ns, "fn", v1alpha1.Repository{URL: "http://127.0.0.1:1/gone.git"})
	mustCreate(t, fn)
	fn.Status.InitializeConditions()
	// A source read before: the unreachable host is an outage, during which the last
	// known good state stands and the later steps do not run.
	fn.Status.Git = &v1alpha1.GitStatus{ResolvedBranch: "main", ObservedCommit: strings.Repeat("a", 40)}
	fn.Status.MarkSourceReady("main", strings.Repeat("a", 40))
	fn.Status.Build = &v1alpha1.BuildStatus{ID: "b1", Phase: v1alpha1.BuildPhaseRunning, PipelineRun: "fn-run-b1"}
	fn.Status.MarkRebuilding("build b1 running")
	if err := k8sClient.Status().Update(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
	_, _ = reconcileOnce(t, r, ns, "fn")
	got := getFunction(t, ns, "fn")
	if b := got.Status.Build; b == nil || b.Phase != v1alpha1.BuildPhaseFailed {
		t.Fatalf("build = %+v, want Failed (the positive control that observeBuild ran)", b)
	}
	if c := got.Status.GetCondition(v1alpha1.FunctionConditionMiddlewareUpToDate); c == nil || c.Reason == v1alpha1.ReasonRebuilding {
		t.Errorf("MiddlewareUpToDate = %+v after the build failed, want it no longer Rebuilding", c)
	}
}

// TestReconcile_BuildStoppedWhenItsServiceGoes: a build in flight for a Knative
// Service the Function is no longer bound to (replaced, or no longer func's) is
// stopped through Reconcile as the binary runs it: the checks find the binding, and
// the stop after them fails the build, frees its slot and deletes its PipelineRun.
// The positive control: the same Service, and the build goes on.
func TestReconcile_BuildStoppedWhenItsServiceGoes(t *testing.T) {
	f := newBindingFixture(t)
	for _, tt := range []struct {
		name      string
		replaced  bool // the build was started for another Service's UID
		unlabeled bool // the Service is no longer func's for the function
		stopped   bool
	}{
		{name: "the same Service: the build goes on"},
		{name: "the Service was replaced: the build is stopped", replaced: true, stopped: true},
		{name: "the Service is no longer func's: the build is stopped", unlabeled: true, stopped: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			ns := newNamespace(t)
			svc := f.service(t, ns, !tt.unlabeled)
			startedFor := svc.UID
			if tt.replaced {
				startedFor = "uid-of-the-replaced-service"
			}
			fn := newFunction(ns, "fn", v1alpha1.Repository{URL: f.url})
			mustCreate(t, fn)
			start := metav1.Now()
			fn.Status.InitializeConditions()
			fn.Status.Build = &v1alpha1.BuildStatus{ID: "b1", Phase: v1alpha1.BuildPhaseRunning, PipelineRun: "fn-run-b1",
				StartTime: &start, ServiceUID: startedFor}
			if err := k8sClient.Status().Update(ctx, fn); err != nil {
				t.Fatal(err)
			}
			mustCreate(t, &pipelinev1.PipelineRun{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fn-run-b1", Labels: map[string]string{
					resources.LabelFunction: "fn", resources.LabelBuildID: "b1", resources.LabelManagedBy: resources.ManagedBy,
					resources.LabelServiceUID: string(startedFor)},
					OwnerReferences: []metav1.OwnerReference{resources.Owner(fn)}},
				Spec: pipelinev1.PipelineRunSpec{PipelineRef: &pipelinev1.PipelineRef{Name: "fn-pipeline"}},
			})
			r, _ := newBuildReconciler(t)
			key := types.NamespacedName{Namespace: ns, Name: "fn"}
			r.Builds.Queue.Running(key)

			if _, err := reconcileOnce(t, r, ns, "fn"); err != nil && !tt.unlabeled {
				t.Fatalf("Reconcile: %v", err)
			}
			got := getFunction(t, ns, "fn")
			want := buildOutcome{Phase: v1alpha1.BuildPhaseRunning, PipelineRun: "fn-run-b1", HoldsSlot: true, ServiceUID: startedFor}
			wantRuns := 1
			if tt.stopped {
				want = buildOutcome{Phase: v1alpha1.BuildPhaseFailed, PipelineRun: "fn-run-b1", Failures: 1, Retry: true, ServiceUID: startedFor}
				wantRuns = 0
			}
			if diff := cmp.Diff(want, buildOutcomeOf(r, got)); diff != "" {
				t.Errorf("build (-want +got):\n%s\nmessage: %s", diff, got.Status.Build.Message)
			}
			var runs pipelinev1.PipelineRunList
			if err := k8sClient.List(ctx, &runs, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			if len(runs.Items) != wantRuns {
				t.Errorf("%d PipelineRuns left, want %d", len(runs.Items), wantRuns)
			}
		})
	}
}

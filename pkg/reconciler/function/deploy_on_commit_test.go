package function

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/test/gitserver"
	"github.com/fnops/func-operator/test/registrytest"
)

// longScenario skips, in the quick tier (-short), a scenario of many commits and
// checks through real git and registry servers (seconds each): the middle tier (make
// test-integration, make test's test-plane) runs it, on the same fake client.
func longScenario(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("a scenario of many commits and checks: the middle tier runs it")
	}
}

// onCommitFixture is a repository of functions, a registry of their images, and a
// Reconciler that records the builds it launches.
type onCommitFixture struct {
	reg  *registrytest.Registry
	srv  *gitserver.HTTPServer
	repo *gitserver.Repo
	r    *testReconciler
	rec  *recordingRun
	// middleware is what func builds now: the images run it, so only a new commit
	// is a cause.
	middleware string
	checks     int
}

func newOnCommitFixture(t *testing.T, files map[string]string, interval time.Duration) (*onCommitFixture, string) {
	t.Helper()
	pin, err := funclib.AvailableMiddleware("go", "http")
	if err != nil {
		t.Fatal(err)
	}
	root := gitserver.NewRepoRoot(t)
	f := &onCommitFixture{reg: registrytest.Start(t), srv: gitserver.StartHTTP(t, root), middleware: pin.Version}
	f.repo = gitserver.CreateRepo(t, root, "mono")
	for name, content := range files {
		if content == "" {
			files[name] = funcYAML("hello", "go") + "registry: " + f.reg.Host + "/fns\n"
		}
	}
	c0 := f.repo.Commit(t, "main", files, "functions")
	f.r, f.rec = newBuildReconciler(t)
	cfg := config.Defaults()
	cfg.MinSourceBuildInterval = interval
	cfg.BuilderImages = map[string]string{"pack/go": "builder:pinned"}
	f.r.Config.Set(cfg)
	return f, c0
}

// image pushes the image func's build of commit (its revision label as given)
// makes, with the middleware func builds now, and returns it by digest.
func (f *onCommitFixture) image(t *testing.T, revision string) string {
	t.Helper()
	return f.imageWith(t, revision, f.middleware)
}

// imageWith is image, with middleware given.
func (f *onCommitFixture) imageWith(t *testing.T, revision, middleware string) string {
	t.Helper()
	ref, err := f.reg.PushImage(f.reg.Host+"/fns/hello:"+revision+"-"+middleware, map[string]string{
		registrytest.MiddlewareLabel: middleware, registrytest.RevisionLabel: revision})
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// function creates Function name of a new namespace, for directory dir, with the
// Knative Service func deployed running image, and the source policy annotation
// onCommit ("": none).
func (f *onCommitFixture) function(t *testing.T, name, dir, image, onCommit string) *v1alpha1.Function {
	t.Helper()
	ns := newNamespace(t)
	knativeService{revisionDigest: image, readyRevision: "hello-00001",
		ready: &apis.Condition{Type: apis.ConditionReady, Status: corev1.ConditionTrue}}.create(t, ns)
	fn := newFunction(ns, name, v1alpha1.Repository{URL: f.srv.URL("mono"), Path: dir})
	if onCommit != "" {
		fn.Annotations = map[string]string{v1alpha1.AnnotationDeployOnCommit: onCommit}
	}
	mustCreate(t, fn)
	return fn
}

// check reconciles fns once each, with a check asked for (annotation
// functions.dev/requested-at), so that each lists the repository now, as a push
// webhook makes it.
func (f *onCommitFixture) check(t *testing.T, fns ...*v1alpha1.Function) {
	t.Helper()
	f.checks++
	for _, fn := range fns {
		got := getFunction(t, fn.Namespace, fn.Name)
		if got.Annotations == nil {
			got.Annotations = map[string]string{}
		}
		got.Annotations[v1alpha1.AnnotationRequestedAt] = strconv.Itoa(f.checks)
		if err := k8sClient.Update(context.Background(), got); err != nil {
			t.Fatal(err)
		}
		if _, err := reconcileOnce(t, f.r, fn.Namespace, fn.Name); err != nil {
			t.Fatalf("Reconcile %s: %v", fn, err)
		}
	}
	f.r.Builds.Launcher.Wait()
}

// TestReconcile_DeployOnCommit_Monorepo: 20 functions of one repository follow their
// branch with the source policy on; a commit that changes one of them builds exactly
// that one, of that commit, and a commit that changes none builds nothing.
func TestReconcile_DeployOnCommit_Monorepo(t *testing.T) {
	longScenario(t)
	onFakeClient(t)
	files := map[string]string{"README.md": "twenty functions\n"}
	for i := range 20 {
		files[fmt.Sprintf("fns/f%02d/func.yaml", i)] = ""
		files[fmt.Sprintf("fns/f%02d/handle.go", i)] = "package function\n"
	}
	f, c0 := newOnCommitFixture(t, files, 0)
	image := f.image(t, c0[:7]) // func labels its images with 7 hex digits
	fns := make([]*v1alpha1.Function, 0, 21)
	for i := range 20 {
		fns = append(fns, f.function(t, "hello", fmt.Sprintf("fns/f%02d", i), image, "true"))
	}
	// The control: the policy off (by the ConfigMap default) for the same directory.
	off := f.function(t, "hello", "fns/f07", image, "")
	all := append(fns, off)

	f.check(t, all...)
	if n := len(f.rec.requests()); n != 0 {
		t.Fatalf("%d builds before any new commit, want none", n)
	}
	for _, fn := range fns {
		got := getFunction(t, fn.Namespace, fn.Name)
		c := got.Status.GetCondition(v1alpha1.FunctionConditionSourceDeployed)
		if c == nil || !c.IsTrue() || c.Severity != apis.ConditionSeverityInfo || got.Status.DeployOnCommit.DeployedCommit != c0 {
			t.Fatalf("%s: SourceDeployed = %+v, status.deployOnCommit = %+v; want True (Info), deployed commit %s in full", fn, c, got.Status.DeployOnCommit, c0)
		}
	}

	other := f.repo.Commit(t, "main", map[string]string{"README.md": "still twenty\n"}, "no function changed")
	f.check(t, all...)
	if n := len(f.rec.requests()); n != 0 {
		t.Fatalf("a commit changing no function's directory: %d builds, want none", n)
	}
	c1 := f.repo.Commit(t, "main", map[string]string{"fns/f07/handle.go": "package function // v2\n"}, "f07 changed")
	f.check(t, all...)
	reqs := f.rec.requests()
	if len(reqs) != 1 || reqs[0].Revision != c1 || reqs[0].ContextDir != "fns/f07" || reqs[0].Namespace != fns[7].Namespace {
		t.Fatalf("builds after commit %s changed fns/f07: %+v; want exactly one, of f07 at that commit", c1[:7], reqs)
	}
	got := getFunction(t, fns[7].Namespace, fns[7].Name)
	if b := got.Status.Build; b == nil || b.Cause != v1alpha1.BuildCauseSource || b.Commit != c1 {
		t.Errorf("status.build = %+v, want cause %s of commit %s", b, v1alpha1.BuildCauseSource, c1[:7])
	}
	if st := got.Status.DeployOnCommit; st == nil || st.LastBuildCommit != c1 || st.LastBuildTime == nil || st.FollowedCommit != c1 || st.DeployedCommit != c0 || !st.Changed {
		t.Errorf("status.deployOnCommit = %+v, want the build of %s recorded, %s deployed", st, c1[:7], c0[:7])
	}
	for _, fn := range append(fns[:7:7], fns[8:]...) {
		got := getFunction(t, fn.Namespace, fn.Name)
		if st := got.Status.DeployOnCommit; st.FollowedCommit != c1 || st.DeployedCommit != c0 || st.Changed {
			t.Errorf("%s: status.deployOnCommit = %+v, want %s followed, %s deployed, unchanged", fn, st, c1[:7], c0[:7])
		}
	}
	if got := getFunction(t, off.Namespace, off.Name); got.Status.DeployOnCommit != nil || got.Status.GetCondition(v1alpha1.FunctionConditionSourceDeployed) != nil {
		t.Errorf("policy off: status.deployOnCommit = %+v and a SourceDeployed condition, want neither", got.Status.DeployOnCommit)
	}
	_ = other
}

// deploy plays func's deploy step of a build: the Knative Service of namespace ns
// runs image from a new Revision.
func deploy(t *testing.T, ns, image string, generation int) {
	t.Helper()
	ctx := context.Background()
	name := fmt.Sprintf("hello-%05d", generation)
	rev := &servingv1.Revision{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: servingv1.RevisionSpec{PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Image: image}}}}}
	mustCreate(t, rev)
	rev.Status.ContainerStatuses = []servingv1.ContainerStatus{{Name: "user-container", ImageDigest: image}}
	if err := k8sClient.Status().Update(ctx, rev); err != nil {
		t.Fatal(err)
	}
	svc := &servingv1.Service{}
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "hello"}, svc); err != nil {
		t.Fatal(err)
	}
	svc.Spec.Template.Spec.Containers[0].Image = image
	if err := k8sClient.Update(ctx, svc); err != nil {
		t.Fatal(err)
	}
	svc.Status.LatestReadyRevisionName, svc.Status.ObservedGeneration = name, svc.Generation
	if err := k8sClient.Status().Update(ctx, svc); err != nil {
		t.Fatal(err)
	}
}

// TestReconcile_DeployOnCommit_Burst: five commits pushed while the build of a new
// commit runs build once more, the newest, once the first serves; within
// minSourceBuildInterval of the first, not at all until it is over.
func TestReconcile_DeployOnCommit_Burst(t *testing.T) {
	longScenario(t)
	onFakeClient(t)
	for _, tt := range []struct {
		name       string
		interval   time.Duration
		wantBuilds int
		wantReason string // of SourceDeployed at the end
	}{
		{name: "interval over: the newest built", interval: 0, wantBuilds: 2, wantReason: v1alpha1.ReasonNewCommit},
		{name: "interval not over: waits", interval: time.Hour, wantBuilds: 1, wantReason: v1alpha1.ReasonBuildIntervalNotOver},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, c0 := newOnCommitFixture(t, map[string]string{"fn/func.yaml": "", "fn/handle.go": "package function\n"}, tt.interval)
			fn := f.function(t, "fn", "fn", f.image(t, c0), "true")
			f.check(t, fn)
			c1 := f.repo.Commit(t, "main", map[string]string{"fn/handle.go": "package function // 1\n"}, "1")
			f.check(t, fn)
			var newest string
			for i := 2; i <= 6; i++ {
				newest = f.repo.Commit(t, "main", map[string]string{"fn/handle.go": fmt.Sprintf("package function // %d\n", i)}, strconv.Itoa(i))
				f.check(t, fn) // the build runs: nothing more starts
			}
			if reqs := f.rec.requests(); len(reqs) != 1 || reqs[0].Revision != c1 {
				t.Fatalf("builds while the first runs: %+v, want one, of %s", reqs, c1[:7])
			}
			// The first build succeeds and its image serves.
			b := getFunction(t, fn.Namespace, fn.Name).Status.Build
			pipelineRun{id: b.ID, succeeded: corev1.ConditionTrue, serviceUID: string(b.ServiceUID)}.create(t, fn.Namespace)
			deploy(t, fn.Namespace, f.image(t, c1), 2)
			f.check(t, fn)
			f.check(t, fn)

			reqs := f.rec.requests()
			if len(reqs) != tt.wantBuilds {
				t.Fatalf("%d builds, want %d: %+v", len(reqs), tt.wantBuilds, reqs)
			}
			if tt.wantBuilds == 2 && reqs[1].Revision != newest {
				t.Errorf("the second build builds %s, want the newest commit %s", reqs[1].Revision[:7], newest[:7])
			}
			got := getFunction(t, fn.Namespace, fn.Name)
			if h := got.Status.History; len(h) == 0 {
				t.Errorf("no history entry for the first build")
			}
			c := got.Status.GetCondition(v1alpha1.FunctionConditionSourceDeployed)
			if c == nil || c.Reason != tt.wantReason {
				t.Errorf("SourceDeployed = %+v, want reason %s", c, tt.wantReason)
			}
			if st := got.Status.DeployOnCommit; st.DeployedCommit != c1 || st.FollowedCommit != newest {
				t.Errorf("status.deployOnCommit = %+v, want %s deployed, %s followed", st, c1[:7], newest[:7])
			}
		})
	}
}

// TestReconcile_ManagementDisabled: func.yaml's deploy.managementDisabled makes the
// operator stand down: no rebuild of any cause (outdated middleware, a new commit, a
// request), ManagementDisabled True, Ready not False for it; the status is still
// read. The control, the same function managed, builds.
func TestReconcile_ManagementDisabled(t *testing.T) {
	onFakeClient(t)
	for _, tt := range []struct {
		name       string
		disabled   bool
		wantBuilds int
	}{
		{name: "management disabled: nothing built", disabled: true, wantBuilds: 0},
		{name: "managed (the control): built", disabled: false, wantBuilds: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			yaml := ""
			f, c0 := newOnCommitFixture(t, map[string]string{"fn/func.yaml": yaml, "fn/handle.go": "package function\n"}, 0)
			if tt.disabled {
				c0 = f.repo.Commit(t, "main", map[string]string{
					"fn/func.yaml": funcYAML("hello", "go") + "registry: " + f.reg.Host + "/fns\ndeploy:\n  managementDisabled: true\n"}, "hands off")
			}
			old := f.imageWith(t, c0, "v0.0.1")
			fn := f.function(t, "fn", "fn", old, "true")
			got := getFunction(t, fn.Namespace, fn.Name)
			got.Annotations[v1alpha1.AnnotationRebuildRequestedAt] = "now"
			if err := k8sClient.Update(context.Background(), got); err != nil {
				t.Fatal(err)
			}
			f.check(t, fn)
			f.repo.Commit(t, "main", map[string]string{"fn/handle.go": "package function // 2\n"}, "new commit")
			f.check(t, fn)

			if n := len(f.rec.requests()); n != tt.wantBuilds {
				t.Fatalf("%d builds, want %d", n, tt.wantBuilds)
			}
			got = getFunction(t, fn.Namespace, fn.Name)
			md := got.Status.GetCondition(v1alpha1.FunctionConditionManagementDisabled)
			mw := got.Status.GetCondition(v1alpha1.FunctionConditionMiddlewareUpToDate)
			ready := got.Status.GetCondition(v1alpha1.FunctionConditionReady)
			if !tt.disabled {
				if md != nil {
					t.Errorf("ManagementDisabled = %+v on a managed function", md)
				}
				return
			}
			if md == nil || !md.IsTrue() || md.Severity != apis.ConditionSeverityInfo {
				t.Errorf("ManagementDisabled = %+v, want True, severity Info", md)
			}
			if mw == nil || !mw.IsFalse() || mw.Reason != v1alpha1.ReasonManagementDisabled || mw.Severity != apis.ConditionSeverityInfo {
				t.Errorf("MiddlewareUpToDate = %+v, want False (read: outdated), %s, Info", mw, v1alpha1.ReasonManagementDisabled)
			}
			if ready == nil || ready.IsFalse() {
				t.Errorf("Ready = %+v, want not False", ready)
			}
			if got.Status.LastHandledRebuildRequest != "now" {
				t.Errorf("the request was not handled (refused): %q", got.Status.LastHandledRebuildRequest)
			}
			if c := got.Status.GetCondition(v1alpha1.FunctionConditionSourceDeployed); c == nil || c.Reason != v1alpha1.ReasonManagementDisabled {
				t.Errorf("SourceDeployed = %+v, want reason %s", c, v1alpha1.ReasonManagementDisabled)
			}
		})
	}
}

// TestReconcile_DeployOnCommit_FailuresIndependent: a new commit whose build failed
// never holds back the middleware rebuild of the deployed commit once the backoff is
// over, and a failed middleware rebuild never holds back a new commit, which is a new
// chance and skips it; a backoff otherwise holds, whichever cause failed, so that a
// failure every build meets never alternates causes past it.
func TestReconcile_DeployOnCommit_FailuresIndependent(t *testing.T) {
	longScenario(t)
	onFakeClient(t)
	future, past := metav1.NewTime(time.Now().Add(time.Hour)), metav1.NewTime(time.Now().Add(-time.Second))
	failed := func(cause string, retry metav1.Time) func(string) *v1alpha1.BuildStatus {
		return func(commit string) *v1alpha1.BuildStatus {
			return &v1alpha1.BuildStatus{ID: "b1", Phase: v1alpha1.BuildPhaseFailed, Cause: cause, Commit: commit, Failures: 1, RetryAfter: retry.DeepCopy()}
		}
	}
	for _, tt := range []struct {
		name      string
		failed    func(commit string) *v1alpha1.BuildStatus
		newCommit bool
		tried     bool // the new commit's directory was built (and failed)
		wantCause string
		wantNew   bool // the build is of the new commit, else of the deployed one
	}{
		{name: "the new commit's build failed, backoff over: the deployed commit's middleware goes first",
			failed: failed(v1alpha1.BuildCauseSource, past), newCommit: true, tried: true, wantCause: v1alpha1.BuildCauseMiddleware},
		{name: "the new commit's build failed, backoff not over: nothing, whichever cause",
			failed: failed(v1alpha1.BuildCauseSource, future), newCommit: true, tried: true},
		{name: "the middleware rebuild failed: a new commit is built, past its backoff",
			failed: failed(v1alpha1.BuildCauseMiddleware, future), newCommit: true, wantCause: v1alpha1.BuildCauseSource, wantNew: true},
		{name: "the middleware rebuild failed, no new commit (the control): its backoff holds",
			failed: failed(v1alpha1.BuildCauseMiddleware, future)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, c0 := newOnCommitFixture(t, map[string]string{"fn/func.yaml": "", "fn/handle.go": "package function\n"}, 0)
			old := f.imageWith(t, c0, "v0.0.1")
			followed := c0
			if tt.newCommit {
				followed = f.repo.Commit(t, "main", map[string]string{"fn/handle.go": "package function // 2\n"}, "2")
			}
			fn := f.function(t, "fn", "fn", old, "true")
			budget := func(n int) {
				cfg := f.r.Config.Load()
				cfg.MaxConcurrentBuilds = n
				f.r.Config.Set(cfg)
			}
			budget(0) // the first check queues what is due, and the test sets the failure
			f.check(t, fn)
			budget(2)
			got := getFunction(t, fn.Namespace, fn.Name)
			got.Status.Build = tt.failed(followed)
			if tt.tried {
				got.Status.DeployOnCommit.LastBuildCommit, got.Status.DeployOnCommit.LastBuildTree = followed, got.Status.DeployOnCommit.FollowedTree
			}
			if err := k8sClient.Status().Update(context.Background(), got); err != nil {
				t.Fatal(err)
			}
			f.check(t, fn)
			reqs := f.rec.requests()
			if tt.wantCause == "" {
				if len(reqs) != 0 {
					t.Fatalf("%d builds during the backoff, want none", len(reqs))
				}
				if b := getFunction(t, fn.Namespace, fn.Name).Status.Build; b.Phase != v1alpha1.BuildPhaseFailed {
					t.Errorf("status.build = %+v, want the failed build kept", b)
				}
				return
			}
			want := c0
			if tt.wantNew {
				want = followed
			}
			if len(reqs) != 1 || reqs[0].Revision != want {
				t.Fatalf("builds %+v, want one, of %s", reqs, want[:7])
			}
			if b := getFunction(t, fn.Namespace, fn.Name).Status.Build; b.Cause != tt.wantCause {
				t.Errorf("status.build.cause = %q, want %q", b.Cause, tt.wantCause)
			}
		})
	}
}

// failRunning fails fn's build in flight, as Tekton reports a failed PipelineRun.
func failRunning(t *testing.T, fn *v1alpha1.Function, message string) {
	t.Helper()
	if b := getFunction(t, fn.Namespace, fn.Name).Status.Build; b != nil && b.InFlight() {
		pipelineRun{id: b.ID, succeeded: corev1.ConditionFalse, message: message, serviceUID: string(b.ServiceUID)}.create(t, fn.Namespace)
	}
}

// TestReconcile_DeployOnCommit_SharedFailureBacksOff: when every build fails (a
// registry down), a middleware rebuild and a new commit do not alternate past the
// backoff: with no time passing, one build of each at most.
func TestReconcile_DeployOnCommit_SharedFailureBacksOff(t *testing.T) {
	onFakeClient(t)
	f, c0 := newOnCommitFixture(t, map[string]string{"fn/func.yaml": "", "fn/handle.go": "package function\n"}, 0)
	old := f.imageWith(t, c0, "v0.0.1")
	fn := f.function(t, "fn", "fn", old, "true")
	f.check(t, fn) // a middleware rebuild of c0 starts
	f.repo.Commit(t, "main", map[string]string{"fn/handle.go": "package function // 2\n"}, "2")
	for range 6 {
		failRunning(t, fn, "registry down")
		f.check(t, fn)
		f.check(t, fn)
	}
	reqs := f.rec.requests()
	if len(reqs) != 2 || reqs[0].Revision != c0 {
		t.Fatalf("%d builds with every one failing and no time passing, want 2 (the middleware rebuild, then the new commit)", len(reqs))
	}
	if b := getFunction(t, fn.Namespace, fn.Name).Status.Build; b.Phase != v1alpha1.BuildPhaseFailed || b.Failures != 2 || b.RetryAfter == nil {
		t.Errorf("status.build = %+v, want the second failure, waiting out its backoff", b)
	}
}

// TestReconcile_DeployOnCommit_PushElsewhereKeepsBackoff: a push to another directory
// of the repository is no new chance for a function whose last build failed: its
// backoff holds (the control: a push into its directory is one).
func TestReconcile_DeployOnCommit_PushElsewhereKeepsBackoff(t *testing.T) {
	longScenario(t)
	onFakeClient(t)
	f, c0 := newOnCommitFixture(t, map[string]string{"fn/func.yaml": "", "fn/handle.go": "package function\n", "other/x": "0"}, 0)
	fn := f.function(t, "fn", "fn", f.image(t, c0[:7]), "true")
	f.check(t, fn)
	f.repo.Commit(t, "main", map[string]string{"fn/handle.go": "package function // broken\n"}, "1")
	f.check(t, fn)
	for i := range 4 {
		failRunning(t, fn, "compile error")
		f.check(t, fn)
		f.repo.Commit(t, "main", map[string]string{"other/x": strconv.Itoa(i + 1)}, "another team's push")
		f.check(t, fn)
	}
	if n := len(f.rec.requests()); n != 1 {
		t.Fatalf("%d builds of the same broken directory, want 1: pushes elsewhere skipped its backoff", n)
	}
	fixed := f.repo.Commit(t, "main", map[string]string{"fn/handle.go": "package function // fixed\n"}, "fix")
	f.check(t, fn)
	if reqs := f.rec.requests(); len(reqs) != 2 || reqs[1].Revision != fixed {
		t.Errorf("after a fix was pushed: %d builds, want a second one, of the fix", len(reqs))
	}
}

// TestReconcile_DeployOnCommit_HeldByAnInvalidSetting: an invalid settings annotation
// holds every rebuild until it is fixed, a new commit's too (the control: valid).
func TestReconcile_DeployOnCommit_HeldByAnInvalidSetting(t *testing.T) {
	onFakeClient(t)
	for _, tt := range []struct {
		suspend    string
		wantBuilds int
		wantReason string
	}{
		{suspend: "yes", wantBuilds: 0, wantReason: v1alpha1.ReasonRebuildsHeld},
		{suspend: "false", wantBuilds: 1, wantReason: v1alpha1.ReasonNewCommit},
	} {
		t.Run("suspend "+tt.suspend, func(t *testing.T) {
			f, c0 := newOnCommitFixture(t, map[string]string{"fn/func.yaml": "", "fn/handle.go": "package function\n"}, 0)
			fn := f.function(t, "fn", "fn", f.image(t, c0[:7]), "true")
			got := getFunction(t, fn.Namespace, fn.Name)
			got.Annotations[v1alpha1.AnnotationSuspend] = tt.suspend
			if err := k8sClient.Update(context.Background(), got); err != nil {
				t.Fatal(err)
			}
			f.check(t, fn)
			f.repo.Commit(t, "main", map[string]string{"fn/handle.go": "package function // 2\n"}, "2")
			f.check(t, fn)
			if n := len(f.rec.requests()); n != tt.wantBuilds {
				t.Errorf("%d builds, want %d", n, tt.wantBuilds)
			}
			if c := getFunction(t, fn.Namespace, fn.Name).Status.GetCondition(v1alpha1.FunctionConditionSourceDeployed); c == nil || c.Reason != tt.wantReason {
				t.Errorf("SourceDeployed = %+v, want reason %s", c, tt.wantReason)
			}
		})
	}
}

// TestReconcile_FuncDeployAfterAnOperatorBuild: a developer's func deploy after one of
// the operator's builds is taken for what it is: the commit its label names, looked up
// among the commits followed since. With the source policy on, a later push is built;
// off, the next middleware rebuild builds the developer's commit.
func TestReconcile_FuncDeployAfterAnOperatorBuild(t *testing.T) {
	longScenario(t)
	onFakeClient(t)
	for _, onCommit := range []string{"true", "false"} {
		t.Run("deploy-on-commit "+onCommit, func(t *testing.T) {
			f, c0 := newOnCommitFixture(t, map[string]string{"fn/func.yaml": "", "fn/handle.go": "package function\n"}, 0)
			var fn *v1alpha1.Function
			deployed, devMiddleware := c0, f.middleware
			if onCommit == "true" { // the operator builds a new commit
				fn = f.function(t, "fn", "fn", f.image(t, c0[:7]), onCommit)
				f.check(t, fn)
				deployed = f.repo.Commit(t, "main", map[string]string{"fn/handle.go": "package function // 1\n"}, "1")
			} else { // the operator rebuilds outdated middleware; so will it the developer's deploy
				fn = f.function(t, "fn", "fn", f.imageWith(t, c0[:7], "v0.0.1"), onCommit)
				devMiddleware = "v0.0.1"
			}
			f.check(t, fn)
			b := getFunction(t, fn.Namespace, fn.Name).Status.Build
			if b == nil || b.Commit != deployed {
				t.Fatalf("status.build = %+v, want a build of %s", b, deployed[:7])
			}
			pipelineRun{id: b.ID, succeeded: corev1.ConditionTrue, serviceUID: string(b.ServiceUID)}.create(t, fn.Namespace)
			deploy(t, fn.Namespace, f.image(t, deployed), 2)
			f.check(t, fn)
			f.check(t, fn)

			// A developer pushes c2 and deploys it with func (a 7-digit label, the
			// last-deployed annotation).
			c2 := f.repo.Commit(t, "main", map[string]string{"fn/handle.go": "package function // 2\n"}, "2")
			got := getFunction(t, fn.Namespace, fn.Name)
			got.Annotations[v1alpha1.AnnotationLastDeployed] = time.Now().Add(time.Minute).UTC().Format(time.RFC3339)
			if err := k8sClient.Update(context.Background(), got); err != nil {
				t.Fatal(err)
			}
			deploy(t, fn.Namespace, f.imageWith(t, c2[:7], devMiddleware), 3)
			f.check(t, fn)
			got = getFunction(t, fn.Namespace, fn.Name)
			if d := got.Status.Deployment; d.FollowedAtDeploy != c2 {
				t.Errorf("status.deployment.followedAtDeploy = %s, want %s, followed when func deployed", d.FollowedAtDeploy[:7], c2[:7])
			}
			reqs := f.rec.requests()
			if onCommit == "false" {
				// The middleware rebuild of the developer's commit, looked up in full.
				if len(reqs) != 2 || reqs[1].Revision != c2 {
					t.Errorf("%d builds, want 2, the second of %s", len(reqs), c2[:7])
				}
				return
			}
			if st := got.Status.DeployOnCommit; st.DeployedCommit != c2 || st.Changed {
				t.Errorf("status.deployOnCommit = %+v, want %s deployed, unchanged", st, c2[:7])
			}
			c3 := f.repo.Commit(t, "main", map[string]string{"fn/handle.go": "package function // 3\n"}, "3")
			f.check(t, fn)
			if reqs := f.rec.requests(); len(reqs) != 2 || reqs[1].Revision != c3 {
				t.Errorf("after func deploy of %s and a push of %s: %d builds, want the push built", c2[:7], c3[:7], len(reqs))
			}
		})
	}
}

// TestReconcile_DeployOnCommit_Request: with the source policy on, a rebuild on request
// builds the followed commit (here one that changed only another directory); off (the
// control), the commit the running image was built from.
func TestReconcile_DeployOnCommit_Request(t *testing.T) {
	onFakeClient(t)
	for _, onCommit := range []string{"true", "false"} {
		t.Run("deploy-on-commit "+onCommit, func(t *testing.T) {
			f, c0 := newOnCommitFixture(t, map[string]string{"fn/func.yaml": "", "fn/handle.go": "package function\n", "docs/x": "0"}, 0)
			fn := f.function(t, "fn", "fn", f.image(t, c0), onCommit)
			f.check(t, fn)
			c1 := f.repo.Commit(t, "main", map[string]string{"docs/x": "1"}, "docs only")
			got := getFunction(t, fn.Namespace, fn.Name)
			got.Annotations[v1alpha1.AnnotationRebuildRequestedAt] = "now"
			if err := k8sClient.Update(context.Background(), got); err != nil {
				t.Fatal(err)
			}
			f.check(t, fn)
			want := c0
			if onCommit == "true" {
				want = c1
			}
			reqs := f.rec.requests()
			if len(reqs) != 1 || reqs[0].Revision != want {
				t.Fatalf("builds %+v, want one, of %s", reqs, want[:7])
			}
			if b := getFunction(t, fn.Namespace, fn.Name).Status.Build; b.Cause != v1alpha1.BuildCauseRequest {
				t.Errorf("status.build.cause = %q, want %s", b.Cause, v1alpha1.BuildCauseRequest)
			}
		})
	}
}

// TestReconcile_DeployOnCommit_NotBuildable: a new commit that cannot be built (its
// func.yaml switches the function from func's knative deployer to raw, which would
// strand the Knative Service) is no fault of the running function: SourceDeployed
// says so, with severity Warning, Ready and Stalled do not, and an outdated
// middleware is still rebuilt, of the deployed commit. The control: the same commit
// without the switch is built.
func TestReconcile_DeployOnCommit_NotBuildable(t *testing.T) {
	onFakeClient(t)
	for _, tt := range []struct {
		name         string
		deployer     string // func.yaml's at the new commit
		middleware   string // the running image's; "" for the current one
		wantRevision string // "new", "deployed" or "" for no build
		wantReason   string // of SourceDeployed
	}{
		{name: "switches deployers, middleware current: nothing built", deployer: "raw", wantReason: v1alpha1.ReasonCommitNotBuildable},
		{name: "switches deployers, middleware outdated: the deployed commit rebuilt", deployer: "raw", middleware: "v0.0.1",
			wantRevision: "deployed", wantReason: v1alpha1.ReasonCommitNotBuildable},
		{name: "the control: buildable, built", deployer: "knative", wantRevision: "new", wantReason: v1alpha1.ReasonNewCommit},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, c0 := newOnCommitFixture(t, map[string]string{"fn/func.yaml": "", "fn/handle.go": "package function\n"}, 0)
			fn := f.function(t, "fn", "fn", f.imageWith(t, c0, cmp.Or(tt.middleware, f.middleware)), "true")
			c1 := f.repo.Commit(t, "main", map[string]string{"fn/func.yaml": funcYAML("hello", "go") + "registry: " + f.reg.Host + "/fns\ndeployer: " + tt.deployer + "\n"}, "deployer")
			f.check(t, fn)
			reqs := f.rec.requests()
			want := map[string]string{"new": c1, "deployed": c0}[tt.wantRevision]
			if (want == "") != (len(reqs) == 0) || (want != "" && (len(reqs) != 1 || reqs[0].Revision != want)) {
				t.Fatalf("builds %+v, want %q", reqs, tt.wantRevision)
			}
			got := getFunction(t, fn.Namespace, fn.Name)
			c := got.Status.GetCondition(v1alpha1.FunctionConditionSourceDeployed)
			if c == nil || c.Reason != tt.wantReason {
				t.Fatalf("SourceDeployed = %+v, want reason %s", c, tt.wantReason)
			}
			if tt.wantReason == v1alpha1.ReasonCommitNotBuildable && (c.Severity != apis.ConditionSeverityWarning || !strings.Contains(c.Message, "deployer")) {
				t.Errorf("SourceDeployed = %+v, want severity Warning and why", c)
			}
			if s := got.Status.GetCondition(v1alpha1.FunctionConditionStalled); s != nil {
				t.Errorf("Stalled = %+v, want none: the running function is fine", s)
			}
			if r := got.Status.GetCondition(v1alpha1.FunctionConditionReady); tt.wantRevision == "" && (r == nil || !r.IsTrue()) {
				t.Errorf("Ready = %+v, want True", r)
			}
		})
	}
}

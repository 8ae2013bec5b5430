package operator

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/fnops/func-operator/pkg/funclib"

	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"knative.dev/pkg/apis"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/rebuild"
	"github.com/fnops/func-operator/pkg/reconciler/function/resources"
	"github.com/fnops/func-operator/test/envtest"
	"github.com/fnops/func-operator/test/gitserver"
	"github.com/fnops/func-operator/test/registrytest"
	"github.com/fnops/func-operator/test/tekton"
)

// The private registry's credentials.
const registryUser, registryPassword = "robot", "pw-registry-7f3e9-secret"

// oldMiddleware is the func-go version the deployed images of these tests run.
const oldMiddleware = "v0.1.0"

// pinnedBuilder is the builder image the tests pin in the operator's configuration.
const pinnedBuilder = "registry.example/knative/builder-jammy-tiny:pinned"

// rebuildFixture is a monorepo of Go functions served over git, an in-process
// registry with their deployed (outdated) images, and their Knative Services.
type rebuildFixture struct {
	ns     string
	reg    *registrytest.Registry
	srv    *gitserver.HTTPServer
	root   string // the repositories' directory, which srv serves
	repo   *gitserver.Repo
	commit string
	// oldImage is the image each function's Service ran before any rebuild.
	oldImage map[string]string
}

func newRebuildFixture(t *testing.T, ns string, names ...string) *rebuildFixture {
	t.Helper()
	return newRebuildFixtureWith(t, ns, registrytest.Start(t), names...)
}

func newRebuildFixtureWith(t *testing.T, ns string, reg *registrytest.Registry, names ...string) *rebuildFixture {
	t.Helper()
	f := &rebuildFixture{ns: ns, reg: reg, oldImage: map[string]string{}}
	root := gitserver.NewRepoRoot(t)
	f.root = root
	f.srv = gitserver.StartHTTP(t, root)
	files := map[string]string{}
	for _, name := range names {
		files["fns/"+name+"/func.yaml"] = funcYAML(name, "go") + "registry: " + f.reg.Host + "/fns\nbuild:\n  builder: pack\n"
		files["fns/"+name+"/handle.go"] = "package function\n"
	}
	f.repo = gitserver.CreateRepo(t, root, "fleet")
	f.commit = f.repo.Commit(t, "main", files, "the fleet")
	for _, name := range names {
		f.oldImage[name] = f.reg.Push(t, "fns/"+name, oldMiddleware)
		svc := &servingv1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"function.knative.dev/name": name}},
			Spec: servingv1.ServiceSpec{ConfigurationSpec: servingv1.ConfigurationSpec{Template: servingv1.RevisionTemplateSpec{
				Spec: servingv1.RevisionSpec{PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Image: f.oldImage[name]}}}},
			}}},
		}
		if err := k8sClient.Create(context.Background(), svc); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// createFunction creates the Function of function name, at its path in the monorepo.
func (f *rebuildFixture) createFunction(t *testing.T, name string, autoUpdate *bool) {
	t.Helper()
	f.createFunctionWith(t, name, autoUpdate, "")
}

// createFunctionWith creates the Function, with a registry Secret when registrySecret is set.
func (f *rebuildFixture) createFunctionWith(t *testing.T, name string, autoUpdate *bool, registrySecret string) {
	t.Helper()
	f.createFunctionSpec(t, name, func(fn *v1alpha1.Function) {
		fn.Spec.AutoUpdateMiddleware = autoUpdate
		if registrySecret != "" {
			fn.Spec.Registry.AuthSecretRef = &corev1.LocalObjectReference{Name: registrySecret}
		}
	})
}

// createFunctionSpec creates the Function of function name, its spec changed by set.
func (f *rebuildFixture) createFunctionSpec(t *testing.T, name string, set func(*v1alpha1.Function)) {
	t.Helper()
	fn := &v1alpha1.Function{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name},
		Spec: v1alpha1.FunctionSpec{
			Repository: v1alpha1.Repository{URL: f.srv.URL("fleet"), Branch: "main", Path: "fns/" + name},
		},
	}
	set(fn)
	if err := k8sClient.Create(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

// succeed is the simulated outcome of a good build: an image with the newest middleware.
func succeed(t *testing.T) func(*pipelinev1.PipelineRun) tekton.Outcome {
	v := availableGoMiddleware(t)
	return func(*pipelinev1.PipelineRun) tekton.Outcome { return tekton.Outcome{MiddlewareVersion: v} }
}

// rebuildConfig is the operator configuration of the rebuild tests: no periodic check
// within a test (the watches drive everything), a short backoff, a pinned builder.
func rebuildConfig(budget int) config.Config {
	cfg := config.Defaults()
	cfg.CheckInterval, cfg.GitTimeout = time.Hour, 10*time.Second
	cfg.MaxConcurrentBuilds = budget
	// These tests' Functions share a namespace: the budget is what they test
	// (TestOperator_NamespaceBuildLimit tests the namespace's share).
	cfg.MaxConcurrentBuildsPerNamespace = intstr.FromString("100%")
	cfg.BuildBackoff, cfg.BuildBackoffMax = 2*time.Second, time.Minute
	cfg.BuilderImages = map[string]string{"pack/go": pinnedBuilder}
	return cfg
}

func pipelineRuns(t *testing.T, ns string) []pipelinev1.PipelineRun {
	t.Helper()
	var list pipelinev1.PipelineRunList
	if err := k8sClient.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// pipelineRunServiceAccount is the ServiceAccount PipelineRun name runs as: the
// operator's proxy creates func's runs as tekton.dev/v1.
func pipelineRunServiceAccount(t *testing.T, ns, name string) string {
	t.Helper()
	pr := &pipelinev1.PipelineRun{}
	if err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, pr); err != nil {
		t.Fatal(err)
	}
	return pr.Spec.TaskRunTemplate.ServiceAccountName
}

func param(pr *pipelinev1.PipelineRun, name string) string {
	for _, p := range pr.Spec.Params {
		if p.Name == name {
			return p.Value.StringVal
		}
	}
	return ""
}

// rebuilt returns "" once the Function's build succeeded and the new middleware is seen.
func rebuilt(t *testing.T, ns, name string) func() string {
	return func() string {
		fn := getFunction(t, ns, name)
		c := fn.Status.GetCondition(v1alpha1.FunctionConditionMiddlewareUpToDate)
		if b := fn.Status.Build; b == nil || b.Phase != v1alpha1.BuildPhaseSucceeded || c == nil || !c.IsTrue() ||
			fn.Status.Middleware.LastRebuild == nil {
			return fmt.Sprintf("build = %+v, MiddlewareUpToDate = %+v", fn.Status.Build, c)
		}
		return ""
	}
}

func eventsOf(t *testing.T, ns, name string) map[string][]string {
	t.Helper()
	var list corev1.EventList
	if err := k8sClient.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == "Function" && e.InvolvedObject.Name == name {
			out[e.Reason] = append(out[e.Reason], e.Message)
		}
	}
	return out
}

func TestOperator_RebuildOutdatedFunction(t *testing.T) {
	ns := newNamespace(t)
	f := newRebuildFixture(t, ns, "hello")
	sim := tekton.StartKubelet(t, restConfig, tekton.Options{Namespaces: []string{ns}, Registry: f.reg, Decide: succeed(t)})
	startOperatorWith(t, rebuildConfig(2), ns)
	f.createFunction(t, "hello", nil)

	eventually(t, 60*time.Second, rebuilt(t, ns, "hello"))
	fn := getFunction(t, ns, "hello")
	runs := pipelineRuns(t, ns)
	if len(runs) != 1 {
		t.Fatalf("%d PipelineRuns, want exactly 1", len(runs))
	}
	pr := &runs[0]
	wantLabels := map[string]string{
		resources.LabelFunction:     "hello",
		resources.LabelBuildID:      fn.Status.Build.ID,
		resources.LabelManagedBy:    resources.ManagedBy,
		"function.knative.dev/name": "hello",
	}
	for k, v := range wantLabels {
		if got := pr.Labels[k]; got != v {
			t.Errorf("PipelineRun label %s = %q, want %q", k, got, v)
		}
	}
	wantParams := map[string]string{
		"gitRepository": f.srv.URL("fleet"),
		"gitRevision":   f.commit, // the commit the operator observed, not the branch
		"contextDir":    "fns/hello",
		"builderImage":  pinnedBuilder,
		"imageName":     f.reg.Host + "/fns/hello:latest",
	}
	for k, v := range wantParams {
		if got := param(pr, k); got != v {
			t.Errorf("PipelineRun param %s = %q, want %q", k, got, v)
		}
	}
	if p := buildPipeline(t, ns, "hello"); pr.Spec.PipelineRef == nil || pr.Spec.PipelineRef.Name != p.Name || !strings.HasSuffix(p.Name, "-pack-git") {
		t.Errorf("pipelineRef = %+v, want the function's pack pipeline %s", pr.Spec.PipelineRef, p.Name)
	}

	available := availableGoMiddleware(t)
	b := fn.Status.Build
	if b.PipelineRun != pr.Name || b.Commit != f.commit || b.FromImage != f.oldImage["hello"] ||
		b.FromMiddleware != oldMiddleware || b.ToMiddleware != available || b.Failures != 0 {
		t.Errorf("status.build = %+v", b)
	}
	mw := fn.Status.Middleware
	if mw.Current != available || mw.PendingRebuild || !mw.LastRebuild.Equal(fn.Status.Deployment.ImageBuilt) {
		t.Errorf("status.middleware = %+v, deployment = %+v", mw, fn.Status.Deployment)
	}
	if fn.Status.Deployment.Image == f.oldImage["hello"] || !strings.HasPrefix(fn.Status.Deployment.Image, f.reg.Host+"/fns/hello@sha256:") {
		t.Errorf("status.deployment.image = %s, want the rebuilt image", fn.Status.Deployment.Image)
	}
	// Verified on what the real Knative Serving controller reports: the rebuilt
	// image's Revision, ready, with all the traffic.
	if svc := getService(t, ns, "hello"); !svc.IsReady() || svc.Status.LatestReadyRevisionName != "hello-00002" ||
		len(svc.Status.Traffic) != 1 || svc.Status.Traffic[0].RevisionName != "hello-00002" || fn.Status.Service.LatestReadyRevision != "hello-00002" {
		t.Errorf("Knative Service status %+v, Function's status.service %+v; want hello-00002 ready, serving it all", svc.Status, fn.Status.Service)
	}
	wantHistory := fmt.Sprintf("Middleware updated from %s to %s", oldMiddleware, available)
	if len(fn.Status.History) == 0 || fn.Status.History[0].Message != wantHistory {
		t.Errorf("history = %+v, want %q first", fn.Status.History, wantHistory)
	}
	ev := eventsOf(t, ns, "hello")
	if len(ev["Rebuilding"]) != 1 || len(ev["Rebuilt"]) != 1 || !strings.Contains(ev["Rebuilt"][0], wantHistory) {
		t.Errorf("events = %v, want one Rebuilding and one Rebuilt", ev)
	}

	// The pipeline's objects carry the build's labels; the PipelineRun runs as the
	// namespace's build ServiceAccount, which no ordinary pod uses.
	secret := registrySecretOfBuild(t, ns, "hello")
	if secret.Labels[resources.LabelBuildID] != b.ID {
		t.Errorf("pipeline Secret labels = %v", secret.Labels)
	}
	if sa := pipelineRunServiceAccount(t, ns, b.PipelineRun); sa != "func-operator-builder" {
		t.Errorf("the PipelineRun runs as ServiceAccount %q, want func-operator-builder", sa)
	}

	// Nothing more is built: the function is up to date.
	time.Sleep(time.Second)
	if n := len(pipelineRuns(t, ns)); n != 1 || len(sim.Started()) != 1 {
		t.Errorf("%d PipelineRuns, %d started, after the rebuild; want 1", n, len(sim.Started()))
	}

	// A rebuild on request: one more build of the up-to-date function (cause Request),
	// through Tekton, verified; the same value asks for nothing more.
	requestRebuild(t, ns, "hello", "r1")
	eventually(t, 60*time.Second, func() string {
		fn := getFunction(t, ns, "hello")
		if b := fn.Status.Build; b == nil || b.Cause != v1alpha1.BuildCauseRequest || b.Phase != v1alpha1.BuildPhaseSucceeded ||
			fn.Status.LastHandledRebuildRequest != "r1" || len(fn.Status.History) == 0 || !strings.HasPrefix(fn.Status.History[0].Message, "Rebuilt as requested") {
			return fmt.Sprintf("build = %+v, lastHandledRebuildRequest = %q, history = %+v", b, fn.Status.LastHandledRebuildRequest, fn.Status.History)
		}
		return ""
	})
	requestRebuild(t, ns, "hello", "r1") // an unrelated write of the same value
	time.Sleep(time.Second)
	if n := len(pipelineRuns(t, ns)); n != 2 || len(sim.Started()) != 2 {
		t.Errorf("%d PipelineRuns, %d started, after the requested rebuild; want 2", n, len(sim.Started()))
	}
	if ev := eventsOf(t, ns, "hello"); len(ev["Rebuilding"]) != 2 || !strings.Contains(ev["Rebuilding"][1]+ev["Rebuilding"][0], "(cause: Request)") {
		t.Errorf("Rebuilding events = %q, want a second one, of cause Request", ev["Rebuilding"])
	}

	// Deploy on commit: a commit changing only another directory builds nothing; one
	// changing the function is built through Tekton (cause Source), deployed and
	// verified, and then SourceDeployed says it runs.
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"true"}}}`, v1alpha1.AnnotationDeployOnCommit)
	if err := k8sClient.Patch(context.Background(), &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hello"}},
		client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
	elsewhere := f.repo.Commit(t, "main", map[string]string{"docs/README.md": "not a function\n"}, "docs")
	requestCheck(t, ns, "hello")
	eventually(t, 30*time.Second, func() string {
		fn := getFunction(t, ns, "hello")
		c := fn.Status.GetCondition(v1alpha1.FunctionConditionSourceDeployed)
		if st := fn.Status.DeployOnCommit; st == nil || st.FollowedCommit != elsewhere || c == nil || !c.IsTrue() {
			return fmt.Sprintf("deployOnCommit = %+v, SourceDeployed = %+v", st, c)
		}
		return ""
	})
	if n := len(pipelineRuns(t, ns)); n != 2 {
		t.Fatalf("%d PipelineRuns after a commit that changed no function, want 2", n)
	}
	pushed := f.repo.Commit(t, "main", map[string]string{"fns/hello/handle.go": "package function // v2\n"}, "hello v2")
	requestCheck(t, ns, "hello")
	eventually(t, 60*time.Second, func() string {
		fn := getFunction(t, ns, "hello")
		c := fn.Status.GetCondition(v1alpha1.FunctionConditionSourceDeployed)
		b := fn.Status.Build
		if b == nil || b.Cause != v1alpha1.BuildCauseSource || b.Phase != v1alpha1.BuildPhaseSucceeded || b.Commit != pushed ||
			fn.Status.DeployOnCommit.DeployedCommit != pushed || c == nil || !c.IsTrue() ||
			len(fn.Status.History) == 0 || !strings.HasPrefix(fn.Status.History[0].Message, "Built and deployed commit "+pushed[:12]) {
			return fmt.Sprintf("build = %+v, deployOnCommit = %+v, SourceDeployed = %+v, history = %+v", b, fn.Status.DeployOnCommit, c, fn.Status.History)
		}
		return ""
	})
	runs = pipelineRuns(t, ns)
	sort.Slice(runs, func(i, j int) bool { return runs[i].CreationTimestamp.Before(&runs[j].CreationTimestamp) })
	if len(runs) != 3 || param(&runs[2], "gitRevision") != pushed {
		t.Errorf("%d PipelineRuns, the last of revision %q; want 3, the last of the pushed commit %s", len(runs), param(&runs[len(runs)-1], "gitRevision"), pushed[:12])
	}
}

// requestRebuild sets annotation functions.dev/rebuild-requested-at of Function name to value.
func requestRebuild(t *testing.T, ns, name, value string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.AnnotationRebuildRequestedAt, value)
	fn := &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := k8sClient.Patch(context.Background(), fn, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
}

// TestOperator_RebuildRevisionFails: a rebuild whose PipelineRun succeeds but whose
// image never serves — the real Knative Serving controller fails the new Revision
// (its pods cannot pull the image) and keeps the old one serving — is recorded
// Failed with Knative's reason once Knative has reported it for RevisionFailedGrace,
// not after DeployGrace, and backs off; the Function says its Service is not
// ready. The Revision's message (which may quote the function's log) stays out of
// the build's status.
func TestOperator_RebuildRevisionFails(t *testing.T) {
	ns := newNamespace(t)
	logOnFailure(t, ns)
	f := newRebuildFixture(t, ns, "hello")
	old := f.oldImage["hello"]
	// Every image of the test's registry but the one deployed cannot be pulled.
	failPulls(t, func(image string) error {
		if strings.HasPrefix(image, f.reg.Host+"/") && image != old {
			return errors.New("manifest unknown")
		}
		return nil
	})
	tekton.StartKubelet(t, restConfig, tekton.Options{Namespaces: []string{ns}, Registry: f.reg, Decide: succeed(t)})
	startOperatorWith(t, rebuildConfig(1), ns)
	f.createFunction(t, "hello", nil)
	var b *v1alpha1.BuildStatus
	eventually(t, 150*time.Second, func() string {
		fn := getFunction(t, ns, "hello")
		b = fn.Status.Build
		if b == nil || b.Phase != v1alpha1.BuildPhaseFailed {
			return fmt.Sprintf("build = %+v, conditions %+v; want Failed", b, fn.Status.Conditions)
		}
		return ""
	})
	if b.PipelineRun == "" || !strings.Contains(b.Message, "PipelineRun "+b.PipelineRun+" succeeded but its deploy does not serve: "+
		"Knative reports Revision hello-00002 failed (ImagePullBackOff); "+old+" still serves") || strings.Contains(b.Message, "manifest unknown") {
		t.Errorf("status.build = %+v, want it failed with Knative's reason (not its message), the old image serving", b)
	}
	if d := b.CompletionTime.Sub(b.StartTime.Time); d >= rebuild.DeployGrace {
		t.Errorf("the build took %s to fail, want less than DeployGrace (%s): Knative's verdict ends the wait", d, rebuild.DeployGrace)
	}
	fn := getFunction(t, ns, "hello")
	// The positive control of the message left out: ServiceReady mirrors Knative's.
	if c := fn.Status.GetCondition(v1alpha1.FunctionConditionServiceReady); c == nil || c.Status != corev1.ConditionFalse || c.Reason != "RevisionFailed" ||
		!strings.Contains(c.Message, "manifest unknown") {
		t.Errorf("ServiceReady = %+v, want False RevisionFailed with Knative's message", c)
	}
	if fn.Status.Deployment.Image != old || fn.Status.Middleware.LastRebuild != nil || b.RetryAfter == nil {
		t.Errorf("status.deployment %+v, middleware %+v, build %+v; want the old image, no rebuild recorded, a retry after backoff", fn.Status.Deployment, fn.Status.Middleware, b)
	}
	if svc := getService(t, ns, "hello"); svc.Status.LatestReadyRevisionName != "hello-00001" || len(svc.Status.Traffic) != 1 || svc.Status.Traffic[0].RevisionName != "hello-00001" {
		t.Errorf("Knative Service status %+v, want hello-00001 serving it all", svc.Status)
	}
	eventually(t, 10*time.Second, func() string {
		if ev := eventsOf(t, ns, "hello"); len(ev["BuildFailed"]) == 0 {
			return fmt.Sprintf("events %v, want BuildFailed", ev)
		}
		return ""
	})
}

func TestOperator_RebuildBudget(t *testing.T) {
	const budget = 2
	names := []string{"f1", "f2", "f3", "f4", "f5"}
	ns := newNamespace(t)
	f := newRebuildFixture(t, ns, names...)
	var mu sync.Mutex
	firstSeen := map[string]time.Time{}
	sim := tekton.StartKubelet(t, restConfig, tekton.Options{
		Namespaces: []string{ns}, Registry: f.reg, Decide: succeed(t),
		// Each build runs for at least 700ms, so that the queue fills.
		Hold: func(pr *pipelinev1.PipelineRun) bool {
			mu.Lock()
			defer mu.Unlock()
			if _, ok := firstSeen[pr.Name]; !ok {
				firstSeen[pr.Name] = time.Now()
			}
			return time.Since(firstSeen[pr.Name]) > 700*time.Millisecond
		},
	})
	startOperatorWith(t, rebuildConfig(budget), ns)
	for _, name := range names {
		f.createFunction(t, name, nil)
	}

	// Watch the cluster as the builds go: never more than the budget running, and the
	// others shown queued with their position.
	var maxRunning, maxPosition atomic.Int32
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			var runs pipelinev1.PipelineRunList
			if err := k8sClient.List(context.Background(), &runs, client.InNamespace(ns)); err == nil {
				n := int32(0)
				for _, pr := range runs.Items {
					if !pr.IsDone() {
						n++
					}
				}
				if n > maxRunning.Load() {
					maxRunning.Store(n)
				}
			}
			var fns v1alpha1.FunctionList
			if err := k8sClient.List(context.Background(), &fns, client.InNamespace(ns)); err == nil {
				for _, fn := range fns.Items {
					if b := fn.Status.Build; b != nil && b.Phase == v1alpha1.BuildPhaseQueued && b.QueuePosition > maxPosition.Load() {
						maxPosition.Store(b.QueuePosition)
					}
				}
			}
		}
	}()
	for _, name := range names {
		eventually(t, 120*time.Second, rebuilt(t, ns, name))
	}
	close(stop)
	<-done

	if got := sim.MaxRunning(); got != budget {
		t.Errorf("at most %d PipelineRuns ran at once, want exactly the budget %d", got, budget)
	}
	if got := maxRunning.Load(); got > budget {
		t.Errorf("%d unfinished PipelineRuns seen at once, budget %d", got, budget)
	}
	if got := maxPosition.Load(); got < 2 {
		t.Errorf("the highest queue position shown was %d, want at least 2 with %d Functions and a budget of %d", got, len(names), budget)
	}
	if runs := pipelineRuns(t, ns); len(runs) != len(names) {
		t.Errorf("%d PipelineRuns, want one per Function (%d)", len(runs), len(names))
	}
	for _, name := range names {
		if ev := eventsOf(t, ns, name); len(ev["Rebuilt"]) != 1 {
			t.Errorf("Function %s: events %v, want one Rebuilt", name, ev)
		}
	}
}

func TestOperator_RebuildAdoptedAfterRestart(t *testing.T) {
	ns := newNamespace(t)
	f := newRebuildFixture(t, ns, "hello")
	var release atomic.Bool
	sim := tekton.StartKubelet(t, restConfig, tekton.Options{
		Namespaces: []string{ns}, Registry: f.reg, Decide: succeed(t),
		Hold: func(*pipelinev1.PipelineRun) bool { return release.Load() },
	})
	_, _, stopFirst := startOperatorWith(t, rebuildConfig(2), ns)
	f.createFunction(t, "hello", nil)
	eventually(t, 60*time.Second, func() string {
		fn := getFunction(t, ns, "hello")
		if b := fn.Status.Build; b == nil || b.Phase != v1alpha1.BuildPhaseRunning || b.PipelineRun == "" {
			return fmt.Sprintf("status.build = %+v, want Running", fn.Status.Build)
		}
		return ""
	})
	running := getFunction(t, ns, "hello").Status.Build

	// The operator restarts in the middle of the build.
	stopFirst()
	startOperatorWith(t, rebuildConfig(2), ns)
	time.Sleep(2 * time.Second)
	fn := getFunction(t, ns, "hello")
	if b := fn.Status.Build; b == nil || b.ID != running.ID || b.Phase != v1alpha1.BuildPhaseRunning {
		t.Errorf("after the restart status.build = %+v, want build %s still Running", b, running.ID)
	}
	if c := fn.Status.GetCondition(v1alpha1.FunctionConditionMiddlewareUpToDate); c.Reason != v1alpha1.ReasonRebuilding {
		t.Errorf("MiddlewareUpToDate = %+v, want Rebuilding", c)
	}

	release.Store(true)
	eventually(t, 60*time.Second, rebuilt(t, ns, "hello"))
	if runs := pipelineRuns(t, ns); len(runs) != 1 || len(sim.Started()) != 1 {
		t.Errorf("%d PipelineRuns (%d started), want the one adopted across the restart", len(runs), len(sim.Started()))
	}
	if b := getFunction(t, ns, "hello").Status.Build; b.ID != running.ID {
		t.Errorf("build %s finished, want the adopted %s", b.ID, running.ID)
	}
}

func TestOperator_RebuildFailureBacksOff(t *testing.T) {
	ns := newNamespace(t)
	f := newRebuildFixture(t, ns, "hello")
	sim := tekton.StartKubelet(t, restConfig, tekton.Options{
		Namespaces: []string{ns}, Registry: f.reg,
		Decide: func(*pipelinev1.PipelineRun) tekton.Outcome {
			return tekton.Outcome{Fail: true, FailedTask: "build", FailedStep: "create"}
		},
	})
	startOperatorWith(t, rebuildConfig(2), ns)
	f.createFunction(t, "hello", nil)

	// failed waits for the n-th failure in a row and returns the Function as it was then.
	// The next retry may start as soon as its backoff ends, so what follows checks
	// against that moment instead of assuming nothing happened since.
	failed := func(n int32) *v1alpha1.Function {
		var fn *v1alpha1.Function
		eventually(t, 120*time.Second, func() string {
			fn = getFunction(t, ns, "hello")
			c := fn.Status.GetCondition(v1alpha1.FunctionConditionMiddlewareUpToDate)
			if b := fn.Status.Build; b == nil || b.Phase != v1alpha1.BuildPhaseFailed || b.Failures != n || c.Reason != v1alpha1.ReasonBuildFailed {
				return fmt.Sprintf("build = %+v, MiddlewareUpToDate = %+v; want failure %d", fn.Status.Build, c, n)
			}
			return ""
		})
		return fn
	}
	fn := failed(1)
	b := fn.Status.Build
	if b.FailedTask != "build" || b.FailedStep != "create" || !strings.Contains(b.Message, `"step-create" exited with code 1`) {
		t.Errorf("status.build = %+v, want the failing task, step and message", b)
	}
	if d := b.RetryAfter.Sub(b.CompletionTime.Time); d != 2*time.Second {
		t.Errorf("first retry after %s, want the 2s backoff", d)
	}
	c := fn.Status.GetCondition(v1alpha1.FunctionConditionMiddlewareUpToDate)
	for _, want := range []string{"in task build, step create", "exited with code 1", "keeps serving"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("MiddlewareUpToDate message %q does not say %q", c.Message, want)
		}
	}
	svc := &servingv1.Service{}
	if err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "hello"}, svc); err != nil {
		t.Fatal(err)
	}
	if img := svc.Spec.Template.Spec.Containers[0].Image; img != f.oldImage["hello"] {
		t.Errorf("the Service runs %s after a failed build, want the old image %s", img, f.oldImage["hello"])
	}
	var firstFailed []string
	for _, m := range eventsOf(t, ns, "hello")["BuildFailed"] {
		if strings.HasPrefix(m, "build "+b.ID+" failed") {
			firstFailed = append(firstFailed, m)
		}
	}
	if len(firstFailed) != 1 || !strings.Contains(firstFailed[0], "in task build, step create (1 in a row)") {
		t.Errorf("BuildFailed events of build %s = %q, want one naming the task and step", b.ID, firstFailed)
	}

	// The retry waits for the backoff, and the next one waits twice as long.
	b2 := failed(2).Status.Build
	if d := b2.RetryAfter.Sub(b2.CompletionTime.Time); d != 4*time.Second {
		t.Errorf("second retry after %s, want 4s", d)
	}
	runs := pipelineRuns(t, ns)
	sort.Slice(runs, func(i, j int) bool { return runs[i].CreationTimestamp.Before(&runs[j].CreationTimestamp) })
	// Timestamps have second precision. A third run may exist if the second
	// backoff ended meanwhile; none may start before its backoff ends.
	notBefore := []*metav1.Time{nil, b.RetryAfter, b2.RetryAfter}
	if len(runs) < 2 || len(runs) > len(notBefore) {
		t.Fatalf("%d PipelineRuns after two failures, want 2 (3 once the second backoff ended)", len(runs))
	}
	for i, run := range runs {
		if at := notBefore[i]; at != nil && run.CreationTimestamp.Time.Before(at.Add(-time.Second)) {
			t.Errorf("run %d started at %s, before its backoff ended at %s: a hot loop", i+1, run.CreationTimestamp, at)
		}
	}
	if n := len(sim.Started()); n < 2 {
		t.Errorf("%d runs started by Tekton, want at least the 2 that failed", n)
	}
}

func TestOperator_NoRebuildWhenOffOrOutOfBudget(t *testing.T) {
	ns := newNamespace(t)
	f := newRebuildFixture(t, ns, "off", "paused")
	sim := tekton.StartKubelet(t, restConfig, tekton.Options{Namespaces: []string{ns}, Registry: f.reg, Decide: succeed(t)})
	system, _, _ := startOperatorWith(t, rebuildConfig(0), ns) // a budget of 0 pauses rebuilds
	no := false
	f.createFunction(t, "off", &no)
	f.createFunction(t, "paused", nil)

	eventually(t, 30*time.Second, condition(ns, "off", v1alpha1.FunctionConditionMiddlewareUpToDate, corev1.ConditionFalse, v1alpha1.ReasonAutoUpdateDisabled))
	eventually(t, 30*time.Second, condition(ns, "paused", v1alpha1.FunctionConditionMiddlewareUpToDate, corev1.ConditionFalse, v1alpha1.ReasonRebuildQueued))
	paused := getFunction(t, ns, "paused")
	if b := paused.Status.Build; b == nil || b.Phase != v1alpha1.BuildPhaseQueued || b.QueuePosition != 1 || b.QueuedAt == nil {
		t.Errorf("status.build = %+v, want Queued at position 1", b)
	}
	if c := paused.Status.GetCondition(v1alpha1.FunctionConditionMiddlewareUpToDate); !strings.Contains(c.Message, "position 1 of 1; at most 0 rebuilds") {
		t.Errorf("MiddlewareUpToDate message = %q", c.Message)
	}
	time.Sleep(time.Second)
	if runs := pipelineRuns(t, ns); len(runs) != 0 {
		t.Fatalf("%d PipelineRuns with auto-update off or no budget, want 0", len(runs))
	}

	// Raising the budget in the ConfigMap lets the queued Function through; the one
	// with auto-update off stays as it is.
	if err := k8sClient.Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: system, Name: config.ConfigMapName},
		Data: map[string]string{
			config.KeyMaxConcurrentBuilds: "1", config.KeyBuildBackoff: "2s",
			config.KeyBuilderImagePrefix + "pack.go": pinnedBuilder,
		},
	}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, rebuilt(t, ns, "paused"))
	for _, pr := range pipelineRuns(t, ns) {
		if pr.Labels[resources.LabelFunction] != "paused" {
			t.Errorf("PipelineRun %s for %s, want none but the paused Function's", pr.Name, pr.Labels[resources.LabelFunction])
		}
	}
	if n := len(sim.Started()); n != 1 {
		t.Errorf("%d runs started, want 1", n)
	}
}

func TestOperator_FunctionDeletedMidBuild(t *testing.T) {
	ns := newNamespace(t)
	f := newRebuildFixture(t, ns, "first", "second")
	tekton.StartKubelet(t, restConfig, tekton.Options{
		Namespaces: []string{ns}, Registry: f.reg, Decide: succeed(t),
		// The first Function's build never ends on its own.
		Hold: func(pr *pipelinev1.PipelineRun) bool { return pr.Labels[resources.LabelFunction] != "first" },
	})
	startOperatorWith(t, rebuildConfig(1), ns)
	f.createFunction(t, "first", nil)
	eventually(t, 60*time.Second, func() string {
		if b := getFunction(t, ns, "first").Status.Build; b == nil || b.Phase != v1alpha1.BuildPhaseRunning {
			return fmt.Sprintf("first: status.build = %+v", b)
		}
		return ""
	})
	f.createFunction(t, "second", nil)
	eventually(t, 30*time.Second, condition(ns, "second", v1alpha1.FunctionConditionMiddlewareUpToDate, corev1.ConditionFalse, v1alpha1.ReasonRebuildQueued))

	if err := k8sClient.Delete(context.Background(), &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "first"}}); err != nil {
		t.Fatal(err)
	}
	// The build of the deleted Function is stopped (func's provider deletes its
	// PipelineRun) and its slot goes to the queued one.
	eventually(t, 60*time.Second, func() string {
		for _, pr := range pipelineRuns(t, ns) {
			if pr.Labels[resources.LabelFunction] == "first" {
				return "the deleted Function's PipelineRun " + pr.Name + " still exists"
			}
		}
		return ""
	})
	eventually(t, 60*time.Second, rebuilt(t, ns, "second"))

	// Nothing of the deleted Function's builds is left; the other's objects stay.
	// func names them after a hash of the function's name: they are found by label.
	for _, list := range []client.ObjectList{&corev1.SecretList{}, &corev1.PersistentVolumeClaimList{}, &pipelinev1.PipelineList{}} {
		eventually(t, 30*time.Second, func() string {
			if err := k8sClient.List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{resources.LabelFunction: "first"}); err != nil {
				return err.Error()
			}
			items, err := meta.ExtractList(list)
			if err != nil {
				return err.Error()
			}
			for _, it := range items {
				// A PVC keeps its kubernetes.io/pvc-protection finalizer here: no
				// controller-manager runs to remove it, so deleted means being deleted.
				if o := it.(client.Object); o.GetDeletionTimestamp() == nil {
					return fmt.Sprintf("%T %s of the deleted Function", o, o.GetName())
				}
			}
			return ""
		})
	}
	registrySecretOfBuild(t, ns, "second") // the other Function's stays
	// The deleted Function is not reconciled back to life: no new build appears.
	time.Sleep(time.Second)
	for _, pr := range pipelineRuns(t, ns) {
		if pr.Labels[resources.LabelFunction] == "first" {
			t.Errorf("PipelineRun %s of the deleted Function", pr.Name)
		}
	}
}

func TestOperator_RebuildWithPrivateRegistry(t *testing.T) {
	user, password := registryUser, registryPassword
	pinnedDeployer := "registry.example/knative/func-utils@sha256:" + strings.Repeat("ab", 32)
	pinnedBash := "registry.example/library/bash@sha256:" + strings.Repeat("cd", 32)
	ns := newNamespace(t)
	// Simulated: the ServiceAccount controller (kube-controller-manager, which envtest
	// has not) creates every namespace's "default" ServiceAccount.
	if err := k8sClient.Create(context.Background(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}}); err != nil {
		t.Fatal(err)
	}
	reg := registrytest.StartPrivate(t, user, password)
	f := newRebuildFixtureWith(t, ns, reg, "hello")
	if err := k8sClient.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "registry"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: reg.DockerConfigJSON()},
	}); err != nil {
		t.Fatal(err)
	}
	tekton.StartKubelet(t, restConfig, tekton.Options{Namespaces: []string{ns}, Registry: reg, Decide: succeed(t)})
	// The deployer image is read from the ConfigMap when the operator starts; the
	// bash image at each build.
	startOperatorWithConfigMap(t, rebuildConfig(2), map[string]string{config.KeyDeployerImage: pinnedDeployer, config.KeyBashImage: pinnedBash}, ns)
	f.createFunctionWith(t, "hello", nil, "registry")
	eventually(t, 60*time.Second, rebuilt(t, ns, "hello"))

	// The pipeline pushes with the Function's registry credentials...
	secret := registrySecretOfBuild(t, ns, "hello")
	content := string(secret.Data["config.json"]) // func writes an Opaque Secret with a Docker config.json
	if !strings.Contains(content, reg.Host) || !strings.Contains(content, password) && !strings.Contains(content, base64Auth(user, password)) {
		t.Errorf("the pipeline's registry Secret does not hold the credentials for %s", reg.Host)
	}
	// ...the function's ServiceAccount may pull the new image...
	sa := &corev1.ServiceAccount{}
	if err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "default"}, sa); err != nil {
		t.Fatal(err)
	}
	if len(sa.ImagePullSecrets) != 1 || sa.ImagePullSecrets[0].Name != "registry" {
		t.Errorf("imagePullSecrets of the function's ServiceAccount = %v, want the registry Secret", sa.ImagePullSecrets)
	}
	// ...and the pipeline's steps run the pinned func-utils and bash images.
	pipeline := buildPipeline(t, ns, "hello")
	deployImages := map[string]string{}
	for _, task := range pipeline.Spec.Tasks {
		if task.TaskSpec != nil {
			for _, step := range task.TaskSpec.Steps {
				deployImages[task.Name+"/"+step.Name] = step.Image
			}
		}
	}
	if got := deployImages["build/func-deploy"]; got != pinnedDeployer {
		t.Errorf("the deploy step runs %q, want the pinned %q (steps: %v)", got, pinnedDeployer, deployImages)
	}
	for _, step := range []string{"build/prepare", "build/results"} {
		if got := deployImages[step]; got != pinnedBash {
			t.Errorf("step %s runs %q, want the pinned %q (steps: %v)", step, got, pinnedBash, deployImages)
		}
	}

	// No Secret value in the Function's status or events.
	fn := getFunction(t, ns, "hello")
	status, _ := json.Marshal(fn.Status)
	for _, leak := range []string{password, base64Auth(user, password)} {
		if strings.Contains(string(status), leak) {
			t.Errorf("the status holds a registry credential")
		}
		for _, msgs := range eventsOf(t, ns, "hello") {
			for _, m := range msgs {
				if strings.Contains(m, leak) {
					t.Errorf("an event holds a registry credential")
				}
			}
		}
	}
}

// buildPipeline returns the Pipeline of function's builds (func names it after a
// hash of the function's name; the operator's label names the Function).
func buildPipeline(t *testing.T, ns, function string) *pipelinev1.Pipeline {
	t.Helper()
	var list pipelinev1.PipelineList
	if err := k8sClient.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels{resources.LabelFunction: function}); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Fatalf("%d Pipelines of function %s, want 1", len(list.Items), function)
	}
	return &list.Items[0]
}

// registrySecretOfBuild returns the registry Secret func wrote for function's builds:
// the one Secret of its builds that does not hold git credentials.
func registrySecretOfBuild(t *testing.T, ns, function string) *corev1.Secret {
	t.Helper()
	var list corev1.SecretList
	if err := k8sClient.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels{resources.LabelFunction: function}); err != nil {
		t.Fatal(err)
	}
	var found []corev1.Secret
	for _, s := range list.Items {
		if s.Labels[funclib.LabelGitCredentials] == "" {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d registry Secrets of function %s's builds, want 1", len(found), function)
	}
	return &found[0]
}

func base64Auth(user, password string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
}

// TestOperator_NamespaceNotOnboarded: as shipped (the operator's ServiceAccount and
// only the RBAC of config/), an outdated function of a namespace that has not
// onboarded the operator is not rebuilt, and says why and how to grant it, as does a
// Function whose registry Secret the operator may not read; nothing is created there.
// Once the namespace applies config/namespace/onboard.yaml, both go on by themselves:
// the rebuild runs, as the build ServiceAccount (the positive control).
func TestOperator_NamespaceNotOnboarded(t *testing.T) {
	ns := newBareNamespace(t)
	f := newRebuildFixture(t, ns, "hello", "private")
	if err := k8sClient.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "registry"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{}}`)},
	}); err != nil {
		t.Fatal(err)
	}
	tekton.StartKubelet(t, restConfig, tekton.Options{Namespaces: []string{ns}, Registry: f.reg, Decide: succeed(t)})
	cfg := rebuildConfig(2)
	cfg.CheckInterval = 3 * time.Second
	startOperatorWith(t, cfg, ns)
	f.createFunction(t, "hello", nil)
	f.createFunctionWith(t, "private", nil, "registry")

	how := "a namespace admin grants it with `kubectl apply -n " + ns + " -f config/namespace/onboard.yaml`"
	eventually(t, 30*time.Second, func() string {
		for _, name := range []string{"hello", "private"} {
			c := getFunction(t, ns, name).Status.GetCondition(v1alpha1.FunctionConditionMiddlewareUpToDate)
			if c == nil || c.Reason != v1alpha1.ReasonNamespaceNotOnboarded || !strings.Contains(c.Message, how) {
				return fmt.Sprintf("%s: MiddlewareUpToDate = %+v, want reason %s saying %q", name, c, v1alpha1.ReasonNamespaceNotOnboarded, how)
			}
		}
		return ""
	})
	hello := getFunction(t, ns, "hello")
	if c := hello.Status.GetCondition(v1alpha1.FunctionConditionMiddlewareUpToDate); c.Status != corev1.ConditionFalse ||
		!strings.Contains(c.Message, "the operator holds none of ClusterRole func-operator-namespace here (RoleBinding func-operator-namespace)") {
		t.Errorf("MiddlewareUpToDate = %s %q, want False naming the missing grants", c.Status, c.Message)
	}
	if c := hello.Status.GetCondition(v1alpha1.FunctionConditionStalled); c == nil || !c.IsTrue() {
		t.Errorf("Stalled = %+v, want True", c)
	}
	if hello.Status.Build != nil {
		t.Errorf("status.build = %+v, want none: a Function that may not build holds no queue place", hello.Status.Build)
	}
	if n := len(pipelineRuns(t, ns)); n != 0 {
		t.Fatalf("%d PipelineRuns in a namespace that did not onboard the operator", n)
	}
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, ns) && strings.Contains(line, "forbidden") && !strings.Contains(line, "NamespaceNotOnboarded") {
			t.Errorf("a raw Forbidden in the log: %s", line)
		}
	}

	if err := envtest.Onboard(context.Background(), restConfig, ns); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, rebuilt(t, ns, "hello"))
	eventually(t, 30*time.Second, func() string {
		c := getFunction(t, ns, "private").Status.GetCondition(v1alpha1.FunctionConditionMiddlewareUpToDate)
		if c != nil && c.Reason == v1alpha1.ReasonNamespaceNotOnboarded {
			return fmt.Sprintf("private: %+v, want the registry Secret read now", c)
		}
		return ""
	})
	runs := pipelineRuns(t, ns)
	if len(runs) != 1 {
		t.Fatalf("%d PipelineRuns after onboarding, want 1", len(runs))
	}
	if sa := pipelineRunServiceAccount(t, ns, runs[0].Name); sa != "func-operator-builder" {
		t.Errorf("the rebuild ran as %q, want func-operator-builder", sa)
	}
}

// TestOperator_BuildTimeout: a PipelineRun that nothing ever finishes (the Tekton
// controller down, a task that never resolves) holds the budget's only slot until
// buildTimeout: then its build fails with a reason that says so, its run is deleted,
// and the function queued behind it is rebuilt.
func TestOperator_BuildTimeout(t *testing.T) {
	ns := newNamespace(t)
	f := newRebuildFixture(t, ns, "stuck", "next")
	tekton.StartKubelet(t, restConfig, tekton.Options{
		Namespaces: []string{ns}, Registry: f.reg, Decide: succeed(t),
		// Simulated: no controller ever finishes the runs of "stuck".
		Hold: func(pr *pipelinev1.PipelineRun) bool { return pr.Labels[resources.LabelFunction] != "stuck" },
	})
	cfg := rebuildConfig(1)
	cfg.BuildTimeout, cfg.BuildBackoff = 10*time.Second, time.Hour
	startOperatorWith(t, cfg, ns)
	f.createFunction(t, "stuck", nil)
	eventually(t, 30*time.Second, func() string {
		if b := getFunction(t, ns, "stuck").Status.Build; b == nil || b.Phase != v1alpha1.BuildPhaseRunning {
			return fmt.Sprintf("stuck: build %+v, want Running", b)
		}
		return ""
	})
	f.createFunction(t, "next", nil)
	eventually(t, 10*time.Second, func() string {
		if b := getFunction(t, ns, "next").Status.Build; b == nil || b.Phase != v1alpha1.BuildPhaseQueued {
			return fmt.Sprintf("next: build %+v, want Queued behind stuck", b)
		}
		return ""
	})

	eventually(t, 60*time.Second, rebuilt(t, ns, "next"))
	b := getFunction(t, ns, "stuck").Status.Build
	if b == nil || b.Phase != v1alpha1.BuildPhaseFailed || !strings.Contains(b.Message, "did not finish within 10s (ConfigMap func-operator-config, key buildTimeout)") {
		t.Errorf("stuck: build %+v, want Failed past buildTimeout", b)
	}
	for _, pr := range pipelineRuns(t, ns) {
		if pr.Labels[resources.LabelFunction] == "stuck" && pr.DeletionTimestamp.IsZero() {
			t.Errorf("PipelineRun %s of the timed-out build is left", pr.Name)
		}
	}
}

// TestOperator_GitOutageKeepsLastKnownGood, as a user would see it, for each fault of
// a git host injected for real (a 503, connections reset, requests that hang past
// gitTimeout): a Ready function stays Ready (no flap, no rebuild), says so in
// SourceReachable (False, severity Warning, reason BranchListFailed, or GitTimedOut) and an Event; the
// outage ends by itself. One that lasts past outageGrace turns SourceReady (and so
// Ready) False, as before.
func TestOperator_GitOutageKeepsLastKnownGood(t *testing.T) {
	for _, tt := range []struct {
		name  string
		fault int
		says  string // in SourceReachable's message
		// reason is SourceReachable's.
		reason string
	}{
		{name: "503", fault: http.StatusServiceUnavailable, says: "503", reason: v1alpha1.ReasonBranchListFailed},
		{name: "connection reset", fault: gitserver.Reset, says: "connection reset", reason: v1alpha1.ReasonBranchListFailed},
		{name: "hang past gitTimeout", fault: gitserver.Hang, says: "timed out (ConfigMap key gitTimeout)", reason: v1alpha1.ReasonGitTimedOut},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ns := newNamespace(t)
			f := newRebuildFixture(t, ns, "hello")
			tekton.StartKubelet(t, restConfig, tekton.Options{Namespaces: []string{ns}, Registry: f.reg, Decide: succeed(t)})
			cfg := rebuildConfig(1)
			cfg.CheckInterval, cfg.GitTimeout = time.Second, 2*time.Second // below the ConfigMap's minimum: a test's own store
			_, store, stop := startOperatorWith(t, cfg, ns)
			t.Cleanup(func() { stop(); f.srv.FailWith(0) }) // a hanging request ends with its client
			f.createFunction(t, "hello", nil)
			eventually(t, 60*time.Second, rebuilt(t, ns, "hello"))
			eventually(t, 20*time.Second, ready(t, ns, "hello"))
			runsBefore := len(pipelineRuns(t, ns))

			f.srv.FailWith(tt.fault)
			eventually(t, 20*time.Second, condition(ns, "hello", v1alpha1.FunctionConditionSourceReachable, corev1.ConditionFalse, tt.reason))
			// Several checks into the outage: Ready never left True.
			deadline := time.Now().Add(5 * time.Second)
			for time.Now().Before(deadline) {
				fn := getFunction(t, ns, "hello")
				if c := fn.Status.GetCondition(apis.ConditionReady); c == nil || !c.IsTrue() {
					t.Fatalf("Ready = %+v during a git outage within outageGrace, want True", c)
				}
				time.Sleep(200 * time.Millisecond)
			}
			fn := getFunction(t, ns, "hello")
			c := fn.Status.GetCondition(v1alpha1.FunctionConditionSourceReachable)
			if c.Severity != apis.ConditionSeverityWarning || !strings.Contains(c.Message, tt.says) || !strings.Contains(c.Message, "the last known good source") {
				t.Errorf("SourceReachable = %+v, want severity Warning naming %q and the last known good source", c, tt.says)
			}
			if fn.Status.Git.UnreachableSince == nil {
				t.Error("status.git.unreachableSince not set during the outage")
			}
			if ev := eventsOf(t, ns, "hello"); len(ev[tt.reason]) != 1 {
				t.Errorf("events %v, want one %s Warning for the outage", ev, tt.reason)
			}
			if n := len(pipelineRuns(t, ns)); n != runsBefore {
				t.Errorf("%d PipelineRuns after the outage began, want %d: nothing is built from a source that could not be read", n, runsBefore)
			}

			f.srv.FailWith(0)
			eventually(t, 20*time.Second, condition(ns, "hello", v1alpha1.FunctionConditionSourceReachable, corev1.ConditionTrue, v1alpha1.ReasonReachable))
			if fn := getFunction(t, ns, "hello"); fn.Status.Git.UnreachableSince != nil {
				t.Errorf("unreachableSince = %v after the outage, want none", fn.Status.Git.UnreachableSince)
			}
			if tt.fault != http.StatusServiceUnavailable {
				return
			}
			// Past outageGrace, the outage shows in Ready.
			cfg.OutageGrace = 2 * time.Second
			store.Set(cfg)
			f.srv.FailWith(http.StatusBadGateway)
			eventually(t, 30*time.Second, condition(ns, "hello", v1alpha1.FunctionConditionSourceReady, corev1.ConditionFalse, v1alpha1.ReasonBranchListFailed))
			if c := getFunction(t, ns, "hello").Status.GetCondition(apis.ConditionReady); c == nil || c.IsTrue() {
				t.Errorf("Ready = %+v past outageGrace, want it to show the outage", c)
			}
		})
	}
}

// TestOperator_RegistryOutageKeepsLastKnownGood: the operator restarts (its image
// cache empty) while the registry of a Ready function answers 503. The function stays
// Ready, says so in RegistryReachable (False, severity Warning) and an Event, and
// rebuilds nothing; once the registry answers, RegistryReachable is True again.
func TestOperator_RegistryOutageKeepsLastKnownGood(t *testing.T) {
	ns := newNamespace(t)
	f := newRebuildFixture(t, ns, "hello")
	tekton.StartKubelet(t, restConfig, tekton.Options{Namespaces: []string{ns}, Registry: f.reg, Decide: succeed(t)})
	cfg := rebuildConfig(1)
	cfg.CheckInterval = time.Second // below the ConfigMap's minimum: a test's own store
	_, _, stop := startOperatorWith(t, cfg, ns)
	f.createFunction(t, "hello", nil)
	eventually(t, 60*time.Second, rebuilt(t, ns, "hello"))
	eventually(t, 20*time.Second, ready(t, ns, "hello"))
	runsBefore := len(pipelineRuns(t, ns))

	stop()
	f.reg.FailWith(http.StatusServiceUnavailable)
	startOperatorWith(t, cfg, ns)
	eventually(t, 20*time.Second, condition(ns, "hello", v1alpha1.FunctionConditionRegistryReachable, corev1.ConditionFalse, v1alpha1.ReasonRegistryUnreachable))
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if c := getFunction(t, ns, "hello").Status.GetCondition(apis.ConditionReady); c == nil || !c.IsTrue() {
			t.Fatalf("Ready = %+v during a registry outage within outageGrace, want True", c)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if c := getFunction(t, ns, "hello").Status.GetCondition(v1alpha1.FunctionConditionRegistryReachable); c.Severity != apis.ConditionSeverityWarning ||
		!strings.Contains(c.Message, "the last known middleware") {
		t.Errorf("RegistryReachable = %+v, want severity Warning naming the last known middleware", c)
	}
	if ev := eventsOf(t, ns, "hello"); len(ev[v1alpha1.ReasonRegistryUnreachable]) == 0 {
		t.Errorf("events %v, want a RegistryUnreachable Warning", ev)
	}
	if n := len(pipelineRuns(t, ns)); n != runsBefore {
		t.Errorf("%d PipelineRuns during the outage, want %d", n, runsBefore)
	}
	f.reg.FailWith(0)
	eventually(t, 20*time.Second, condition(ns, "hello", v1alpha1.FunctionConditionRegistryReachable, corev1.ConditionTrue, v1alpha1.ReasonReachable))
}

// ready is True when the Function is Ready.
func ready(t *testing.T, ns, name string) func() string {
	return func() string {
		if c := getFunction(t, ns, name).Status.GetCondition(apis.ConditionReady); c == nil || !c.IsTrue() {
			return fmt.Sprintf("Ready = %+v, want True", c)
		}
		return ""
	}
}

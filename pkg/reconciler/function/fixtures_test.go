package function

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"testing"

	kedav1alpha1 "github.com/kedacore/http-add-on/operator/apis/http/v1alpha1"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/go-logr/logr"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/git"
	"github.com/fnops/func-operator/pkg/knative"
	"github.com/fnops/func-operator/pkg/rebuild"
	"github.com/fnops/func-operator/pkg/reconciler/function/resources"
	"github.com/fnops/func-operator/pkg/registry"
	"github.com/fnops/func-operator/pkg/rerror"
	"github.com/fnops/func-operator/pkg/tenancy"
	"github.com/fnops/func-operator/pkg/workload"
	"github.com/fnops/func-operator/test/envtest"
	"github.com/fnops/func-operator/test/gitserver"
)

// Credentials the test repositories require. They must never show up in a status,
// an event or an error.
const (
	testToken    = "tok-9f8e7d6c5b4a-secret"
	testUser     = "alice"
	testPassword = "pw-1a2b3c4d5e-secret"
	// envSecret is in the operator's environment during the tests: func.yaml must
	// never be able to read it.
	envSecret = "env-value-should-never-leak"
)

func funcYAML(name, rt string) string {
	return fmt.Sprintf("specVersion: 0.36.0\nname: %s\nruntime: %s\ninvoke: http\nbuild:\n  builder: pack\n", name, rt)
}

// gitFixture is a set of real repositories served over smart HTTP.
type gitFixture struct {
	http                          *gitserver.HTTPServer
	public, private, basic, trunk *gitserver.Repo
	// revs is for spec.repository.revision: branch "both" and tag "both" (annotated)
	// name different commits, and tag "only-tag" (lightweight) is a tag alone; both
	// tags point at the tip of branch "tagsrc".
	revs *gitserver.Repo
}

func newGitFixture(t *testing.T) *gitFixture {
	t.Helper()
	root := gitserver.NewRepoRoot(t)
	f := &gitFixture{http: gitserver.StartHTTP(t, root)}

	f.public = gitserver.CreateRepo(t, root, "public")
	f.public.Commit(t, "main", map[string]string{
		"func.yaml":          funcYAML("hello", "go"),
		"fns/echo/func.yaml": funcYAML("echo", "node"),
		"fns/README.md":      "functions of the monorepo\n",
		"notafunction/x.txt": "no func.yaml here\n",
		"fns/linked/x.txt":   "x\n",
		"fns/bad/func.yaml":  "name: [unclosed\n",
		"fns/unsafe/func.yaml": funcYAML("unsafe", "go") +
			"run:\n  envs:\n  - name: LEAK\n    value: '{{ env:FUNC_OPERATOR_TEST_SECRET }}'\n",
	}, "functions")
	f.public.Tag(t, "v1.0.0", f.public.Head(t, "main"), true)

	f.private = gitserver.CreateRepo(t, root, "private")
	f.private.Commit(t, "main", map[string]string{"func.yaml": funcYAML("private", "python")}, "private function")
	f.http.RequireToken("private", testToken)

	f.basic = gitserver.CreateRepo(t, root, "basic")
	f.basic.Commit(t, "main", map[string]string{"func.yaml": funcYAML("basic", "quarkus")}, "basic-auth function")
	f.http.RequireBasicAuth("basic", testUser, testPassword)

	f.trunk = gitserver.CreateRepo(t, root, "trunk")
	f.trunk.Commit(t, "trunk", map[string]string{"func.yaml": funcYAML("trunky", "rust")}, "on trunk")
	f.trunk.SetHEAD(t, "trunk")

	f.revs = gitserver.CreateRepo(t, root, "revs")
	f.revs.Commit(t, "main", map[string]string{"func.yaml": funcYAML("rev-main", "go"), "fns/dir/func.yaml": funcYAML("in-dir", "node")}, "main")
	f.revs.Commit(t, "both", map[string]string{"func.yaml": funcYAML("branch-both", "python")}, "the branch both")
	tagged := f.revs.Commit(t, "tagsrc", map[string]string{"func.yaml": funcYAML("tagged", "rust")}, "what the tags name")
	f.revs.Tag(t, "both", tagged, true)
	f.revs.Tag(t, "only-tag", tagged, false)
	f.revs.SetHEAD(t, "main")
	return f
}

// newTestReconciler returns a Reconciler on the shared control plane. It reads
// straight from the API server (no cache), which the direct step tests rely on.
func newTestReconciler(t *testing.T, events int) (*testReconciler, *record.FakeRecorder) {
	t.Helper()
	apiServer(t)
	rec := record.NewFakeRecorder(events)
	services := &knative.Services{Reader: k8sClient}
	workloads := &workload.Workloads{Reader: k8sClient, Subscriptions: services.SubscriptionsTo}
	workloads.EnableKEDA()
	r := &testReconciler{Deps: Deps{
		Describer: funclib.NewDescriber(services).
			WithSource(funclib.DeployerRaw, workloads.Source(funclib.DeployerRaw)).
			WithSource(funclib.DeployerKeda, workloads.Source(funclib.DeployerKeda)),
		Services:  services,
		Workloads: workloads,
		Inspector: registry.NewInspector(0),
		Client:    k8sClient,
		APIReader: k8sClient,
		Recorder:  rec,
		Config:    config.NewStore(),
		Fetcher:   git.NewFetcher(t.TempDir(), 0, funclib.SourceManifests{}),
		Access:    &tenancy.NamespaceAccess{Client: k8sClient, Reader: k8sClient},
		Secrets:   &tenancy.Secrets{Reader: k8sClient},
	}}
	if fakeAPI != nil {
		r.Access = fakeAPI
	}
	r.wire()
	t.Cleanup(func() {
		if r.Deps != r.wired {
			t.Error("a dependency of the test Reconciler changed after it was wired: call wire()")
		}
	})
	return r, rec
}

// testReconciler is a Reconciler and the Deps it was built of. A test that changes a
// dependency rewires it (wire): the Reconciler keeps what New was given.
type testReconciler struct {
	*Reconciler
	Deps
	// wired is what the Reconciler was built of: a test that changed Deps since and
	// did not wire fails (newTestReconciler's cleanup).
	wired Deps
}

// wire builds the Reconciler of r.Deps again.
func (r *testReconciler) wire() { r.Reconciler, r.wired = New(r.Deps), r.Deps }

func newFunction(ns, name string, repo v1alpha1.Repository) *v1alpha1.Function {
	return &v1alpha1.Function{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.FunctionSpec{Repository: repo},
	}
}

func secretRef(name string) *corev1.LocalObjectReference {
	return &corev1.LocalObjectReference{Name: name}
}

func mustCreate(t *testing.T, objs ...client.Object) {
	t.Helper()
	apiServer(t)
	for _, o := range objs {
		if err := k8sClient.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

func getFunction(t *testing.T, ns, name string) *v1alpha1.Function {
	t.Helper()
	apiServer(t)
	fn := &v1alpha1.Function{}
	if err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, fn); err != nil {
		t.Fatalf("getting Function %s/%s: %v", ns, name, err)
	}
	return fn
}

func reconcileOnce(t *testing.T, r reconcile.Reconciler, ns, name string) (reconcile.Result, error) {
	t.Helper()
	return r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}})
}

// asOperator is a client with the operator's identity and only the RBAC of config/.
func asOperator(t *testing.T) client.Client {
	t.Helper()
	if fakeAPI != nil {
		t.Fatal("asOperator needs the control plane's authorizer: the test cannot run on the fake client")
	}
	apiServer(t)
	return envtest.OperatorClient(t, restConfig, k8sClient.Scheme())
}

func onboard(t *testing.T, ns string) {
	t.Helper()
	if fakeAPI != nil {
		fakeAPI.mu.Lock()
		fakeAPI.onboarded[ns] = true
		fakeAPI.mu.Unlock()
		return
	}
	apiServer(t)
	if err := envtest.Onboard(context.Background(), restConfig, ns); err != nil {
		t.Fatal(err)
	}
}

// onboardKEDA grants ns config/namespace/onboard-keda.yaml's grant too; on the fake
// client, every onboarded namespace has it.
func onboardKEDA(t *testing.T, ns string) {
	t.Helper()
	if fakeAPI != nil {
		fakeAPI.mu.Lock()
		fakeAPI.keda[ns] = true
		fakeAPI.mu.Unlock()
		return
	}
	if err := envtest.OnboardKEDA(context.Background(), restConfig, ns); err != nil {
		t.Fatal(err)
	}
}

func mustDelete(t *testing.T, o client.Object) {
	t.Helper()
	apiServer(t)
	if err := k8sClient.Delete(context.Background(), o); err != nil {
		t.Fatalf("deleting %T %s: %v", o, o.GetName(), err)
	}
}

// newBuildReconciler returns a test Reconciler that can rebuild, with a seeded queue
// of budget 2 and a Launcher that records what it runs.
func newBuildReconciler(t *testing.T) (*testReconciler, *recordingRun) {
	t.Helper()
	r, _ := newTestReconciler(t, 100)
	rec := &recordingRun{}
	r.Builds = &rebuild.Builds{
		Queue:    rebuild.NewQueue(func() int { return r.Config.Load().MaxConcurrentBuilds }, nil),
		Launcher: rebuild.NewLauncher(rec.run, nil, logr.Discard()),
		Tekton:   true,
		WorkDir:  t.TempDir(),
	}
	r.Builds.Queue.Seed(nil, nil)
	r.wire()
	return r, rec
}

// buildOutcome is what the observeBuild tests compare.
type buildOutcome struct {
	Phase, PipelineRun, FailedTask, FailedStep string
	Failures                                   int32
	Retry                                      bool // RetryAfter is set
	HoldsSlot                                  bool
	ServiceUID                                 types.UID
}

func buildOutcomeOf(r *testReconciler, fn *v1alpha1.Function) buildOutcome {
	o := buildOutcome{HoldsSlot: r.Builds.Queue.IsRunning(types.NamespacedName{Namespace: fn.Namespace, Name: fn.Name})}
	if b := fn.Status.Build; b != nil {
		o.Phase, o.PipelineRun, o.FailedTask, o.FailedStep, o.Failures = b.Phase, b.PipelineRun, b.FailedTask, b.FailedStep, b.Failures
		o.Retry = b.RetryAfter != nil
		o.ServiceUID = b.ServiceUID
	}
	return o
}

// pipelineRun is a build's PipelineRun with the status a Tekton controller would give it.
type pipelineRun struct {
	id        string
	succeeded corev1.ConditionStatus // "" for no condition yet
	message   string
	// failedTaskRun, when set, is a child TaskRun that failed in step "build" (exit 1).
	failedTaskRun string
	// missingTaskRun, when set, is a child TaskRun that does not exist.
	missingTaskRun string
	// serviceUID labels the run with the Knative Service it was started for.
	serviceUID string
	// name, when set, is the run's name instead of fn-run-<id>.
	name string
	// foreign: the run is not controlled by the Function (testFunctionUID), as the
	// API proxy makes every run of a build: a tenant's.
	foreign bool
}

// create creates it as a run of build p.id of Function "fn" of namespace ns.
func (p pipelineRun) create(t *testing.T, ns string) {
	t.Helper()
	const function = "fn"
	ctx := context.Background()
	name := p.name
	if name == "" {
		name = function + "-run-" + p.id
	}
	pr := &pipelinev1.PipelineRun{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{
			resources.LabelFunction: function, resources.LabelBuildID: p.id, resources.LabelManagedBy: resources.ManagedBy,
			resources.LabelServiceUID: p.serviceUID}},
		Spec: pipelinev1.PipelineRunSpec{PipelineRef: &pipelinev1.PipelineRef{Name: function + "-pipeline"}},
	}
	if !p.foreign {
		pr.OwnerReferences = []metav1.OwnerReference{resources.Owner(&v1alpha1.Function{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: function, UID: testFunctionUID}})}
	}
	mustCreate(t, pr)
	if p.failedTaskRun != "" {
		tr := &pipelinev1.TaskRun{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: p.failedTaskRun},
			Spec:       pipelinev1.TaskRunSpec{TaskRef: &pipelinev1.TaskRef{Name: "build"}},
		}
		mustCreate(t, tr)
		tr.Status.SetCondition(&apis.Condition{Type: apis.ConditionSucceeded, Status: corev1.ConditionFalse, Reason: "Failed", Message: "step build exited 1"})
		tr.Status.Steps = []pipelinev1.StepState{
			{Name: "prepare", ContainerState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}},
			{Name: "build", ContainerState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}},
		}
		if err := k8sClient.Status().Update(ctx, tr); err != nil {
			t.Fatal(err)
		}
	}
	if p.succeeded == "" {
		return
	}
	now := metav1.Now()
	pr.Status.StartTime = &now
	pr.Status.Conditions = duckv1.Conditions{{Type: apis.ConditionSucceeded, Status: p.succeeded, Reason: "Reason", Message: p.message}}
	if p.succeeded != corev1.ConditionUnknown {
		pr.Status.CompletionTime = &now
	}
	for _, child := range []string{p.failedTaskRun, p.missingTaskRun} {
		if child != "" {
			pr.Status.ChildReferences = append(pr.Status.ChildReferences, pipelinev1.ChildStatusReference{
				TypeMeta: runtime.TypeMeta{Kind: "TaskRun"}, Name: child, PipelineTaskName: "build"})
		}
	}
	if err := k8sClient.Status().Update(ctx, pr); err != nil {
		t.Fatal(err)
	}
}

// recordingRun stands in for func's pipelines provider in the step tests: it records
// the requests and returns at once. The operator tests run the real provider.
type recordingRun struct {
	mu   sync.Mutex
	reqs []funclib.BuildRequest
}

func (r *recordingRun) run(_ context.Context, req funclib.BuildRequest) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, req)
	return nil
}

func (r *recordingRun) requests() []funclib.BuildRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]funclib.BuildRequest(nil), r.reqs...)
}

// gone reports whether o no longer exists (or is being deleted).
func gone(t *testing.T, o client.Object) bool {
	t.Helper()
	apiServer(t)
	got := o.DeepCopyObject().(client.Object)
	err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(o), got)
	if apierrors.IsNotFound(err) {
		return true
	}
	if err != nil {
		t.Fatal(err)
	}
	return got.GetDeletionTimestamp() != nil
}

// outcome is what a step tests compares: the error's kind and reason, and a condition.
type outcome struct {
	Kind      string // "", "stalling", "waiting" or "transient"
	Reason    string // of the error
	Condition string // status/reason/severity of the condition under test
}

func outcomeOf(err error, c *v1alpha1.Function, t apis.ConditionType) outcome {
	o := outcome{Reason: rerror.Reason(err)}
	switch {
	case err == nil:
	case rerror.IsStalling(err):
		o.Kind = "stalling"
	case rerror.IsWaiting(err):
		o.Kind = "waiting"
	default:
		o.Kind = "transient"
	}
	if cond := c.Status.GetCondition(t); cond != nil {
		o.Condition = string(cond.Status) + "/" + cond.Reason + "/" + string(cond.Severity)
	}
	return o
}

// knativeService is the Knative Service func's deployer makes, with the status
// Knative Serving would give it: ready unless a test says otherwise.
type knativeService struct {
	image           string          // of the template; the revision's digest when empty
	ready           *apis.Condition // nil: no Ready condition
	staleGeneration bool            // Knative has not observed the latest spec
	readyRevision   string
	revisionDigest  string
	// createdRevision is the latest created Revision ("": none reported).
	createdRevision string
}

// create creates it as Service "hello" of namespace ns, the name the tests' func.yaml gives.
func (k knativeService) create(t *testing.T, ns string) {
	const name = "hello"
	t.Helper()
	ctx := context.Background()
	image := k.image
	if image == "" {
		image = k.revisionDigest
	}
	svc := &servingv1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{knative.FunctionNameLabel: name}},
		Spec: servingv1.ServiceSpec{ConfigurationSpec: servingv1.ConfigurationSpec{Template: servingv1.RevisionTemplateSpec{
			Spec: servingv1.RevisionSpec{PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Image: image}}}},
		}}},
	}
	mustCreate(t, svc)
	svc.Status.ObservedGeneration = svc.Generation
	if k.staleGeneration {
		svc.Status.ObservedGeneration = svc.Generation - 1
	}
	svc.Status.URL = apis.HTTP(name + "." + ns + ".example.com")
	svc.Status.Address = &duckv1.Addressable{URL: apis.HTTP(name + "." + ns + ".svc.cluster.local")}
	svc.Status.LatestReadyRevisionName = k.readyRevision
	svc.Status.LatestCreatedRevisionName = k.createdRevision
	if k.ready != nil {
		svc.Status.Conditions = duckv1.Conditions{*k.ready}
	}
	if err := k8sClient.Status().Update(ctx, svc); err != nil {
		t.Fatal(err)
	}
	if k.readyRevision == "" {
		return
	}
	rev := &servingv1.Revision{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: k.readyRevision},
		Spec:       servingv1.RevisionSpec{PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Image: image}}}},
	}
	mustCreate(t, rev)
	rev.Status.ContainerStatuses = []servingv1.ContainerStatus{{Name: "user-container", ImageDigest: k.revisionDigest}}
	if err := k8sClient.Status().Update(ctx, rev); err != nil {
		t.Fatal(err)
	}
}

// rawWorkload is what func's raw deployer (keda: the keda deployer) makes for function
// "hello", with the status the deployment controller gives a Deployment that rolled
// out (a fixture, as knativeService's status is Knative's: the step tests read what
// the controllers report; pkg/operator's tests run the real ones).
type rawWorkload struct {
	deployer string // raw or keda; raw when empty
	image    string
	label    string // the function name label; "hello" when empty
	// scaledObject, for keda: an HTTPScaledObject with this Ready status ("": none).
	scaledObject corev1.ConditionStatus
}

// create creates it in namespace ns.
func (w rawWorkload) create(t *testing.T, ns string) {
	const name = "hello"
	t.Helper()
	ctx := context.Background()
	fw := envtest.NewFuncWorkload(ns, name, w.image, cmp.Or(w.deployer, funclib.DeployerRaw))
	if w.label != "" {
		fw.Deployment.Labels[knative.FunctionNameLabel] = w.label
	}
	if w.scaledObject == "" {
		fw.Bridge, fw.ScaledObject = nil, nil
	}
	apiServer(t)
	if err := fw.Create(ctx, k8sClient); err != nil {
		t.Fatal(err)
	}
	d := fw.Deployment
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
		Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"}}}
	if err := k8sClient.Status().Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	if so := fw.ScaledObject; so != nil {
		so.Status.Conditions = []metav1.Condition{{Type: kedav1alpha1.ConditionTypeReady, Status: metav1.ConditionStatus(w.scaledObject),
			Reason: "Reconciled", LastTransitionTime: metav1.Now()}}
		if err := k8sClient.Status().Update(ctx, so); err != nil {
			t.Fatal(err)
		}
	}
}

// testTarget is what a deployer of its name deployed, in the step tables that read
// only which deployer it was.
type testTarget string

func (d testTarget) Deployer() string          { return string(d) }
func (d testTarget) UID() types.UID            { return "" }
func (d testTarget) Name() string              { return "hello" }
func (d testTarget) Labels() map[string]string { return nil }
func (d testTarget) String() string            { return "what func's " + string(d) + " deployer deployed" }

package tekton_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"knative.dev/pkg/apis"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/fnops/func-operator/test/envtest"
	"github.com/fnops/func-operator/test/registrytest"
	"github.com/fnops/func-operator/test/tekton"
)

// One control plane and one Tekton controller serve every test but
// TestStartControllerT_OwnControlPlane; each test has namespaces and a kubelet
// simulation of its own.
var (
	restConfig *rest.Config
	k8sClient  client.Client
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	env, err := envtest.Start(envtest.TektonCRDs, envtest.KnativeServingCRDs)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	restConfig = env.Config
	if k8sClient, err = newClient(restConfig); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctrl, err := tekton.StartController(restConfig, "")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "the Tekton controller's log ends with:\n%s\n", ctrl.LogTail(80))
	}
	if err := ctrl.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return code
}

func newClient(cfg *rest.Config) (client.Client, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, pipelinev1.AddToScheme, servingv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	return client.New(cfg, client.Options{Scheme: scheme})
}

// newNamespace creates a namespace for a test, with the ServiceAccounts given
// (Tekton needs the one a run names; no controller-manager creates "default").
func newNamespace(t *testing.T, c client.Client, cfg *rest.Config, serviceAccounts ...string) string {
	t.Helper()
	ns := envtest.NewNamespace(t, cfg, "tekton-", false)
	for _, sa := range serviceAccounts {
		create(t, c, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}})
	}
	return ns
}

func create(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// pipelineRun decodes a v1 PipelineRun from YAML, in namespace ns.
func pipelineRun(t *testing.T, ns, content string) *pipelinev1.PipelineRun {
	t.Helper()
	pr := &pipelinev1.PipelineRun{}
	if err := yaml.UnmarshalStrict([]byte(content), pr); err != nil {
		t.Fatalf("decoding the PipelineRun: %v", err)
	}
	pr.Namespace = ns
	return pr
}

// runTimeout bounds a PipelineRun of the tests, from its creation to its end.
const runTimeout = 60 * time.Second

// waitDone waits until a PipelineRun has finished, and returns it.
func waitDone(t *testing.T, c client.Client, pr *pipelinev1.PipelineRun) *pipelinev1.PipelineRun {
	t.Helper()
	got := &pipelinev1.PipelineRun{}
	eventually(t, runTimeout, func() (bool, string) {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(pr), got); err != nil {
			return false, err.Error()
		}
		return got.IsDone(), fmt.Sprintf("condition %+v", got.Status.GetCondition(apis.ConditionSucceeded))
	})
	return got
}

func eventually(t *testing.T, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", timeout, state)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// succeeded returns the status, reason and message of a run's Succeeded condition.
func succeeded(s interface {
	GetCondition(apis.ConditionType) *apis.Condition
}) condition {
	c := s.GetCondition(apis.ConditionSucceeded)
	if c == nil {
		return condition{}
	}
	return condition{Status: string(c.Status), Reason: c.Reason, Message: c.Message}
}

type condition struct{ Status, Reason, Message string }

// taskRuns returns the TaskRuns of a PipelineRun by pipeline task.
func taskRuns(t *testing.T, c client.Client, pr *pipelinev1.PipelineRun) map[string]*pipelinev1.TaskRun {
	t.Helper()
	var list pipelinev1.TaskRunList
	if err := c.List(context.Background(), &list, client.InNamespace(pr.Namespace), client.MatchingLabels{"tekton.dev/pipelineRun": pr.Name}); err != nil {
		t.Fatal(err)
	}
	out := map[string]*pipelinev1.TaskRun{}
	for i := range list.Items {
		out[list.Items[i].Labels["tekton.dev/pipelineTask"]] = &list.Items[i]
	}
	return out
}

// step is what a test compares of a TaskRun's step.
type step struct {
	Name, TerminationReason string
	ExitCode                int32
}

func steps(tr *pipelinev1.TaskRun) []step {
	out := make([]step, 0, len(tr.Status.Steps))
	for _, s := range tr.Status.Steps {
		st := step{Name: s.Name, TerminationReason: s.TerminationReason, ExitCode: -1}
		if s.Terminated != nil {
			st.ExitCode = s.Terminated.ExitCode
		}
		out = append(out, st)
	}
	return out
}

// twoTasks is a pipeline of two tasks of script steps: the second consumes the
// first's result.
const twoTasks = `
metadata: {name: two-tasks}
spec:
  taskRunTemplate: {serviceAccountName: default}
  pipelineSpec:
    tasks:
    - name: first
      taskSpec:
        results: [{name: out}]
        steps:
        - {name: one, image: alpine, script: "printf hello > $(results.out.path)"}
        - {name: two, image: alpine, script: "echo two"}
    - name: second
      params: [{name: in, value: $(tasks.first.results.out)}]
      taskSpec:
        params: [{name: in}]
        steps:
        - {name: use, image: alpine, script: "echo $(params.in)"}
`

// hello is the value the kubelet simulation's steps write to first's result out.
func hello(_ *pipelinev1.PipelineRun, task, res string) (string, bool) {
	return "hello", task == "first" && res == "out"
}

func TestController_RunsAPipelineRun(t *testing.T) {
	ns := newNamespace(t, k8sClient, restConfig, "default")
	kubelet := tekton.StartKubelet(t, restConfig, tekton.Options{Namespaces: []string{ns}, Result: hello})
	pr := pipelineRun(t, ns, twoTasks)
	start := time.Now()
	create(t, k8sClient, pr)
	got := waitDone(t, k8sClient, pr)
	t.Logf("PipelineRun created to Succeeded in %s", time.Since(start).Round(time.Millisecond))

	want := condition{Status: "True", Reason: "Succeeded", Message: "Tasks Completed: 2 (Failed: 0, Cancelled 0), Skipped: 0"}
	if diff := cmp.Diff(want, succeeded(&got.Status)); diff != "" {
		t.Errorf("PipelineRun's Succeeded condition (-want +got):\n%s", diff)
	}
	trs := taskRuns(t, k8sClient, pr)
	first, second := trs["first"], trs["second"]
	if first == nil || second == nil {
		t.Fatalf("TaskRuns by pipeline task: %v, want first and second", trs)
	}
	wantResults := []pipelinev1.TaskRunResult{{Name: "out", Type: pipelinev1.ResultsTypeString, Value: *pipelinev1.NewStructuredValues("hello")}}
	if diff := cmp.Diff(wantResults, first.Status.Results); diff != "" {
		t.Errorf("first's results (-want +got):\n%s", diff)
	}
	wantParams := pipelinev1.Params{{Name: "in", Value: *pipelinev1.NewStructuredValues("hello")}}
	if diff := cmp.Diff(wantParams, second.Spec.Params); diff != "" {
		t.Errorf("second's params, from first's result (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]step{{Name: "one", TerminationReason: "Completed"}, {Name: "two", TerminationReason: "Completed"}}, steps(first)); diff != "" {
		t.Errorf("first's steps (-want +got):\n%s", diff)
	}
	wantTR := condition{Status: "True", Reason: "Succeeded", Message: "All Steps have completed executing"}
	if diff := cmp.Diff(wantTR, succeeded(&second.Status)); diff != "" {
		t.Errorf("second's Succeeded condition (-want +got):\n%s", diff)
	}

	// The Pod as the controller made it and the simulation ended it; the first step
	// waited for the controller's ready annotation.
	pod := &corev1.Pod{}
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: first.Status.PodName}, pod); err != nil {
		t.Fatal(err)
	}
	inits := make([]string, 0, len(pod.Spec.InitContainers))
	for _, c := range pod.Spec.InitContainers {
		inits = append(inits, c.Name)
	}
	podWant := map[string]any{"phase": corev1.PodSucceeded, "init": []string{"prepare", "place-scripts"}, "ready": "READY"}
	podGot := map[string]any{"phase": pod.Status.Phase, "init": inits, "ready": pod.Annotations["tekton.dev/ready"]}
	if diff := cmp.Diff(podWant, podGot); diff != "" {
		t.Errorf("Pod %s (-want +got):\n%s", pod.Name, diff)
	}
	key := ns + "/" + pr.Name
	if diff := cmp.Diff([]string{key}, kubelet.Started()); diff != "" {
		t.Errorf("Started() (-want +got):\n%s", diff)
	}
	eventually(t, 5*time.Second, func() (bool, string) {
		return len(kubelet.Finished()) == 1, fmt.Sprintf("Finished() = %v", kubelet.Finished())
	})
	if diff := cmp.Diff([]string{key}, kubelet.Finished()); diff != "" {
		t.Errorf("Finished() (-want +got):\n%s", diff)
	}
}

func TestController_FailingStepFailsTheRun(t *testing.T) {
	ns := newNamespace(t, k8sClient, restConfig, "default")
	var decided atomic.Int32
	tekton.StartKubelet(t, restConfig, tekton.Options{
		Namespaces: []string{ns}, Result: hello,
		Decide: func(*pipelinev1.PipelineRun) tekton.Outcome {
			decided.Add(1)
			return tekton.Outcome{Fail: true, FailedTask: "first", FailedStep: "one"}
		},
	})
	pr := pipelineRun(t, ns, twoTasks)
	create(t, k8sClient, pr)
	got := waitDone(t, k8sClient, pr)

	want := condition{Status: "False", Reason: "Failed", Message: "Tasks Completed: 1 (Failed: 1, Cancelled 0), Skipped: 1"}
	if diff := cmp.Diff(want, succeeded(&got.Status)); diff != "" {
		t.Errorf("PipelineRun's Succeeded condition (-want +got):\n%s", diff)
	}
	trs := taskRuns(t, k8sClient, pr)
	if trs["second"] != nil {
		t.Errorf("second ran after first failed: TaskRun %s", trs["second"].Name)
	}
	first := trs["first"]
	if first == nil {
		t.Fatal("no TaskRun of first")
	}
	wantTR := condition{Status: "False", Reason: "Failed", Message: `"step-one" exited with code 1`}
	if diff := cmp.Diff(wantTR, succeeded(&first.Status)); diff != "" {
		t.Errorf("first's Succeeded condition (-want +got):\n%s", diff)
	}
	wantSteps := []step{{Name: "one", ExitCode: 1, TerminationReason: "Error"}, {Name: "two", ExitCode: 1, TerminationReason: "Skipped"}}
	if diff := cmp.Diff(wantSteps, steps(first)); diff != "" {
		t.Errorf("first's steps (-want +got):\n%s", diff)
	}
	if n := decided.Load(); n != 1 {
		t.Errorf("Decide called %d times, want once per run", n)
	}
}

func TestKubelet_HoldKeepsTheRunRunning(t *testing.T) {
	ns := newNamespace(t, k8sClient, restConfig, "default")
	var release atomic.Bool
	kubelet := tekton.StartKubelet(t, restConfig, tekton.Options{
		Namespaces: []string{ns}, Result: hello,
		Hold: func(*pipelinev1.PipelineRun) bool { return release.Load() },
	})
	pr := pipelineRun(t, ns, twoTasks)
	create(t, k8sClient, pr)
	eventually(t, 30*time.Second, func() (bool, string) {
		return len(kubelet.Started()) == 1, "the run's first Pod not started"
	})
	time.Sleep(2 * time.Second)

	got := &pipelinev1.PipelineRun{}
	if err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(pr), got); err != nil {
		t.Fatal(err)
	}
	if c := succeeded(&got.Status); c.Status != "Unknown" || c.Reason != "Running" {
		t.Errorf("held PipelineRun's Succeeded condition = %+v, want Unknown, Running", c)
	}
	first := taskRuns(t, k8sClient, pr)["first"]
	if first == nil {
		t.Fatal("no TaskRun of first")
	}
	if c := succeeded(&first.Status); c.Status != "Unknown" || c.Reason != "Running" {
		t.Errorf("held TaskRun's Succeeded condition = %+v, want Unknown, Running", c)
	}
	pod := &corev1.Pod{}
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: first.Status.PodName}, pod); err != nil {
		t.Fatal(err)
	}
	if pod.Status.Phase != corev1.PodRunning {
		t.Errorf("held Pod's phase = %s, want Running", pod.Status.Phase)
	}

	release.Store(true)
	got = waitDone(t, k8sClient, pr)
	if c := succeeded(&got.Status); c.Status != "True" {
		t.Errorf("released PipelineRun's Succeeded condition = %+v, want True", c)
	}
	if n := kubelet.MaxRunning(); n != 1 {
		t.Errorf("MaxRunning() = %d, want 1", n)
	}
}

func TestController_HubTaskRefStaysResolving(t *testing.T) {
	ns := newNamespace(t, k8sClient, restConfig, "default")
	tekton.StartKubelet(t, restConfig, tekton.Options{Namespaces: []string{ns}, Result: hello})
	// func v0.44's fetch-sources task: the hub resolver, which no resolvers
	// deployment serves here (nor would on a cluster that cannot reach the hub).
	hub := pipelineRun(t, ns, `
metadata: {name: hub}
spec:
  taskRunTemplate: {serviceAccountName: default}
  pipelineSpec:
    tasks:
    - name: fetch-sources
      taskRef:
        resolver: hub
        params:
        - {name: kind, value: task}
        - {name: name, value: git-clone}
        - {name: version, value: "0.4"}
`)
	create(t, k8sClient, hub)
	// Positive control: an inline run succeeds meanwhile, so the controller and the
	// kubelet simulation were working.
	inline := pipelineRun(t, ns, twoTasks)
	create(t, k8sClient, inline)
	if c := succeeded(&waitDone(t, k8sClient, inline).Status); c.Status != "True" {
		t.Fatalf("the inline run's Succeeded condition = %+v, want True", c)
	}
	time.Sleep(2 * time.Second)

	got := &pipelinev1.PipelineRun{}
	if err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(hub), got); err != nil {
		t.Fatal(err)
	}
	c := succeeded(&got.Status)
	if c.Status != "Unknown" || c.Reason != "ResolvingTaskRef" {
		t.Errorf("the hub run's Succeeded condition = %+v, want Unknown, ResolvingTaskRef", c)
	}
	requests := &unstructured.UnstructuredList{}
	requests.SetGroupVersionKind(schema.GroupVersionKind{Group: "resolution.tekton.dev", Version: "v1beta1", Kind: "ResolutionRequestList"})
	if err := k8sClient.List(context.Background(), requests, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(requests.Items) != 1 {
		t.Errorf("%d ResolutionRequests, want the hub run's one", len(requests.Items))
	}
}

// funcLike is a pipeline shaped like func's: build writes IMAGE_DIGEST, deploy
// gets the image by digest; the build task gets a Secret workspace.
const funcLike = `
metadata:
  name: %s
  labels: {function.knative.dev/name: hello}
spec:
  params: [{name: imageName, value: %s}]
  taskRunTemplate: {serviceAccountName: %s}
  workspaces: [{name: dockerconfig-workspace, secret: {secretName: dockerconfig}}]
  pipelineSpec:
    params: [{name: imageName}]
    workspaces: [{name: dockerconfig-workspace}]
    tasks:
    - name: build
      workspaces: [{name: dockerconfig, workspace: dockerconfig-workspace}]
      taskSpec:
        workspaces: [{name: dockerconfig}]
        results: [{name: IMAGE_DIGEST}]
        steps:
        - {name: build, image: builder, script: "build and push"}
    - name: deploy
      params: [{name: image, value: "$(params.imageName)@$(tasks.build.results.IMAGE_DIGEST)"}]
      taskSpec:
        params: [{name: image}]
        steps:
        - {name: deploy, image: func-utils, script: "func deploy --image $(params.image)"}
`

func TestKubelet_DeployNeedsTheServiceAccountsRights(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, k8sClient, restConfig)
	reg := registrytest.Start(t)
	image := reg.Host + "/fns/hello:latest"
	create(t, k8sClient, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "git-creds", Annotations: map[string]string{"tekton.dev/git-0": "https://git.example"}},
		Type:       corev1.SecretTypeBasicAuth, StringData: map[string]string{"username": "u", "password": "p"},
	})
	create(t, k8sClient, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dockerconfig"},
		StringData: map[string]string{"config.json": "{}"},
	})
	create(t, k8sClient, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deployer"}, Secrets: []corev1.ObjectReference{{Name: "git-creds"}}})
	create(t, k8sClient, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nobody"}})
	create(t, k8sClient, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deploy"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"serving.knative.dev"}, Resources: []string{"services"}, Verbs: []string{"get", "update"}}},
	})
	create(t, k8sClient, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deployer"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "deploy"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "deployer"}},
	})
	oldImage := reg.Push(t, "fns/hello", "old")
	create(t, k8sClient, &servingv1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hello"},
		Spec: servingv1.ServiceSpec{ConfigurationSpec: servingv1.ConfigurationSpec{Template: servingv1.RevisionTemplateSpec{
			Spec: servingv1.RevisionSpec{PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Image: oldImage}}}},
		}}},
	})
	middleware := map[string]string{"allowed": "v1", "denied": "v2"}
	kubelet := tekton.StartKubelet(t, restConfig, tekton.Options{
		Namespaces: []string{ns}, Registry: reg,
		Decide: func(pr *pipelinev1.PipelineRun) tekton.Outcome {
			return tekton.Outcome{MiddlewareVersion: middleware[pr.Name]}
		},
	})
	serviceImage := func() string {
		ksvc := &servingv1.Service{}
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "hello"}, ksvc); err != nil {
			t.Fatal(err)
		}
		return ksvc.Spec.Template.Spec.Containers[0].Image
	}

	// Positive control: the ServiceAccount with the right deploys.
	allowed := pipelineRun(t, ns, fmt.Sprintf(funcLike, "allowed", image, "deployer"))
	start := time.Now()
	create(t, k8sClient, allowed)
	if c := succeeded(&waitDone(t, k8sClient, allowed).Status); c.Status != "True" {
		t.Fatalf("the run as deployer: Succeeded condition %+v, want True", c)
	}
	t.Logf("func-like PipelineRun created to Succeeded in %s", time.Since(start).Round(time.Millisecond))
	trs := taskRuns(t, k8sClient, allowed)
	digest := ""
	for _, r := range trs["build"].Status.Results {
		if r.Name == "IMAGE_DIGEST" {
			digest = r.Value.StringVal
		}
	}
	deployed := reg.Host + "/fns/hello@" + digest
	if !strings.HasPrefix(digest, "sha256:") || serviceImage() != deployed {
		t.Errorf("after the run as deployer the Service runs %s, want %s (IMAGE_DIGEST %q)", serviceImage(), deployed, digest)
	}
	wantParams := pipelinev1.Params{{Name: "image", Value: *pipelinev1.NewStructuredValues(image + "@" + digest)}}
	if diff := cmp.Diff(wantParams, trs["deploy"].Spec.Params); diff != "" {
		t.Errorf("deploy's params (-want +got):\n%s", diff)
	}
	if label := imageLabel(t, deployed); label != "v1" {
		t.Errorf("the pushed image's middleware label = %q, want v1", label)
	}
	pod := &corev1.Pod{}
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: trs["deploy"].Status.PodName}, pod); err != nil {
		t.Fatal(err)
	}
	if pod.Spec.ServiceAccountName != allowed.Spec.TaskRunTemplate.ServiceAccountName {
		t.Errorf("the deploy Pod runs as %q, want the run's %q", pod.Spec.ServiceAccountName, allowed.Spec.TaskRunTemplate.ServiceAccountName)
	}
	// creds-init mounts the ServiceAccount's annotated Secret in every Pod; the
	// workspace's Secret only in build's.
	wantSecrets := map[string][]string{"build": {"dockerconfig", "git-creds"}, "deploy": {"git-creds"}}
	if diff := cmp.Diff(wantSecrets, kubelet.PodSecrets(ns, "allowed")); diff != "" {
		t.Errorf("PodSecrets (-want +got):\n%s", diff)
	}

	// The ServiceAccount without it fails in deploy, after build pushed.
	denied := pipelineRun(t, ns, fmt.Sprintf(funcLike, "denied", image, "nobody"))
	create(t, k8sClient, denied)
	got := waitDone(t, k8sClient, denied)
	want := condition{Status: "False", Reason: "Failed", Message: "Tasks Completed: 2 (Failed: 1, Cancelled 0), Skipped: 0"}
	if diff := cmp.Diff(want, succeeded(&got.Status)); diff != "" {
		t.Errorf("the run as nobody: Succeeded condition (-want +got):\n%s", diff)
	}
	trs = taskRuns(t, k8sClient, denied)
	wantDeploy := condition{Status: "False", Reason: "Failed", Message: `"step-deploy" exited with code 1`}
	if diff := cmp.Diff(wantDeploy, succeeded(&trs["deploy"].Status)); diff != "" {
		t.Errorf("the run as nobody: deploy's Succeeded condition (-want +got):\n%s", diff)
	}
	if c := succeeded(&trs["build"].Status); c.Status != "True" {
		t.Errorf("the run as nobody: build's Succeeded condition %+v, want True", c)
	}
	if img := serviceImage(); img != deployed {
		t.Errorf("after the denied run the Service runs %s, want still %s", img, deployed)
	}
}

// imageLabel returns the middleware-version label of an image in the registry.
func imageLabel(t *testing.T, ref string) string {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(r)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Config.Labels[registrytest.MiddlewareLabel]
}

// A control plane of its own, with a controller of its own (StartControllerT)
// while the shared one runs: two controllers in one process, on ports of their own.
func TestStartControllerT_OwnControlPlane(t *testing.T) {
	env := envtest.StartT(t, envtest.TektonCRDs)
	ctrl := tekton.StartControllerT(t, env.Config)
	c, err := newClient(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t, c, env.Config, "default")
	tekton.StartKubelet(t, env.Config, tekton.Options{Namespaces: []string{ns}, Result: hello})
	pr := pipelineRun(t, ns, twoTasks)
	create(t, c, pr)
	if cond := succeeded(&waitDone(t, c, pr).Status); cond.Status != "True" {
		t.Errorf("Succeeded condition %+v, want True", cond)
	}
	if exited, err := ctrl.Exited(); exited {
		t.Errorf("the controller exited: %v", err)
	}
}

func TestStartController_NeedsTheBinary(t *testing.T) {
	t.Setenv(tekton.ControllerEnv, "")
	_, err := tekton.StartController(restConfig, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "hack/tekton-controller.sh") {
		t.Errorf("StartController without %s: %v, want an error naming hack/tekton-controller.sh", tekton.ControllerEnv, err)
	}
}

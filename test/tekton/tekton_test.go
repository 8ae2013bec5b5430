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
	"k8s.io/apimachinery/pkg/api/resource"
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
	// Tekton adds the container's termination reason, which a kubelet sets to
	// Error for a non-zero exit.
	wantTR := condition{Status: "False", Reason: "Failed", Message: `"step-one" exited with code 1: Error`}
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

// Remote references stay unresolved, as no resolvers deployment runs here (nor would
// they resolve on a cluster that cannot reach the hub or the registry): func v0.44's
// fetch-sources task through the hub resolver, and func v0.50.1's own fetch-src step,
// the catalog's git-clone StepAction through the bundles resolver — which the
// operator replaces with an inline fetch-sources task (packPipeline).
func TestController_RemoteReferencesStayResolving(t *testing.T) {
	ns := newNamespace(t, k8sClient, restConfig, "default")
	tekton.StartKubelet(t, restConfig, tekton.Options{Namespaces: []string{ns}, Result: hello})
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
	bundle := pipelineRun(t, ns, `
metadata: {name: bundle}
spec:
  taskRunTemplate: {serviceAccountName: default}
  params: [{name: gitRepository, value: "http://127.0.0.1:1/fns/hello.git"}]
  pipelineSpec:
    params: [{name: gitRepository}]
    tasks:
    - name: build
      params: [{name: GIT_REPOSITORY, value: $(params.gitRepository)}]
      taskSpec:
        params: [{name: GIT_REPOSITORY}]
        steps:
        - name: fetch-src
          ref:
            resolver: bundles
            params:
            - {name: bundle, value: "ghcr.io/tektoncd/catalog/upstream/stepactions/git-clone:09f70e6a6485a7d99b01d75610870b13222732e8"}
            - {name: kind, value: StepAction}
            - {name: name, value: git-clone}
          when: [{input: $(params.GIT_REPOSITORY), operator: notin, values: [""]}]
          params:
          - {name: output-path, value: /workspace/source}
          - {name: url, value: $(params.GIT_REPOSITORY)}
        - {name: func-scaffold, image: ghcr.io/knative/func-utils:simulated, command: [scaffold, ".", pack]}
`)
	create(t, k8sClient, bundle)
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
	if c := succeeded(&got.Status); c.Status != "Unknown" || c.Reason != "ResolvingTaskRef" {
		t.Errorf("the hub run's Succeeded condition = %+v, want Unknown, ResolvingTaskRef", c)
	}
	if err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(bundle), got); err != nil {
		t.Fatal(err)
	}
	if c := succeeded(&got.Status); c.Status != "Unknown" {
		t.Errorf("the bundle run's Succeeded condition = %+v, want Unknown", c)
	}
	build := taskRuns(t, k8sClient, bundle)["build"]
	if build == nil {
		t.Fatal("no TaskRun of the bundle run's build")
	}
	if c := succeeded(&build.Status); c.Status != "Unknown" || c.Reason != "ResolvingStepActionRef" {
		t.Errorf("the bundle run's build: Succeeded condition = %+v, want Unknown, ResolvingStepActionRef", c)
	}
	if build.Status.PodName != "" {
		t.Errorf("the bundle run's build has Pod %s, want none while its step is unresolved", build.Status.PodName)
	}
	requests := &unstructured.UnstructuredList{}
	requests.SetGroupVersionKind(schema.GroupVersionKind{Group: "resolution.tekton.dev", Version: "v1beta1", Kind: "ResolutionRequestList"})
	if err := k8sClient.List(context.Background(), requests, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(requests.Items) != 2 {
		t.Errorf("%d ResolutionRequests, want one of each run", len(requests.Items))
	}
}

// fetchSources is the pipeline task the operator puts before func v0.50.1's build
// task in place of its fetch-src step: the Tekton catalog's git-clone task (0.10)
// inline, its output workspace bound to source-workspace and its basic-auth
// workspace to the optional git-basic-auth (a git credentials Secret). Its script
// is shortened; nothing runs it.
const fetchSources = `
  - name: fetch-sources
    params:
    - {name: url, value: $(params.gitRepository)}
    - {name: revision, value: $(params.gitRevision)}
    workspaces:
    - {name: output, workspace: source-workspace}
    - {name: basic-auth, workspace: git-basic-auth}
    taskSpec:
      workspaces:
      - {name: output}
      - {name: ssh-directory, optional: true}
      - {name: basic-auth, optional: true}
      - {name: ssl-ca-directory, optional: true}
      params:
      - {name: url, type: string}
      - {name: revision, type: string, default: ""}
      - {name: depth, type: string, default: "1"}
      - {name: gitInitImage, type: string, default: "ghcr.io/tektoncd/github.com/tektoncd/pipeline/cmd/git-init:v0.40.2"}
      - {name: userHome, type: string, default: /home/git}
      results:
      - {name: commit, description: The precise commit SHA that was fetched by this Task.}
      - {name: url, description: The precise URL that was fetched by this Task.}
      - {name: committer-date, description: The epoch timestamp of the commit that was fetched by this Task.}
      steps:
      - name: clone
        image: $(params.gitInitImage)
        env:
        - {name: HOME, value: $(params.userHome)}
        - {name: PARAM_URL, value: $(params.url)}
        - {name: PARAM_REVISION, value: $(params.revision)}
        - {name: PARAM_DEPTH, value: $(params.depth)}
        - {name: WORKSPACE_OUTPUT_PATH, value: $(workspaces.output.path)}
        - {name: WORKSPACE_BASIC_AUTH_DIRECTORY_BOUND, value: $(workspaces.basic-auth.bound)}
        - {name: WORKSPACE_BASIC_AUTH_DIRECTORY_PATH, value: $(workspaces.basic-auth.path)}
        securityContext: {runAsNonRoot: true, runAsUser: 65532}
        script: |
          #!/usr/bin/env sh
          set -eu
          /ko-app/git-init -url="${PARAM_URL}" -revision="${PARAM_REVISION}" -path="${WORKSPACE_OUTPUT_PATH}" -depth="${PARAM_DEPTH}"
          printf "%s" "$(git -C "${WORKSPACE_OUTPUT_PATH}" rev-parse HEAD)" > "$(results.commit.path)"
          printf "%s" "${PARAM_URL}" > "$(results.url.path)"
          printf "%s" "$(git -C "${WORKSPACE_OUTPUT_PATH}" log -1 --pretty=%ct)" > "$(results.committer-date.path)"
`

// packPipeline is func v0.50.1's pack pipeline (templates_pack.go,
// task-buildpack.yaml.tmpl) as the operator runs it: fetchSources, then func's
// inline build task without its fetch-src step. Its scripts are shortened; nothing
// runs them.
const packPipeline = `
metadata:
  name: hello-pack-git-pipeline
  labels: {function.knative.dev/name: hello}
spec:
  params:
  - {name: gitRepository, type: string, default: ''}
  - {name: gitRevision, type: string}
  - {name: contextDir, type: string, default: ''}
  - {name: imageName, type: string}
  - {name: registry, type: string}
  - {name: builderImage, type: string}
  - {name: buildEnvs, type: array}
  - {name: commit, type: string, default: ''}
  workspaces:
  - {name: source-workspace}
  - {name: cache-workspace}
  - {name: dockerconfig-workspace, optional: true}
  - {name: git-basic-auth, optional: true}
  tasks:` + fetchSources + `
  - name: build
    runAfter: [fetch-sources]
    params:
    - {name: GIT_REPOSITORY, value: $(params.gitRepository)}
    - {name: GIT_REVISION, value: $(params.gitRevision)}
    - {name: APP_IMAGE, value: $(params.imageName)}
    - {name: REGISTRY, value: $(params.registry)}
    - {name: SOURCE_SUBPATH, value: $(params.contextDir)}
    - {name: BUILDER_IMAGE, value: $(params.builderImage)}
    - {name: ENV_VARS, value: ['$(params.buildEnvs[*])']}
    - {name: COMMIT, value: $(params.commit)}
    workspaces:
    - {name: source, workspace: source-workspace}
    - {name: cache, workspace: cache-workspace}
    - {name: dockerconfig, workspace: dockerconfig-workspace}
    taskSpec:
      workspaces:
      - {name: source}
      - {name: cache, optional: true}
      - {name: dockerconfig, optional: true}
      params:
      - {name: GIT_REPOSITORY}
      - {name: GIT_REVISION}
      - {name: APP_IMAGE}
      - {name: REGISTRY}
      - {name: BUILDER_IMAGE}
      - {name: SOURCE_SUBPATH, default: ""}
      - {name: ENV_VARS, type: array, default: []}
      - {name: CACHE_IMAGE, default: ""}
      - {name: USER_ID, default: "1001"}
      - {name: GROUP_ID, default: "0"}
      - {name: PLATFORM_DIR, default: empty-dir}
      - {name: INSECURE_REGISTRIES, default: ""}
      - {name: COMMIT, default: ""}
      stepTemplate:
        env: [{name: CNB_PLATFORM_API, value: "0.10"}]
      steps:
      - name: func-scaffold
        image: ghcr.io/knative/func-utils:simulated
        workingDir: $(workspaces.source.path)
        command: [scaffold, $(params.SOURCE_SUBPATH), pack]
      - name: prepare
        image: docker.io/library/bash:5.1
        args: [--env-vars, '$(params.ENV_VARS[*])']
        script: |
          #!/usr/bin/env bash
          set -e
          mkdir -p /platform/env
          echo -n "middleware-version=$(cat $(workspaces.source.path)/middleware-version)" >> /platform/env/BP_IMAGE_LABELS
          [ -z "$(params.COMMIT)" ] || echo -n " org.opencontainers.image.revision=$(params.COMMIT)" >> /platform/env/BP_IMAGE_LABELS
          cp "$(workspaces.source.path)/$(params.SOURCE_SUBPATH)/func.yaml" /emptyDir/func.yaml
        volumeMounts:
        - {name: layers-dir, mountPath: /layers}
        - {name: $(params.PLATFORM_DIR), mountPath: /platform}
        - {name: empty-dir, mountPath: /emptyDir}
      - name: create
        image: $(params.BUILDER_IMAGE)
        imagePullPolicy: Always
        command: [/cnb/lifecycle/creator]
        env:
        - {name: DOCKER_CONFIG, value: $(workspaces.dockerconfig.path)}
        - {name: CNB_INSECURE_REGISTRIES, value: $(params.INSECURE_REGISTRIES)}
        args:
        - -app=$(workspaces.source.path)/$(params.SOURCE_SUBPATH)
        - -cache-dir=$(workspaces.cache.path)
        - -cache-image=$(params.CACHE_IMAGE)
        - -uid=$(params.USER_ID)
        - -gid=$(params.GROUP_ID)
        - -layers=/layers
        - -platform=/platform
        - -report=/layers/report.toml
        - -previous-image=$(params.APP_IMAGE)
        - $(params.APP_IMAGE)
        volumeMounts:
        - {name: layers-dir, mountPath: /layers}
        - {name: $(params.PLATFORM_DIR), mountPath: /platform}
        securityContext: {runAsUser: 1001, runAsGroup: 0}
      - name: results
        image: docker.io/library/bash:5.1
        script: |
          #!/usr/bin/env bash
          set -e
          digest=$(grep digest /layers/report.toml | cut -d'"' -f2)
          sed -i "s|^image:.*$|image: $(params.APP_IMAGE)|; s/^imageDigest:.*$/imageDigest: $digest/" "$(workspaces.source.path)/$(params.SOURCE_SUBPATH)/func.yaml"
        volumeMounts:
        - {name: layers-dir, mountPath: /layers}
        - {name: empty-dir, mountPath: /emptyDir}
      - name: func-deploy
        image: ghcr.io/knative/func-utils:simulated
        workingDir: $(workspaces.source.path)
        command: [deploy, $(params.SOURCE_SUBPATH), $(params.APP_IMAGE)]
      volumes:
      - {name: empty-dir, emptyDir: {}}
      - {name: layers-dir, emptyDir: {}}
`

// s2iPipeline is func v0.50.1's s2i pipeline (templates_s2i.go, task-s2i.yaml.tmpl)
// as the operator runs it, like packPipeline.
const s2iPipeline = `
metadata:
  name: hello-s2i-git-pipeline
  labels: {function.knative.dev/name: hello}
spec:
  params:
  - {name: gitRepository, type: string, default: ''}
  - {name: gitRevision, type: string}
  - {name: contextDir, type: string, default: ''}
  - {name: imageName, type: string}
  - {name: registry, type: string}
  - {name: builderImage, type: string}
  - {name: buildEnvs, type: array}
  - {name: s2iImageScriptsUrl, type: string, default: 'image:///usr/libexec/s2i'}
  - {name: tlsVerify, type: string, default: 'true'}
  - {name: commit, type: string, default: ''}
  workspaces:
  - {name: source-workspace}
  - {name: cache-workspace}
  - {name: dockerconfig-workspace, optional: true}
  - {name: git-basic-auth, optional: true}
  tasks:` + fetchSources + `
  - name: build
    runAfter: [fetch-sources]
    params:
    - {name: GIT_REPOSITORY, value: $(params.gitRepository)}
    - {name: GIT_REVISION, value: $(params.gitRevision)}
    - {name: IMAGE, value: $(params.imageName)}
    - {name: REGISTRY, value: $(params.registry)}
    - {name: PATH_CONTEXT, value: $(params.contextDir)}
    - {name: BUILDER_IMAGE, value: $(params.builderImage)}
    - {name: ENV_VARS, value: ['$(params.buildEnvs[*])']}
    - {name: S2I_IMAGE_SCRIPTS_URL, value: $(params.s2iImageScriptsUrl)}
    - {name: TLSVERIFY, value: $(params.tlsVerify)}
    - {name: COMMIT, value: $(params.commit)}
    workspaces:
    - {name: source, workspace: source-workspace}
    - {name: cache, workspace: cache-workspace}
    - {name: dockerconfig, workspace: dockerconfig-workspace}
    taskSpec:
      params:
      - {name: GIT_REPOSITORY}
      - {name: GIT_REVISION}
      - {name: BUILDER_IMAGE}
      - {name: IMAGE}
      - {name: REGISTRY, default: ""}
      - {name: PATH_CONTEXT, default: .}
      - {name: TLSVERIFY, default: "true"}
      - {name: LOGLEVEL, default: "0"}
      - {name: ENV_VARS, type: array, default: []}
      - {name: S2I_IMAGE_SCRIPTS_URL, default: "image:///usr/libexec/s2i"}
      - {name: COMMIT, default: ""}
      workspaces:
      - {name: source}
      - {name: cache, optional: true}
      - {name: sslcertdir, optional: true}
      - {name: dockerconfig, optional: true}
      steps:
      - name: func-scaffold
        image: ghcr.io/knative/func-utils:simulated
        workingDir: $(workspaces.source.path)
        command: [scaffold, $(params.PATH_CONTEXT), s2i]
      - name: generate
        image: ghcr.io/knative/func-utils:simulated
        workingDir: $(workspaces.source.path)
        command:
        - s2i-generate
        - --target
        - /gen-source
        - --path-context
        - $(params.PATH_CONTEXT)
        - --builder-image
        - $(params.BUILDER_IMAGE)
        - --registry
        - $(params.REGISTRY)
        - --image-script-url
        - $(params.S2I_IMAGE_SCRIPTS_URL)
        - --log-level
        - $(params.LOGLEVEL)
        - --commit
        - $(params.COMMIT)
        - $(params.ENV_VARS[*])
        volumeMounts:
        - {mountPath: /gen-source, name: gen-source}
        - {mountPath: /env-vars, name: env-vars}
      - name: build
        image: quay.io/buildah/stable:v1.31.0
        workingDir: /gen-source
        script: |
          [[ "$(workspaces.dockerconfig.bound)" == "true" ]] && export DOCKER_CONFIG="$(workspaces.dockerconfig.path)"
          buildah bud --storage-driver=vfs --layers -f /gen-source/Dockerfile.gen -t $(params.IMAGE) .
          buildah push --storage-driver=vfs --digestfile $(workspaces.source.path)/image-digest $(params.IMAGE) docker://$(params.IMAGE)
        volumeMounts:
        - {name: varlibcontainers, mountPath: /var/lib/containers}
        - {mountPath: /gen-source, name: gen-source}
        securityContext:
          capabilities: {add: [SETFCAP]}
      - name: func-deploy
        image: ghcr.io/knative/func-utils:simulated
        workingDir: $(workspaces.source.path)
        command: [deploy, $(params.PATH_CONTEXT), $(params.IMAGE)]
      volumes:
      - {emptyDir: {}, name: varlibcontainers}
      - {emptyDir: {}, name: gen-source}
      - {emptyDir: {}, name: env-vars}
`

// funcRun is a PipelineRun of packPipeline or s2iPipeline as the operator creates
// it: name, pipeline, the image to build, the ServiceAccount and the commit.
const funcRun = `
metadata:
  name: %s
  labels: {function.knative.dev/name: hello, tekton.dev/pipeline: %[2]s}
spec:
  pipelineRef: {name: %[2]s}
  params:
  - {name: gitRepository, value: "http://127.0.0.1:1/fns/hello.git"}
  - {name: gitRevision, value: main}
  - {name: contextDir, value: ""}
  - {name: imageName, value: %s}
  - {name: registry, value: registry.invalid/fns}
  - {name: builderImage, value: ghcr.io/knative/builder-jammy-base:simulated}
  - {name: buildEnvs, value: []}
  - {name: commit, value: "%s"}
  taskRunTemplate: {serviceAccountName: %s}
  workspaces:
  - {name: source-workspace, persistentVolumeClaim: {claimName: hello-pvc}, subPath: source}
  - {name: cache-workspace, persistentVolumeClaim: {claimName: hello-pvc}, subPath: cache}
  - {name: dockerconfig-workspace, secret: {secretName: dockerconfig}}
  - {name: git-basic-auth, secret: {secretName: git-auth}}
`

// packSteps and s2iSteps are the steps of the build task of packPipeline and
// s2iPipeline.
var (
	packSteps = []string{"func-scaffold", "prepare", "create", "results", "func-deploy"}
	s2iSteps  = []string{"func-scaffold", "generate", "build", "func-deploy"}
)

// funcFixture is a namespace with what a run of packPipeline or s2iPipeline needs:
// both Pipelines, the PVC, the Secrets of its workspaces, ServiceAccount deployer
// (allowed to update Knative Services, with a git Secret for creds-init) and nobody,
// and the function's Knative Service running an old image.
type funcFixture struct {
	ns       string
	reg      *registrytest.Registry
	image    string // the run's imageName, by tag
	oldImage string
}

func newFuncFixture(t *testing.T) *funcFixture {
	t.Helper()
	f := &funcFixture{ns: newNamespace(t, k8sClient, restConfig), reg: registrytest.Start(t)}
	f.image = f.reg.Host + "/fns/hello:latest"
	ns := f.ns
	for _, p := range []string{packPipeline, s2iPipeline} {
		pl := &pipelinev1.Pipeline{}
		if err := yaml.UnmarshalStrict([]byte(p), pl); err != nil {
			t.Fatalf("decoding a Pipeline: %v", err)
		}
		pl.Namespace = ns
		create(t, k8sClient, pl)
	}
	create(t, k8sClient, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hello-pvc"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("256Mi")}},
		},
	})
	create(t, k8sClient, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "git-creds", Annotations: map[string]string{"tekton.dev/git-0": "https://git.example"}},
		Type:       corev1.SecretTypeBasicAuth, StringData: map[string]string{"username": "u", "password": "p"},
	})
	create(t, k8sClient, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "git-auth"},
		StringData: map[string]string{".git-credentials": "http://u:p@127.0.0.1:1", ".gitconfig": "[credential]\n\thelper = store\n"},
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
	f.oldImage = f.reg.Push(t, "fns/old", "v0")
	create(t, k8sClient, &servingv1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hello"},
		Spec: servingv1.ServiceSpec{ConfigurationSpec: servingv1.ConfigurationSpec{Template: servingv1.RevisionTemplateSpec{
			Spec: servingv1.RevisionSpec{PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Image: f.oldImage}}}},
		}}},
	})
	return f
}

// run creates a PipelineRun of pipeline (packPipeline's or s2iPipeline's name) and
// waits until it finished.
func (f *funcFixture) run(t *testing.T, runName, pipeline, serviceAccount, commit string) *pipelinev1.PipelineRun {
	t.Helper()
	pr := pipelineRun(t, f.ns, fmt.Sprintf(funcRun, runName, pipeline, f.image, commit, serviceAccount))
	start := time.Now()
	create(t, k8sClient, pr)
	got := waitDone(t, k8sClient, pr)
	t.Logf("PipelineRun %s of %s created to done in %s", runName, pipeline, time.Since(start).Round(time.Millisecond))
	return got
}

// serviceImage returns the image the function's Knative Service runs.
func (f *funcFixture) serviceImage(t *testing.T) string {
	t.Helper()
	ksvc := &servingv1.Service{}
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "hello"}, ksvc); err != nil {
		t.Fatal(err)
	}
	return ksvc.Spec.Template.Spec.Containers[0].Image
}

// pushed returns the image the registry holds at the run's imageName, by digest, and
// its labels; "" when none was pushed.
func (f *funcFixture) pushed(t *testing.T) (string, map[string]string) {
	t.Helper()
	ref, err := name.ParseReference(f.image)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(ref)
	if err != nil {
		return "", nil
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	return ref.Context().Name() + "@" + d.String(), cfg.Config.Labels
}

// stepsOf returns steps, each Completed with exit code 0 up to failed (none when
// empty), which exited 1 (Error), then the rest skipped (exit 1, Skipped).
func stepsOf(names []string, failed string) []step {
	out := make([]step, 0, len(names))
	state := step{TerminationReason: "Completed"}
	for _, n := range names {
		s := state
		if n == failed {
			s = step{ExitCode: 1, TerminationReason: "Error"}
			state = step{ExitCode: 1, TerminationReason: "Skipped"}
		}
		s.Name = n
		out = append(out, s)
	}
	return out
}

// The run as a ServiceAccount with the right deploys the image the build step
// pushed (labelled with the middleware and the commit); the run as one without it
// fails in func-deploy, after the push.
func TestKubelet_FuncPipelineDeploysAsTheServiceAccount(t *testing.T) {
	f := newFuncFixture(t)
	ctx := context.Background()
	const commit = "0123456789abcdef0123456789abcdef01234567"
	middleware := map[string]string{"allowed": "v1", "denied": "v2"}
	kubelet := tekton.StartKubelet(t, restConfig, tekton.Options{
		Namespaces: []string{f.ns}, Registry: f.reg,
		Decide: func(pr *pipelinev1.PipelineRun) tekton.Outcome {
			return tekton.Outcome{MiddlewareVersion: middleware[pr.Name]}
		},
		Result: func(_ *pipelinev1.PipelineRun, task, res string) (string, bool) {
			return commit, task == "fetch-sources" && res == "commit"
		},
	})

	// Positive control: the ServiceAccount with the right deploys.
	allowed := f.run(t, "allowed", "hello-pack-git-pipeline", "deployer", commit)
	want := condition{Status: "True", Reason: "Succeeded", Message: "Tasks Completed: 2 (Failed: 0, Cancelled 0), Skipped: 0"}
	if diff := cmp.Diff(want, succeeded(&allowed.Status)); diff != "" {
		t.Fatalf("the run as deployer: Succeeded condition (-want +got):\n%s", diff)
	}
	trs := taskRuns(t, k8sClient, allowed)
	if len(trs) != len(tekton.Tasks) || trs["fetch-sources"] == nil || trs["build"] == nil {
		t.Fatalf("TaskRuns by pipeline task: %v, want %v", trs, tekton.Tasks)
	}
	if diff := cmp.Diff(stepsOf(packSteps, ""), steps(trs["build"])); diff != "" {
		t.Errorf("build's steps (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]step{{Name: "clone", TerminationReason: "Completed"}}, steps(trs["fetch-sources"])); diff != "" {
		t.Errorf("fetch-sources' steps (-want +got):\n%s", diff)
	}
	wantResults := map[string]string{"commit": commit, "url": "fetch-sources.url", "committer-date": "fetch-sources.committer-date"}
	gotResults := map[string]string{}
	for _, r := range trs["fetch-sources"].Status.Results {
		gotResults[r.Name] = r.Value.StringVal
	}
	if diff := cmp.Diff(wantResults, gotResults); diff != "" {
		t.Errorf("fetch-sources' results (-want +got):\n%s", diff)
	}
	deployed, labels := f.pushed(t)
	if deployed == "" || f.serviceImage(t) != deployed {
		t.Errorf("after the run as deployer the Service runs %s, want the image pushed to %s (%q)", f.serviceImage(t), f.image, deployed)
	}
	wantLabels := map[string]string{"org.opencontainers.image.title": "fns/hello", tekton.MiddlewareLabel: "v1", tekton.RevisionLabel: commit}
	if diff := cmp.Diff(wantLabels, labels); diff != "" {
		t.Errorf("the pushed image's labels (-want +got):\n%s", diff)
	}
	pod := &corev1.Pod{}
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: trs["build"].Status.PodName}, pod); err != nil {
		t.Fatal(err)
	}
	if pod.Spec.ServiceAccountName != "deployer" {
		t.Errorf("the build Pod runs as %q, want the run's deployer", pod.Spec.ServiceAccountName)
	}
	// creds-init mounts the ServiceAccount's annotated Secret in every Pod; the git
	// credentials workspace's Secret only in fetch-sources', the registry's only in
	// build's.
	wantSecrets := map[string][]string{"fetch-sources": {"git-auth", "git-creds"}, "build": {"dockerconfig", "git-creds"}}
	if diff := cmp.Diff(wantSecrets, kubelet.PodSecrets(f.ns, "allowed")); diff != "" {
		t.Errorf("PodSecrets (-want +got):\n%s", diff)
	}

	// The ServiceAccount without it fails in func-deploy, after the push.
	denied := f.run(t, "denied", "hello-pack-git-pipeline", "nobody", "")
	want = condition{Status: "False", Reason: "Failed", Message: "Tasks Completed: 2 (Failed: 1, Cancelled 0), Skipped: 0"}
	if diff := cmp.Diff(want, succeeded(&denied.Status)); diff != "" {
		t.Errorf("the run as nobody: Succeeded condition (-want +got):\n%s", diff)
	}
	build := taskRuns(t, k8sClient, denied)["build"]
	wantBuild := condition{Status: "False", Reason: "Failed", Message: `"step-func-deploy" exited with code 1: Error`}
	if diff := cmp.Diff(wantBuild, succeeded(&build.Status)); diff != "" {
		t.Errorf("the run as nobody: build's Succeeded condition (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(stepsOf(packSteps, "func-deploy"), steps(build)); diff != "" {
		t.Errorf("the run as nobody: build's steps (-want +got):\n%s", diff)
	}
	again, labels := f.pushed(t)
	if again == deployed || labels[tekton.MiddlewareLabel] != "v2" || labels[tekton.RevisionLabel] != "" {
		t.Errorf("the run as nobody pushed %s with labels %v, want a new image labelled v2 and no revision (commit empty)", again, labels)
	}
	if img := f.serviceImage(t); img != deployed {
		t.Errorf("after the denied run the Service runs %s, want still %s", img, deployed)
	}
}

// Both of func's builders: a run succeeds and deploys; a failing Outcome fails the
// step that builds (pack's create, s2i's build) by default, before any push or
// deploy, and skips the steps after it.
func TestKubelet_FuncPipelineFailsTheBuildStep(t *testing.T) {
	for _, tc := range []struct {
		builder, pipeline, failed string
		steps                     []string
	}{
		{"pack", "hello-pack-git-pipeline", "create", packSteps},
		{"s2i", "hello-s2i-git-pipeline", "build", s2iSteps},
	} {
		t.Run(tc.builder, func(t *testing.T) {
			f := newFuncFixture(t)
			tekton.StartKubelet(t, restConfig, tekton.Options{
				Namespaces: []string{f.ns}, Registry: f.reg,
				Decide: func(pr *pipelinev1.PipelineRun) tekton.Outcome {
					return tekton.Outcome{Fail: pr.Name == "fails", MiddlewareVersion: "v1"}
				},
			})
			fails := f.run(t, "fails", tc.pipeline, "deployer", "abc")
			want := condition{Status: "False", Reason: "Failed", Message: "Tasks Completed: 2 (Failed: 1, Cancelled 0), Skipped: 0"}
			if diff := cmp.Diff(want, succeeded(&fails.Status)); diff != "" {
				t.Errorf("Succeeded condition (-want +got):\n%s", diff)
			}
			trs := taskRuns(t, k8sClient, fails)
			if c := succeeded(&trs["fetch-sources"].Status); c.Status != "True" {
				t.Errorf("fetch-sources' Succeeded condition %+v, want True", c)
			}
			wantBuild := condition{Status: "False", Reason: "Failed", Message: fmt.Sprintf(`"step-%s" exited with code 1: Error`, tc.failed)}
			if diff := cmp.Diff(wantBuild, succeeded(&trs["build"].Status)); diff != "" {
				t.Errorf("build's Succeeded condition (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(stepsOf(tc.steps, tc.failed), steps(trs["build"])); diff != "" {
				t.Errorf("build's steps (-want +got):\n%s", diff)
			}
			if img, _ := f.pushed(t); img != "" {
				t.Errorf("the failed build pushed %s", img)
			}
			if img := f.serviceImage(t); img != f.oldImage {
				t.Errorf("after the failed build the Service runs %s, want still %s", img, f.oldImage)
			}

			// Positive control: the same pipeline succeeds and deploys.
			ok := f.run(t, "succeeds", tc.pipeline, "deployer", "abc")
			if c := succeeded(&ok.Status); c.Status != "True" {
				t.Fatalf("the succeeding run's Succeeded condition %+v, want True", c)
			}
			if diff := cmp.Diff(stepsOf(tc.steps, ""), steps(taskRuns(t, k8sClient, ok)["build"])); diff != "" {
				t.Errorf("the succeeding run's build steps (-want +got):\n%s", diff)
			}
			img, labels := f.pushed(t)
			if img == "" || f.serviceImage(t) != img || labels[tekton.MiddlewareLabel] != "v1" || labels[tekton.RevisionLabel] != "abc" {
				t.Errorf("after the succeeding run the Service runs %s; pushed %s with labels %v", f.serviceImage(t), img, labels)
			}
		})
	}
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

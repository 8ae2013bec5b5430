package tektonsim_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"knative.dev/pkg/apis"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/test/envtest"
	"github.com/fnops/func-operator/test/registrytest"
	"github.com/fnops/func-operator/test/tektonsim"
)

var (
	restConfig *rest.Config
	k8sClient  client.Client
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	env, err := envtest.Start(envtest.KnativeServingCRDs, envtest.TektonCRDs)
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
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, pipelinev1.AddToScheme, servingv1.AddToScheme, apiextensionsv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	if k8sClient, err = client.New(restConfig, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := withoutConversion(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// withoutConversion sets the conversion strategy of the Tekton CRDs to None, where
// the envtest package did not already, and waits until they are established again:
// no Tekton webhook converts v1beta1 objects here.
func withoutConversion(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, n := range []string{"pipelineruns", "taskruns", "pipelines", "tasks", "customruns"} {
		key := types.NamespacedName{Name: n + ".tekton.dev"}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := k8sClient.Get(ctx, key, crd); apierrors.IsNotFound(err) {
			continue
		} else if err != nil {
			return fmt.Errorf("reading CRD %s: %w", key.Name, err)
		}
		if c := crd.Spec.Conversion; c != nil && c.Strategy == apiextensionsv1.NoneConverter {
			continue
		}
		crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
		if err := k8sClient.Update(ctx, crd); err != nil {
			return fmt.Errorf("setting the conversion of CRD %s to None: %w", key.Name, err)
		}
		for {
			if err := k8sClient.Get(ctx, key, crd); err != nil {
				return fmt.Errorf("reading CRD %s: %w", key.Name, err)
			}
			if established(crd) {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("waiting for CRD %s to be established: %w", key.Name, ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

var namespaces atomic.Int64

func newNamespace(t *testing.T) string {
	t.Helper()
	ns := fmt.Sprintf("tektonsim-%d", namespaces.Add(1))
	if err := k8sClient.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	return ns
}

// createService creates the Knative Service of function fn, running image.
func createService(t *testing.T, ns, fn, image string) {
	t.Helper()
	svc := &servingv1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fn},
		Spec: servingv1.ServiceSpec{ConfigurationSpec: servingv1.ConfigurationSpec{Template: servingv1.RevisionTemplateSpec{
			Spec: servingv1.RevisionSpec{PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Image: image}}}},
		}}},
	}
	if err := k8sClient.Create(context.Background(), svc); err != nil {
		t.Fatal(err)
	}
}

func serviceImage(t *testing.T, ns, service string) string {
	t.Helper()
	svc := &servingv1.Service{}
	if err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: service}, svc); err != nil {
		t.Fatal(err)
	}
	return svc.Spec.Template.Spec.Containers[0].Image
}

// createPipelineRun creates a PipelineRun of function fn as func v0.44 does: as
// tekton.dev/v1beta1.
func createPipelineRun(t *testing.T, ns, run, fn, image string) {
	t.Helper()
	pr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "tekton.dev/v1beta1",
		"kind":       "PipelineRun",
		"metadata": map[string]any{
			"namespace": ns, "name": run,
			"labels": map[string]any{tektonsim.FunctionLabel: fn},
		},
		"spec": map[string]any{
			"pipelineRef": map[string]any{"name": "p"},
			"params":      []any{map[string]any{"name": tektonsim.ImageParam, "value": image}},
		},
	}}
	if err := k8sClient.Create(context.Background(), pr); err != nil {
		t.Fatal(err)
	}
}

func getPipelineRun(t *testing.T, ns, run string) *pipelinev1.PipelineRun {
	t.Helper()
	pr := &pipelinev1.PipelineRun{}
	if err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: run}, pr); err != nil {
		t.Fatal(err)
	}
	return pr
}

func getTaskRun(t *testing.T, ns, taskRun string) *pipelinev1.TaskRun {
	t.Helper()
	tr := &pipelinev1.TaskRun{}
	if err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: taskRun}, tr); err != nil {
		t.Fatal(err)
	}
	return tr
}

// eventually polls cond until it returns "", failing the test with its last
// answer after 10 seconds.
func eventually(t *testing.T, cond func() string) {
	t.Helper()
	const timeout = 10 * time.Second
	deadline := time.Now().Add(timeout)
	for {
		msg := cond()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", timeout, msg)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// reason returns status/reason of the run's Succeeded condition ("" when none).
func reason(t *testing.T, ns, run string) string {
	t.Helper()
	c := getPipelineRun(t, ns, run).Status.GetCondition(apis.ConditionSucceeded)
	if c == nil {
		return ""
	}
	return string(c.Status) + "/" + c.Reason
}

// inState returns a condition for eventually: the run's reason is want.
func inState(t *testing.T, ns, run, want string) func() string {
	return func() string {
		if got := reason(t, ns, run); got != want {
			return fmt.Sprintf("PipelineRun %s/%s is %q, want %q", ns, run, got, want)
		}
		return ""
	}
}

const (
	running   = "Unknown/Running"
	succeeded = "True/Succeeded"
	failed    = "False/Failed"
)

func TestSim_Succeeds(t *testing.T) {
	ns, other := newNamespace(t), newNamespace(t)
	reg := registrytest.Start(t)
	oldImage := reg.Push(t, "fns/hello", "v1")
	createService(t, ns, "hello", oldImage)
	var release atomic.Bool
	var decided atomic.Int64
	sim := tektonsim.Start(t, restConfig, tektonsim.Options{
		Namespaces: []string{ns}, Registry: reg,
		Decide: func(pr *pipelinev1.PipelineRun) tektonsim.Outcome {
			decided.Add(1)
			if c := pr.Status.GetCondition(apis.ConditionSucceeded); c == nil || !c.IsUnknown() || pr.Status.StartTime == nil {
				t.Errorf("Decide called with status %+v, want the run Running", pr.Status)
			}
			return tektonsim.Outcome{MiddlewareVersion: "v2"}
		},
		Hold: func(*pipelinev1.PipelineRun) bool { return release.Load() },
	})
	createPipelineRun(t, ns, "hello-build", "hello", reg.Host+"/fns/hello:latest")
	createPipelineRun(t, other, "elsewhere", "hello", reg.Host+"/fns/hello:latest")

	eventually(t, inState(t, ns, "hello-build", running))
	pr := getPipelineRun(t, ns, "hello-build")
	if c := pr.Status.GetCondition(apis.ConditionSucceeded); c.Message != "Tasks Completed: 0 (Failed: 0, Cancelled 0), Skipped: 0" || pr.Status.StartTime == nil {
		t.Errorf("running status = %+v", pr.Status)
	}
	time.Sleep(300 * time.Millisecond) // several polls: Hold keeps the run Running
	if got := reason(t, ns, "hello-build"); got != running || len(sim.Finished()) != 0 {
		t.Errorf("held run is %q, finished %v; want it still running", got, sim.Finished())
	}
	if got := serviceImage(t, ns, "hello"); got != oldImage {
		t.Errorf("Service image = %s while the run is held, want %s", got, oldImage)
	}

	release.Store(true)
	eventually(t, inState(t, ns, "hello-build", succeeded))
	pr = getPipelineRun(t, ns, "hello-build")
	if c := pr.Status.GetCondition(apis.ConditionSucceeded); c.Message != "Tasks Completed: 3 (Failed: 0, Cancelled 0), Skipped: 0" || pr.Status.CompletionTime == nil {
		t.Errorf("succeeded status = %+v", pr.Status)
	}

	// The Service runs the pushed image by digest: the one with the decided label.
	image := serviceImage(t, ns, "hello")
	if image == oldImage || !strings.HasPrefix(image, reg.Host+"/fns/hello@sha256:") {
		t.Errorf("Service image = %s, want a new digest in %s/fns/hello", image, reg.Host)
	}
	if want := reg.Push(t, "fns/hello", "v2"); image != want {
		t.Errorf("Service image = %s, want the image Push makes with label v2, %s", image, want)
	}
	if got := middlewareLabel(t, image, authn.Anonymous); got != "v2" {
		t.Errorf("label %s of the deployed image = %q, want v2", registrytest.MiddlewareLabel, got)
	}

	children := make([]string, 0, len(pr.Status.ChildReferences))
	for _, child := range pr.Status.ChildReferences {
		if child.APIVersion != "tekton.dev/v1" || child.Kind != "TaskRun" {
			t.Errorf("child reference %+v, want a tekton.dev/v1 TaskRun", child)
		}
		children = append(children, child.PipelineTaskName+"="+child.Name)
		tr := getTaskRun(t, ns, child.Name)
		if c := tr.Status.GetCondition(apis.ConditionSucceeded); c == nil || !c.IsTrue() {
			t.Errorf("TaskRun %s is %+v, want succeeded", tr.Name, c)
		}
		if refs := tr.OwnerReferences; len(refs) != 1 || refs[0].Kind != "PipelineRun" || refs[0].UID != pr.UID {
			t.Errorf("owners of TaskRun %s = %+v, want the PipelineRun", tr.Name, refs)
		}
	}
	want := []string{"fetch-sources=hello-build-fetch-sources", "build=hello-build-build", "deploy=hello-build-deploy"}
	if !slices.Equal(children, want) {
		t.Errorf("child references = %v, want %v", children, want)
	}
	key := ns + "/hello-build"
	if s, f := sim.Started(), sim.Finished(); !slices.Equal(s, []string{key}) || !slices.Equal(f, []string{key}) {
		t.Errorf("started %v, finished %v; want [%s] both", s, f, key)
	}
	if n := decided.Load(); n != 1 {
		t.Errorf("Decide called %d times, want once", n)
	}
	if got := reason(t, other, "elsewhere"); got != "" {
		t.Errorf("the run of a namespace not simulated is %q, want untouched", got)
	}
}

func middlewareLabel(t *testing.T, image string, auth authn.Authenticator) string {
	t.Helper()
	ref, err := name.ParseReference(image)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(ref, remote.WithAuth(auth))
	if err != nil {
		t.Fatalf("reading %s from the registry: %v", image, err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OS != "linux" || cfg.Architecture != "amd64" {
		t.Errorf("platform of %s = %s/%s, want linux/amd64", image, cfg.OS, cfg.Architecture)
	}
	return cfg.Config.Labels[registrytest.MiddlewareLabel]
}

func TestSim_Fails(t *testing.T) {
	ns := newNamespace(t)
	reg := registrytest.Start(t)
	oldImage := reg.Push(t, "fns/hello", "v1")
	createService(t, ns, "hello", oldImage)
	sim := tektonsim.Start(t, restConfig, tektonsim.Options{
		Namespaces: []string{ns}, Registry: reg,
		Decide: func(*pipelinev1.PipelineRun) tektonsim.Outcome {
			return tektonsim.Outcome{Fail: true, FailedTask: "build", FailedStep: "build", Message: `"step-build" exited with code 1`}
		},
	})
	createPipelineRun(t, ns, "hello-build", "hello", reg.Host+"/fns/hello:latest")

	eventually(t, inState(t, ns, "hello-build", failed))
	pr := getPipelineRun(t, ns, "hello-build")
	if c := pr.Status.GetCondition(apis.ConditionSucceeded); c.Message != "Tasks Completed: 2 (Failed: 1, Cancelled 0), Skipped: 1" || pr.Status.CompletionTime == nil {
		t.Errorf("failed status = %+v", pr.Status)
	}
	if got := serviceImage(t, ns, "hello"); got != oldImage {
		t.Errorf("Service image = %s after a failed run, want %s", got, oldImage)
	}
	children := make([]string, 0, len(pr.Status.ChildReferences))
	for _, child := range pr.Status.ChildReferences {
		children = append(children, child.PipelineTaskName+"="+child.Name)
	}
	if want := []string{"fetch-sources=hello-build-fetch-sources", "build=hello-build-build"}; !slices.Equal(children, want) {
		t.Errorf("child references = %v, want %v", children, want)
	}
	if c := getTaskRun(t, ns, "hello-build-fetch-sources").Status.GetCondition(apis.ConditionSucceeded); c == nil || !c.IsTrue() {
		t.Errorf("fetch-sources TaskRun is %+v, want succeeded", c)
	}
	tr := getTaskRun(t, ns, "hello-build-build")
	if c := tr.Status.GetCondition(apis.ConditionSucceeded); c == nil || !c.IsFalse() || c.Reason != "Failed" || c.Message != `"step-build" exited with code 1` {
		t.Errorf("build TaskRun is %+v, want failed", c)
	}
	steps := make([]string, 0, len(tr.Status.Steps))
	for _, s := range tr.Status.Steps {
		if s.Terminated == nil {
			t.Fatalf("step %s not terminated", s.Name)
		}
		steps = append(steps, fmt.Sprintf("%s:%d", s.Name, s.Terminated.ExitCode))
	}
	if want := []string{"prepare:0", "build:1"}; !slices.Equal(steps, want) {
		t.Errorf("steps = %v, want %v", steps, want)
	}
	if _, err := getTaskRunErr(ns, "hello-build-deploy"); !apierrors.IsNotFound(err) {
		t.Errorf("deploy TaskRun of a failed build: %v, want none", err)
	}
	if f := sim.Finished(); len(f) != 1 {
		t.Errorf("finished %v, want the failed run", f)
	}
}

func getTaskRunErr(ns, taskRun string) (*pipelinev1.TaskRun, error) {
	tr := &pipelinev1.TaskRun{}
	return tr, k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: taskRun}, tr)
}

func TestSim_NoService(t *testing.T) {
	ns := newNamespace(t)
	reg := registrytest.Start(t)
	tektonsim.Start(t, restConfig, tektonsim.Options{Namespaces: []string{ns}, Registry: reg})
	createPipelineRun(t, ns, "ghost-build", "ghost", reg.Host+"/fns/ghost:latest")

	eventually(t, inState(t, ns, "ghost-build", failed))
	if c := getPipelineRun(t, ns, "ghost-build").Status.GetCondition(apis.ConditionSucceeded); c.Message != "Tasks Completed: 3 (Failed: 1, Cancelled 0), Skipped: 0" {
		t.Errorf("failed condition = %+v", c)
	}
	c := getTaskRun(t, ns, "ghost-build-deploy").Status.GetCondition(apis.ConditionSucceeded)
	if c == nil || !c.IsFalse() || c.Message != "Knative Service not found" {
		t.Errorf("deploy TaskRun is %+v, want failed for the missing Service", c)
	}
}

func TestSim_MaxRunning(t *testing.T) {
	ns := newNamespace(t)
	reg := registrytest.Start(t)
	names := []string{"a", "b", "c"}
	for _, n := range names {
		createService(t, ns, n, "registry.example/old")
	}
	var release atomic.Bool
	sim := tektonsim.Start(t, restConfig, tektonsim.Options{
		Namespaces: []string{ns}, Registry: reg, Interval: 20 * time.Millisecond,
		Hold: func(*pipelinev1.PipelineRun) bool { return release.Load() },
	})
	for _, n := range names {
		createPipelineRun(t, ns, n+"-build", n, reg.Host+"/fns/"+n+":latest")
	}
	for _, n := range names {
		eventually(t, inState(t, ns, n+"-build", running))
	}
	if got := sim.MaxRunning(); got != 3 {
		t.Errorf("MaxRunning = %d with 3 runs held, want 3", got)
	}

	// A run deleted while running is forgotten: never finished, no longer running.
	if err := k8sClient.Delete(context.Background(), getPipelineRun(t, ns, "c-build")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	release.Store(true)
	for _, n := range names[:2] {
		eventually(t, inState(t, ns, n+"-build", succeeded))
	}
	// The sim records a run as finished right after writing its status: wait for it.
	eventually(t, func() string {
		if f := sim.Finished(); len(f) != 2 || slices.Contains(f, ns+"/c-build") {
			return fmt.Sprintf("finished %v, want a and b", f)
		}
		return ""
	})

	// Held again, one new run: running is back to 1, so the maximum stays 3.
	release.Store(false)
	createPipelineRun(t, ns, "d-build", "a", reg.Host+"/fns/a:latest")
	eventually(t, inState(t, ns, "d-build", running))
	if got, s := sim.MaxRunning(), sim.Started(); got != 3 || len(s) != 4 {
		t.Errorf("MaxRunning = %d, started %v; want 3 and 4 runs", got, s)
	}
	release.Store(true)
	eventually(t, inState(t, ns, "d-build", succeeded))
}

func TestRegistry_PushImagePrivate(t *testing.T) {
	reg := registrytest.StartPrivate(t, "user", "secret")
	image, err := reg.PushImage(reg.Host+"/fns/private:v1", "v3")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(image, reg.Host+"/fns/private@sha256:") {
		t.Errorf("PushImage = %s, want a digest reference in %s/fns/private", image, reg.Host)
	}
	if got := middlewareLabel(t, image, &authn.Basic{Username: "user", Password: "secret"}); got != "v3" {
		t.Errorf("label = %q, want v3", got)
	}
	if _, err := registrytest.Start(t).PushImage("not a reference", ""); err == nil {
		t.Error("PushImage of an invalid reference succeeded")
	}
}

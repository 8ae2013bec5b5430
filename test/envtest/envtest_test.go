package envtest

import (
	"context"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// TestStart_ThirdPartyCRDs starts the control plane with the Knative Serving and
// Tekton CRDs and creates the objects later reconcilers read: a Knative Service and
// a Tekton v1 PipelineRun (v1 is Tekton's storage version; no conversion webhook runs here).
func TestStart_ThirdPartyCRDs(t *testing.T) {
	env, err := Start(KnativeServingCRDs, TektonCRDs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, name := range []string{"functions.functions.dev", "services.serving.knative.dev", "pipelineruns.tekton.dev", "pipelines.tekton.dev"} {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			t.Fatalf("CRD %s: %v", name, err)
		}
		established := false
		for _, cond := range crd.Status.Conditions {
			established = established || (cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue)
		}
		if !established {
			t.Errorf("CRD %s is not established: %+v", name, crd.Status.Conditions)
		}
	}
	for _, doc := range []string{`
apiVersion: serving.knative.dev/v1
kind: Service
metadata: {name: hello, namespace: default, labels: {function.knative.dev/name: hello}}
spec:
  template:
    spec:
      containers: [{image: "registry.example/hello@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}]
`, `
apiVersion: tekton.dev/v1
kind: PipelineRun
metadata: {name: hello-build, namespace: default}
spec:
  pipelineRef: {name: hello-pipeline}
`, `
apiVersion: tekton.dev/v1beta1
kind: PipelineRun
metadata: {name: hello-build-v1beta1, namespace: default}
spec:
  pipelineRef: {name: hello-pipeline}
  params: [{name: imageName, value: registry.example/hello:latest}]
`} {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		if err := c.Create(ctx, u); err != nil {
			t.Errorf("creating %s %s: %v", u.GetAPIVersion(), u.GetKind(), err)
		}
	}
	// A v1beta1 PipelineRun (as func before v0.45 created them) reads as v1, the
	// version func v0.50.1 and the operator use (the conversion strategy is None
	// here, as no Tekton webhook runs).
	v1 := &unstructured.Unstructured{}
	v1.SetAPIVersion("tekton.dev/v1")
	v1.SetKind("PipelineRun")
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "hello-build-v1beta1"}, v1); err != nil {
		t.Fatalf("reading the v1beta1 PipelineRun as v1: %v", err)
	}
	params, _, _ := unstructured.NestedSlice(v1.Object, "spec", "params")
	if len(params) != 1 {
		t.Errorf("params of the v1beta1 PipelineRun read as v1 = %v, want the imageName param", params)
	}
}

// TestEnvironment_RestartAPIServer stops kube-apiserver and starts it again: a client
// made before the outage fails during it and works after it, with what etcd kept.
func TestEnvironment_RestartAPIServer(t *testing.T) {
	env := StartT(t)
	// The bounds in effect, on the start and on the restart, are startTimeout and
	// apiServerStopTimeout, not envtest's 20 s defaults: its Start overwrites what each
	// component was given with the Environment's.
	cp := env.env.ControlPlane
	for _, tt := range []struct {
		name      string
		got, want time.Duration
	}{
		{"kube-apiserver start", cp.APIServer.StartTimeout, startTimeout},
		{"kube-apiserver stop", cp.APIServer.StopTimeout, apiServerStopTimeout},
		{"etcd start", cp.Etcd.StartTimeout, startTimeout},
	} {
		if tt.got != tt.want {
			t.Errorf("%s timeout = %s, want %s", tt.name, tt.got, tt.want)
		}
	}
	c, err := client.New(env.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cm := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]interface{}{"namespace": "default", "name": "kept"},
	}}
	if err := c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if err := env.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	got := &unstructured.Unstructured{}
	got.SetAPIVersion("v1")
	got.SetKind("ConfigMap")
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "kept"}, got); err == nil {
		t.Error("the API server answered while stopped")
	}
	if err := env.StartAPIServer(); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "kept"}, got); err != nil {
		t.Errorf("after the restart, the client made before it: %v", err)
	}
}

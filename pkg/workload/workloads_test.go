package workload

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	kedav1alpha1 "github.com/kedacore/http-add-on/operator/apis/http/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/fnops/func-operator/pkg/funclib"
)

// service is the core Service func's raw or keda deployer writes beside its Deployment.
func service(deployer string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "fns", Name: "hello",
		Labels: map[string]string{FunctionNameLabel: "hello"}, Annotations: map[string]string{funclib.DeployerAnnotation: deployer}}}
}

// TestWorkloads_Find reads what the caches hold (a fake client here: Find's logic
// alone; pkg/operator's tests read through the manager's caches).
func TestWorkloads_Find(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := kedav1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	so := &kedav1alpha1.HTTPScaledObject{ObjectMeta: metav1.ObjectMeta{Namespace: "fns", Name: "hello"},
		Spec: kedav1alpha1.HTTPScaledObjectSpec{Hosts: []string{"hello-interceptor-bridge.fns.svc", "hello-interceptor-bridge"}}}
	tests := []struct {
		name         string
		objs         []client.Object
		noKEDA       bool
		wantErr      error // nil: found
		wantDeployer string
		wantRoutes   []string
		wantSO       bool
	}{{
		name:    "nothing",
		wantErr: funclib.ErrNotDeployed,
	}, {
		name:    "a Service func's raw or keda deployer did not annotate (Knative's own, a user's)",
		objs:    []client.Object{service(""), readyDeployment(t)},
		wantErr: funclib.ErrNotDeployed,
	}, {
		name:    "the annotated Service without its Deployment",
		objs:    []client.Object{service("raw")},
		wantErr: funclib.ErrNotDeployed,
	}, {
		name: "raw", objs: []client.Object{service("raw"), readyDeployment(t)},
		wantDeployer: "raw", wantRoutes: []string{"http://hello.fns.svc"},
	}, {
		name: "keda: the HTTPScaledObject's hosts, on the interceptor's port", objs: []client.Object{service("keda"), readyDeployment(t), so},
		wantDeployer: "keda", wantSO: true,
		wantRoutes: []string{"http://hello-interceptor-bridge.fns.svc:8080", "http://hello-interceptor-bridge:8080"},
	}, {
		name: "keda before the cluster serves HTTPScaledObjects: none looked for", objs: []client.Object{service("keda"), readyDeployment(t), so},
		noKEDA: true, wantDeployer: "keda", wantRoutes: []string{"http://hello.fns.svc"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, o := range tt.objs {
				o.SetNamespace("fns")
			}
			ws := &Workloads{Reader: fake.NewClientBuilder().WithScheme(scheme).WithObjects(tt.objs...).Build()}
			if !tt.noKEDA {
				ws.EnableKEDA()
			}
			w, err := ws.Find(context.Background(), "hello", "fns")
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Find = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if w.Deployer != tt.wantDeployer || (w.ScaledObject != nil) != tt.wantSO || w.NoKEDA != tt.noKEDA {
				t.Errorf("Find = deployer %q, HTTPScaledObject %t, NoKEDA %t; want %q, %t, %t", w.Deployer, w.ScaledObject != nil, w.NoKEDA, tt.wantDeployer, tt.wantSO, tt.noKEDA)
			}
			if diff := cmp.Diff(tt.wantRoutes, w.Routes()); diff != "" {
				t.Errorf("Routes (-want +got):\n%s", diff)
			}
			// The describer of the other deployer does not take it.
			other := funclib.DeployerKeda
			if w.Deployer == other {
				other = funclib.DeployerRaw
			}
			if _, err := ws.Source(other).Instance(context.Background(), "hello", "fns"); !errors.Is(err, funclib.ErrNotDeployed) {
				t.Errorf("the %s source described a %s function: %v", other, w.Deployer, err)
			}
			in, err := ws.Source(w.Deployer).Instance(context.Background(), "hello", "fns")
			if err != nil || in.Image != w.Image() || in.Route != tt.wantRoutes[0] || in.Deployer != w.Deployer {
				t.Errorf("Instance = %+v, %v", in, err)
			}
		})
	}
}

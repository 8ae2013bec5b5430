package knative

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	eventingv1 "knative.dev/eventing/pkg/apis/eventing/v1"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/test/envtest"
)

var (
	k8sClient client.Client
	informers cache.Cache
	// stopInformers ends the informers' watches before the control plane stops.
	stopInformers = func() {}
)

// controlPlane is the API server of this package's tests, started by the first test
// that needs one (newNamespace) and skipped under -short (make test-unit).
var controlPlane = envtest.Shared{CRDs: []string{envtest.KnativeServingCRDs}, Setup: setup}

func TestMain(m *testing.M) {
	code := m.Run()
	if stopInformers != nil {
		stopInformers()
	}
	if err := controlPlane.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// setup makes a direct client for writing and an informer cache for reading, as the
// operator's manager has.
func setup(env *envtest.Environment) error {
	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), servingv1.AddToScheme(scheme), eventingv1.AddToScheme(scheme)); err != nil {
		return err
	}
	var err error
	if k8sClient, err = client.New(env.Config, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	// The operator's transforms of these kinds: what the tests read survives them.
	transform := func(o any) (any, error) {
		o, err := Slim(o)
		if err != nil {
			return o, err
		}
		return SlimTrigger(o)
	}
	if informers, err = cache.New(env.Config, cache.Options{Scheme: scheme, DefaultTransform: transform}); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopInformers = cancel
	go func() { _ = informers.Start(ctx) }()
	if !informers.WaitForCacheSync(ctx) {
		return errors.New("the informer cache did not sync")
	}
	return nil
}

const digest = "registry.example/fns/hello@sha256:9b2a0b4c2f0e2f6c1e6b1f6a4a7b3d0c5e8f9a1b2c3d4e5f60718293a4b5c6d7"

// deploy creates a Knative Service as func's deployer does, with the status Knative
// Serving would give it, and its ready Revision when revision is not empty.
func deploy(t *testing.T, ns, name, revision string) {
	t.Helper()
	ctx := context.Background()
	svc := &servingv1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{FunctionNameLabel: name}},
		Spec: servingv1.ServiceSpec{ConfigurationSpec: servingv1.ConfigurationSpec{Template: servingv1.RevisionTemplateSpec{
			Spec: servingv1.RevisionSpec{PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Image: "registry.example/fns/hello:latest"}}}},
		}}},
	}
	if err := k8sClient.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	svc.Status.ObservedGeneration = svc.Generation
	svc.Status.URL = apis.HTTP(name + "." + ns + ".example.com")
	tagged := apis.HTTP("canary-" + name + "." + ns + ".example.com")
	svc.Status.Traffic = []servingv1.TrafficTarget{{RevisionName: revision, Percent: ptr(int64(100))}, {Tag: "canary", URL: tagged}}
	svc.Status.LatestReadyRevisionName = revision
	svc.Status.Conditions = duckv1.Conditions{{Type: apis.ConditionReady, Status: corev1.ConditionTrue}}
	if err := k8sClient.Status().Update(ctx, svc); err != nil {
		t.Fatal(err)
	}
	if revision == "" {
		return
	}
	rev := &servingv1.Revision{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: revision},
		Spec:       servingv1.RevisionSpec{PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Image: "registry.example/fns/hello:latest"}}}},
	}
	if err := k8sClient.Create(ctx, rev); err != nil {
		t.Fatal(err)
	}
	rev.Status.ContainerStatuses = []servingv1.ContainerStatus{{Name: "user-container", ImageDigest: digest}}
	if err := k8sClient.Status().Update(ctx, rev); err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }

func newNamespace(t *testing.T) string {
	t.Helper()
	controlPlane.Get(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "kn-test-"}}
	if err := k8sClient.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// describeEventually describes through the func library's client over the informer
// cache, until the cache has caught up with what the test wrote.
func describeEventually(t *testing.T, ns, name string, done func(funclib.Instance, error) bool) (funclib.Instance, error) {
	t.Helper()
	d := funclib.NewDescriber(&Services{Reader: informers})
	deadline := time.Now().Add(10 * time.Second)
	for {
		in, err := d.Describe(context.Background(), funclib.DeployerKnative, name, ns)
		if done(in, err) || time.Now().After(deadline) {
			return in, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSource_Describe runs on a control plane without Knative Eventing: describing
// works, with no subscriptions.
func TestServices_Describe(t *testing.T) {
	ns := newNamespace(t)
	deploy(t, ns, "hello", "hello-00001")
	deploy(t, ns, "fresh", "")

	tests := []struct {
		name string
		want funclib.Instance
	}{{
		name: "hello",
		want: funclib.Instance{
			Name: "hello", Namespace: ns, Image: digest, Deployer: funclib.DeployerKnative,
			Route:  "http://hello." + ns + ".example.com",
			Routes: []string{"http://hello." + ns + ".example.com", "http://canary-hello." + ns + ".example.com"},
		},
	}, {
		name: "fresh", // no ready Revision yet: the image its template names
		want: funclib.Instance{
			Name: "fresh", Namespace: ns, Image: "registry.example/fns/hello:latest", Deployer: funclib.DeployerKnative,
			Route:  "http://fresh." + ns + ".example.com",
			Routes: []string{"http://fresh." + ns + ".example.com", "http://canary-fresh." + ns + ".example.com"},
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := describeEventually(t, ns, tc.name, func(in funclib.Instance, err error) bool {
				return err == nil && in.Image == tc.want.Image && in.Route != ""
			})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Describe (-want +got):\n%s", diff)
			}
		})
	}
}

func TestServices_NotDeployed(t *testing.T) {
	ns := newNamespace(t)
	_, err := describeEventually(t, ns, "nothing", func(_ funclib.Instance, err error) bool { return err != nil })
	if !errors.Is(err, funclib.ErrNotDeployed) {
		t.Errorf("Describe of a function without a Service = %v, want ErrNotDeployed", err)
	}
}

func TestDescriber_NeedsNameAndNamespace(t *testing.T) {
	controlPlane.Get(t) // the informers
	d := funclib.NewDescriber(&Services{Reader: informers})
	for _, c := range [][2]string{{"", "ns"}, {"name", ""}} {
		if _, err := d.Describe(context.Background(), funclib.DeployerKnative, c[0], c[1]); err == nil {
			t.Errorf("Describe(%q, %q) = nil error, want one", c[0], c[1])
		}
	}
}

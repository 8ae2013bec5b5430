package function

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	eventingv1 "knative.dev/eventing/pkg/apis/eventing/v1"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/knative"
	"github.com/fnops/func-operator/test/gitserver"
	"github.com/fnops/func-operator/test/registrytest"
)

// TestReconciler_Subscriptions describes the Knative Eventing Triggers that deliver
// events to the function, matched by subscriber reference or by the Service's address.
func TestReconcile_Subscriptions(t *testing.T) {
	ns, repoURL := deployedHello(t)
	trigger := func(name, broker string, attrs map[string]string, dest duckv1.Destination) *eventingv1.Trigger {
		return &eventingv1.Trigger{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       eventingv1.TriggerSpec{Broker: broker, Filter: &eventingv1.TriggerFilter{Attributes: attrs}, Subscriber: dest},
		}
	}
	mustCreate(t,
		trigger("by-ref", "default", map[string]string{"type": "order.created", "source": "shop"},
			duckv1.Destination{Ref: &duckv1.KReference{APIVersion: "serving.knative.dev/v1", Kind: "Service", Name: "hello"}}),
		trigger("by-uri", "audit", map[string]string{"type": "order.audited"},
			duckv1.Destination{URI: apis.HTTP("hello." + ns + ".svc.cluster.local")}),
		trigger("other-service", "default", map[string]string{"type": "x"},
			duckv1.Destination{Ref: &duckv1.KReference{APIVersion: "serving.knative.dev/v1", Kind: "Service", Name: "other"}}),
		trigger("other-uri", "default", map[string]string{"type": "y"},
			duckv1.Destination{URI: apis.HTTP("other." + ns + ".svc.cluster.local")}),
	)
	mustCreate(t, newFunction(ns, "fn", v1alpha1.Repository{URL: repoURL}))

	// Until Knative Eventing is known to be served, no Trigger is looked for.
	r, _ := newTestReconciler(t, 10)
	if _, err := reconcileOnce(t, r, ns, "fn"); err != nil {
		t.Fatal(err)
	}
	if got := getFunction(t, ns, "fn").Status.Service; got == nil || len(got.Subscriptions) != 0 {
		t.Fatalf("status.service = %+v before Eventing is known to be served, want no subscriptions", got)
	}

	r.Services.EnableEventing()
	if _, err := reconcileOnce(t, r, ns, "fn"); err != nil {
		t.Fatal(err)
	}
	got := getFunction(t, ns, "fn")
	if got.Status.Service == nil {
		t.Fatalf("status.service is empty; status: %+v", got.Status)
	}
	want := []v1alpha1.Subscription{
		{Broker: "audit", Type: "order.audited"},
		{Broker: "default", Source: "shop", Type: "order.created"},
	}
	if diff := cmp.Diff(want, got.Status.Service.Subscriptions); diff != "" {
		t.Errorf("status.service.subscriptions (-want +got):\n%s", diff)
	}
}

// TestReconcile_SubscriptionsBounded: build code (which may create Triggers as the
// build ServiceAccount) makes 200 Triggers with 8 KiB filters for one function, 1.6
// MB together: the status shows the first MaxSubscriptions, each value cut, and says
// how many more there are, and its write lands (unbounded, it is over etcd's object
// limit). The positive control is TestReconcile_Subscriptions: Triggers within the
// bounds show whole.
func TestReconcile_SubscriptionsBounded(t *testing.T) {
	ns, repoURL := deployedHello(t)
	const triggers = 200
	long := strings.Repeat("s", 8<<10)
	for i := range triggers {
		mustCreate(t, &eventingv1.Trigger{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("t%03d", i)},
			Spec: eventingv1.TriggerSpec{Broker: "default",
				Filter:     &eventingv1.TriggerFilter{Attributes: map[string]string{"type": fmt.Sprintf("t%03d", i), "source": long}},
				Subscriber: duckv1.Destination{Ref: &duckv1.KReference{APIVersion: "serving.knative.dev/v1", Kind: "Service", Name: "hello"}}},
		})
	}
	mustCreate(t, newFunction(ns, "fn", v1alpha1.Repository{URL: repoURL}))
	r, _ := newTestReconciler(t, 10)
	r.Services.EnableEventing()
	if _, err := reconcileOnce(t, r, ns, "fn"); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	got := getFunction(t, ns, "fn").Status.Service
	if got == nil {
		t.Fatal("status.service is empty")
	}
	if len(got.Subscriptions) != v1alpha1.MaxSubscriptions || got.SubscriptionsOmitted != triggers-v1alpha1.MaxSubscriptions {
		t.Fatalf("status.service shows %d subscriptions and %d omitted, want %d and %d",
			len(got.Subscriptions), got.SubscriptionsOmitted, v1alpha1.MaxSubscriptions, triggers-v1alpha1.MaxSubscriptions)
	}
	wantSource := strings.Repeat("s", knative.MaxAttributeBytes-3) + "..."
	if first := got.Subscriptions[0]; first.Type != "t000" || first.Source != wantSource {
		t.Errorf("first subscription = type %q, source of %d bytes; want t000, cut to %d bytes", first.Type, len(first.Source), len(wantSource))
	}
}

// deployedHello is function hello in a namespace of its own: its repository served
// here, its image up to date, and a ready Knative Service running it. It returns the
// namespace and the repository's URL.
func deployedHello(t *testing.T) (ns, repoURL string) {
	t.Helper()
	pin, err := funclib.AvailableMiddleware("go", "http")
	if err != nil {
		t.Fatal(err)
	}
	reg := registrytest.Start(t)
	image := reg.Push(t, "fns/hello", pin.Version)
	root := gitserver.NewRepoRoot(t)
	srv := gitserver.StartHTTP(t, root)
	gitserver.CreateRepo(t, root, "hello").Commit(t, "main", map[string]string{"func.yaml": funcYAML("hello", "go")}, "hello")
	ns = newNamespace(t)
	knativeService{ready: &apis.Condition{Type: apis.ConditionReady, Status: corev1.ConditionTrue},
		readyRevision: "hello-00001", revisionDigest: image}.create(t, ns)
	return ns, srv.URL("hello")
}

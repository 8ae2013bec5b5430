package knative

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	eventingv1 "knative.dev/eventing/pkg/apis/eventing/v1"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"
	"sigs.k8s.io/yaml"
)

// TestSlimTrigger: a Trigger as a tenant could write it (a megabyte of filters,
// annotations and a long type) is kept as what the operator reads, bounded.
func TestSlimTrigger(t *testing.T) {
	const in = `
apiVersion: eventing.knative.dev/v1
kind: Trigger
metadata:
  name: orders
  namespace: shop
  uid: 0b5c
  resourceVersion: "42"
  labels: {team: shop}
  annotations: {note: big}
spec:
  broker: default
  filter:
    attributes:
      type: order.created
      source: shop
      extension: anything
  subscriber:
    ref: {apiVersion: serving.knative.dev/v1, kind: Service, name: hello}
    uri: /path?query=1
  delivery:
    retry: 3
`
	var trigger eventingv1.Trigger
	if err := yaml.Unmarshal([]byte(in), &trigger); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 1<<20)
	trigger.Annotations["note"] = big
	trigger.Spec.Filter.Attributes["source"] = "shop-" + big
	got, err := SlimTrigger(&trigger)
	if err != nil {
		t.Fatal(err)
	}
	want := &eventingv1.Trigger{
		TypeMeta:   metav1.TypeMeta{APIVersion: "eventing.knative.dev/v1", Kind: "Trigger"},
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "shop", UID: "0b5c", ResourceVersion: "42"},
		Spec: eventingv1.TriggerSpec{
			Broker: "default",
			Filter: &eventingv1.TriggerFilter{Attributes: map[string]string{
				"type": "order.created", "source": "shop-" + strings.Repeat("x", MaxAttributeBytes-len("shop-...")) + "..."}},
			Subscriber: duckv1.Destination{
				Ref: &duckv1.KReference{APIVersion: "serving.knative.dev/v1", Kind: "Service", Name: "hello"},
				URI: &apis.URL{Path: "/path"},
			},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SlimTrigger (-want +got):\n%s", diff)
	}
	// A subscriber URI longer than any Service's address is dropped.
	trigger.Spec.Subscriber.URI = &apis.URL{Host: "hello", Path: "/" + big}
	got, _ = SlimTrigger(&trigger)
	if u := got.(*eventingv1.Trigger).Spec.Subscriber.URI; u != nil {
		t.Errorf("a subscriber URI with a 1 MiB path is kept: %d bytes", len(u.Path))
	}
	// The positive control: a type that is not a Trigger passes through unchanged.
	if o, _ := SlimTrigger("not a trigger"); o != "not a trigger" {
		t.Errorf("SlimTrigger changed a value of another type: %v", o)
	}
}

func TestCut(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"short", "short"},
		{strings.Repeat("a", 10), strings.Repeat("a", 10)},
		{strings.Repeat("a", 11), "aaaaaaa..."},
		{"aaaaaa€€", "aaaaaa..."}, // never cuts a character in two
	} {
		got := Cut(tc.in, 10)
		if got != tc.want || len(got) > 10 || !utf8.ValidString(got) {
			t.Errorf("Cut(%q, 10) = %q, want %q (at most 10 bytes, valid UTF-8)", tc.in, got, tc.want)
		}
	}
}

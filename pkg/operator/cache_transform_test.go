package operator

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	eventingv1 "knative.dev/eventing/pkg/apis/eventing/v1"
)

// TestCacheTransform: every informer of the manager strips managedFields, and a
// Trigger (cached cluster-wide, written by anyone who may create one) keeps only what
// the operator reads. The positive control: another kind keeps its annotations.
func TestCacheTransform(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	o, err := cacheTransform(&eventingv1.Trigger{
		ObjectMeta: metav1.ObjectMeta{Name: "t", Annotations: map[string]string{"a": big}, ManagedFields: managed},
		Spec:       eventingv1.TriggerSpec{Broker: "default", Filter: &eventingv1.TriggerFilter{Attributes: map[string]string{"other": big}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	tr := o.(*eventingv1.Trigger)
	if tr.Annotations != nil || tr.ManagedFields != nil || len(tr.Spec.Filter.Attributes) != 0 || tr.Spec.Broker != "default" {
		t.Errorf("cached Trigger keeps annotations %d, managedFields %v, filter %d, broker %q; want none, none, none, default",
			len(tr.Annotations), tr.ManagedFields, len(tr.Spec.Filter.Attributes), tr.Spec.Broker)
	}
	o, err = cacheTransform(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Annotations: map[string]string{"a": "b"}, ManagedFields: managed}})
	if err != nil {
		t.Fatal(err)
	}
	if cm := o.(*corev1.ConfigMap); cm.ManagedFields != nil || cm.Annotations["a"] != "b" {
		t.Errorf("cached ConfigMap: managedFields %v, annotations %v; want none, a=b", cm.ManagedFields, cm.Annotations)
	}
}

package operator

import (
	"strings"
	"testing"

	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	appsv1 "k8s.io/api/apps/v1"
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
	// A Deployment (cached cluster-wide where func labelled it) is cut by
	// workload.Slim: no env value, which may be a secret, reaches the cache.
	o, err = cacheTransform(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "hello", ManagedFields: managed,
		Labels: map[string]string{"function.knative.dev/name": "hello"}, Annotations: map[string]string{"a": big}},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "user-container", Image: "img", Env: []corev1.EnvVar{{Name: "DB_PASSWORD", Value: "plain"}}}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	d := o.(*appsv1.Deployment)
	if c := d.Spec.Template.Spec.Containers; d.ManagedFields != nil || len(d.Annotations) != 0 || len(c) != 1 || c[0].Image != "img" || len(c[0].Env) != 0 {
		t.Errorf("cached Deployment: managedFields %v, annotations %d, containers %+v; want none, none, the image alone", d.ManagedFields, len(d.Annotations), c)
	}
	// A PipelineRun (cached whole, every one of the cluster, when Tekton was installed
	// after the start) keeps no params.
	o, err = cacheTransform(&pipelinev1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: "lookalike", ManagedFields: managed},
		Spec: pipelinev1.PipelineRunSpec{Params: pipelinev1.Params{{Name: "big", Value: *pipelinev1.NewStructuredValues(big)}}}})
	if err != nil {
		t.Fatal(err)
	}
	if pr := o.(*pipelinev1.PipelineRun); pr.ManagedFields != nil || len(pr.Spec.Params) != 0 || pr.Name != "lookalike" {
		t.Errorf("cached PipelineRun: managedFields %v, params %d, name %q; want none, none, lookalike", pr.ManagedFields, len(pr.Spec.Params), pr.Name)
	}
}

package workload

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	kedav1alpha1 "github.com/kedacore/http-add-on/operator/apis/http/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/fnops/func-operator/pkg/funclib"
)

// TestSlim: a cached object keeps what Find and ReadinessOf read, and nothing a tenant
// could make large: env values, volumes, other labels and annotations, long messages.
func TestSlim(t *testing.T) {
	big := strings.Repeat("x", 64<<10)
	d := readyDeployment(t)
	d.Annotations["kubectl.kubernetes.io/last-applied-configuration"] = big
	d.Labels["team"] = "a"
	d.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "DB_PASSWORD", Value: "s3cret-in-plain-env"}}
	d.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "v"}}
	d.Status.Conditions[0].Message = big
	d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "sidecar", Image: "s"}, corev1.Container{Name: "third", Image: "t"})

	o, err := Slim(d)
	if err != nil {
		t.Fatal(err)
	}
	got := o.(*appsv1.Deployment)
	w := &Workload{Deployer: funclib.DeployerRaw, Deployment: got}
	// What the operator reads survives: the image, and the same readiness.
	if w.Image() != d.Spec.Template.Spec.Containers[0].Image {
		t.Errorf("image = %q after Slim, want %q", w.Image(), d.Spec.Template.Spec.Containers[0].Image)
	}
	if diff := cmp.Diff(ReadinessOf(&Workload{Deployer: funclib.DeployerRaw, Deployment: d}).Status, ReadinessOf(w).Status); diff != "" {
		t.Errorf("readiness changed by Slim (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{FunctionNameLabel: "hello"}, got.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{funclib.DeployerAnnotation: "raw"}, got.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	// What it does not read is gone: no env value (which may be a secret), no volume.
	for _, c := range got.Spec.Template.Spec.Containers {
		if len(c.Env) > 0 || len(c.VolumeMounts) > 0 {
			t.Errorf("container %s kept env or mounts: %+v", c.Name, c)
		}
	}
	if len(got.Spec.Template.Spec.Containers) != 2 || len(got.Spec.Template.Spec.Volumes) != 0 {
		t.Errorf("kept %d containers and %d volumes, want 2 and 0", len(got.Spec.Template.Spec.Containers), len(got.Spec.Template.Spec.Volumes))
	}
	if n := len(got.Status.Conditions[0].Message); n > MaxTextBytes {
		t.Errorf("a condition message of %d bytes kept, want at most %d", n, MaxTextBytes)
	}

	svc := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Labels: map[string]string{FunctionNameLabel: "hello", "x": "y"},
			Annotations: map[string]string{funclib.DeployerAnnotation: "keda", "big": big}}}
	o, _ = Slim(svc)
	if got := o.(*metav1.PartialObjectMetadata); len(got.Annotations) != 1 || got.Annotations[funclib.DeployerAnnotation] != "keda" || len(got.Labels) != 1 {
		t.Errorf("Service metadata after Slim: labels %v, annotations %d", got.Labels, len(got.Annotations))
	}

	hosts := make([]string, 20)
	for i := range hosts {
		hosts[i] = fmt.Sprintf("h%d.fns.svc", i)
	}
	hosts[1] = big // no DNS name: dropped
	so := &kedav1alpha1.HTTPScaledObject{ObjectMeta: metav1.ObjectMeta{Name: "hello"}, Spec: kedav1alpha1.HTTPScaledObjectSpec{Hosts: hosts},
		Status: kedav1alpha1.HTTPScaledObjectStatus{Conditions: []metav1.Condition{{Type: "Other", Message: big}, {Type: "Ready", Status: "True", Message: big}}}}
	o, _ = Slim(so)
	gotSO := o.(*kedav1alpha1.HTTPScaledObject)
	if diff := cmp.Diff([]string{"h0.fns.svc", "h2.fns.svc", "h3.fns.svc"}, gotSO.Spec.Hosts); diff != "" || len(gotSO.Status.Conditions) != 1 || gotSO.Status.Conditions[0].Type != "Ready" {
		t.Errorf("HTTPScaledObject after Slim: hosts (-want +got):\n%s\nconditions %d", diff, len(gotSO.Status.Conditions))
	}

	// Other objects pass as they are.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Annotations: map[string]string{"big": big}}}
	if o, _ := Slim(cm); o != cm {
		t.Error("Slim changed a ConfigMap")
	}
}

// TestCacheSelector: the caches hold only what carries func's function name label.
func TestCacheSelector(t *testing.T) {
	sel := CacheSelector()
	for _, tt := range []struct {
		labels labels.Set
		want   bool
	}{
		{labels.Set{FunctionNameLabel: "hello"}, true},
		{labels.Set{"app": "hello"}, false},
		// What Knative Serving makes of a knative function carries func's label too.
		{labels.Set{FunctionNameLabel: "hello", "serving.knative.dev/revision": "hello-00001"}, false},
		{labels.Set{FunctionNameLabel: "hello", "serving.knative.dev/route": "hello"}, false},
	} {
		if got := sel.Matches(tt.labels); got != tt.want {
			t.Errorf("selector %s matches %v: %t, want %t", sel, tt.labels, got, tt.want)
		}
	}
}

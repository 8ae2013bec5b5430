package knative

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	"sigs.k8s.io/yaml"

	"github.com/fnops/func-operator/pkg/netguard"
)

// hostileService is a Knative Service as a tenant may write it and Knative report it;
// hostile adds the megabytes.
const hostileService = `
apiVersion: serving.knative.dev/v1
kind: Service
metadata:
  name: hello
  namespace: team-a
  uid: 7d1c
  resourceVersion: "9"
  generation: 3
  labels: {function.knative.dev/name: hello, team: a}
  annotations: {note: small}
spec:
  template:
    spec:
      containers:
      - name: user-container
        image: registry.example/fns/hello:latest
        env: [{name: BIG, value: small}]
      - name: sidecar
        image: registry.example/sidecar
status:
  observedGeneration: 3
  latestCreatedRevisionName: hello-00003
  latestReadyRevisionName: hello-00002
  url: http://hello.team-a.example.com
  address: {url: http://hello.team-a.svc.cluster.local}
  traffic:
  - {revisionName: hello-00002, percent: 100, url: http://hello.team-a.example.com}
  - {tag: canary, revisionName: hello-00003, percent: 0, url: http://canary-hello.team-a.example.com}
  conditions:
  - {type: ConfigurationsReady, status: "False", reason: RevisionFailed, message: other}
  - {type: Ready, status: "False", reason: RevisionFailed, message: "Revision hello-00003 failed"}
`

// hostile fills every field a tenant writes and the operator does not read with 1 MiB,
// the cut ones with long text, and the traffic with 1,000 tagged targets.
func hostile(t *testing.T) *servingv1.Service {
	t.Helper()
	var svc servingv1.Service
	if err := yaml.Unmarshal([]byte(hostileService), &svc); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 1<<20)
	svc.Annotations["note"] = big
	svc.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: big}}
	svc.Spec.Template.Spec.Containers[0].Env[0].Value = big
	svc.Spec.Template.Annotations = map[string]string{"note": big}
	for i := 0; i < 1000; i++ {
		u, _ := apis.ParseURL(fmt.Sprintf("http://t%d-hello.team-a.example.com", i))
		svc.Status.Traffic = append(svc.Status.Traffic, servingv1.TrafficTarget{Tag: fmt.Sprintf("t%d", i), URL: u})
	}
	svc.Status.Conditions[0].Message = big
	return &svc
}

// TestSlim_Service: a Service is kept as what Services and the Function mapping read,
// each text bounded, so a cached Service costs a few KiB whatever its size.
func TestSlim_Service(t *testing.T) {
	svc := hostile(t)
	svc.Status.Conditions[1].Message = "Revision hello-00003 failed: " + strings.Repeat("é", 1000)
	got, err := Slim(svc)
	if err != nil {
		t.Fatal(err)
	}
	if m := got.(*servingv1.Service).Status.Conditions[0].Message; len(m) > MaxTextBytes || !strings.HasSuffix(m, "bytes cut)") {
		t.Errorf("a 2 KiB Ready message is kept as %d bytes, ending %q", len(m), m[len(m)-12:])
	}
	u := func(s string) *apis.URL { u, _ := apis.ParseURL(s); return u }
	want := &servingv1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "serving.knative.dev/v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "team-a", UID: "7d1c", ResourceVersion: "9", Generation: 3,
			Labels: map[string]string{FunctionNameLabel: "hello"}},
		Spec: servingv1.ServiceSpec{ConfigurationSpec: servingv1.ConfigurationSpec{Template: servingv1.RevisionTemplateSpec{
			Spec: servingv1.RevisionSpec{PodSpec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "user-container", Image: "registry.example/fns/hello:latest"}}}}}}},
		Status: servingv1.ServiceStatus{
			Status: duckv1.Status{ObservedGeneration: 3, Conditions: duckv1.Conditions{{Type: apis.ConditionReady, Status: "False",
				Reason: "RevisionFailed", Message: netguard.CapText(svc.Status.Conditions[1].Message, MaxTextBytes)},
				{Type: servingv1.ServiceConditionConfigurationsReady, Status: "False", Reason: "RevisionFailed", Message: netguard.CapText(svc.Status.Conditions[0].Message, MaxTextBytes)}}},
			ConfigurationStatusFields: servingv1.ConfigurationStatusFields{LatestReadyRevisionName: "hello-00002", LatestCreatedRevisionName: "hello-00003"},
			RouteStatusFields: servingv1.RouteStatusFields{
				URL:     u("http://hello.team-a.example.com"),
				Address: &duckv1.Addressable{URL: u("http://hello.team-a.svc.cluster.local")},
			},
		},
	}
	for i, tt := range svc.Status.Traffic[:MaxTraffic] {
		want.Status.Traffic = append(want.Status.Traffic, servingv1.TrafficTarget{URL: tt.URL})
		if i < 2 && tt.URL.String() != []string{"http://hello.team-a.example.com", "http://canary-hello.team-a.example.com"}[i] {
			t.Fatalf("fixture: traffic %d is %s", i, tt.URL)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Slim(Service) (-want +got):\n%s", diff)
	}
	assertSize(t, "Service", svc, got, 5<<10)

	// A URL whose host is no DNS name is dropped, not cut: it names nothing.
	svc.Status.URL = &apis.URL{Scheme: "http", Host: strings.Repeat("h", 300)}
	if got, _ := Slim(svc); got.(*servingv1.Service).Status.URL != nil {
		t.Errorf("a status URL with a 300-byte host is kept")
	}
}

// TestSlim_Revision: a Revision (one per update of a Service, each a copy of its
// template) keeps the image digests it resolved.
func TestSlim_Revision(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	rev := &servingv1.Revision{
		TypeMeta: metav1.TypeMeta{APIVersion: "serving.knative.dev/v1", Kind: "Revision"},
		ObjectMeta: metav1.ObjectMeta{Name: "hello-00002", Namespace: "team-a", UID: "r2", ResourceVersion: "7",
			Labels: map[string]string{FunctionNameLabel: "hello", "serving.knative.dev/service": "hello"}, Annotations: map[string]string{"note": big}},
		Spec: servingv1.RevisionSpec{PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Name: "user-container", Image: "img",
			Env: []corev1.EnvVar{{Name: "BIG", Value: big}}}}}},
		Status: servingv1.RevisionStatus{ContainerStatuses: []servingv1.ContainerStatus{
			{Name: "user-container", ImageDigest: digest}, {Name: "sidecar", ImageDigest: "registry.example/side@sha256:00"}, {Name: "third", ImageDigest: big}}},
	}
	got, err := Slim(rev)
	if err != nil {
		t.Fatal(err)
	}
	want := &servingv1.Revision{
		TypeMeta: rev.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: "hello-00002", Namespace: "team-a", UID: "r2", ResourceVersion: "7",
			Labels: map[string]string{FunctionNameLabel: "hello"}},
		Status: servingv1.RevisionStatus{ContainerStatuses: []servingv1.ContainerStatus{
			{Name: "user-container", ImageDigest: digest}, {Name: "sidecar", ImageDigest: "registry.example/side@sha256:00"}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Slim(Revision) (-want +got):\n%s", diff)
	}
	assertSize(t, "Revision", rev, got, 1<<10)
	// The positive control: another kind passes through unchanged.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"note": big}}}
	if o, _ := Slim(cm); o != cm || len(cm.Annotations["note"]) != len(big) {
		t.Errorf("Slim changed an object of another kind")
	}
}

// assertSize checks that slim encodes in at most max bytes, against an original of
// more than a MiB: the bound is what a cached copy costs however large the stored one.
func assertSize(t *testing.T, kind string, orig, slim any, max int) {
	t.Helper()
	before, err := json.Marshal(orig)
	if err != nil {
		t.Fatal(err)
	}
	after, err := json.Marshal(slim)
	if err != nil {
		t.Fatal(err)
	}
	if len(before) < 1<<20 || len(after) > max {
		t.Errorf("%s: %d bytes stored, %d cached; want more than 1 MiB stored (the control), at most %d cached", kind, len(before), len(after), max)
	}
	t.Logf("%s: %d bytes stored, %d cached", kind, len(before), len(after))
}

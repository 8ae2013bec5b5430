package envtest

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"knative.dev/pkg/apis"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"

	"github.com/fnops/func-operator/test/syncbuffer"
)

// TestKnativeServingSimulation: a Knative Service gets a ready Revision of its
// generation, with the image's digest, and its status reports it ready and serving;
// a new image makes a second Revision. The negative control: a Service of another
// namespace is left alone.
func TestKnativeServingSimulation(t *testing.T) {
	env := StartT(t, KnativeServingCRDs)
	ns := NewNamespace(t, env.Config, "knative-", false)
	other := NewNamespace(t, env.Config, "knative-other-", false)
	observed := &syncbuffer.Buffer{}
	SimulateKnativeServingT(t, env.Config, KnativeServingOptions{Namespace: ns, Observe: func(msg string) {
		_, _ = observed.Write([]byte(msg + "\n"))
	}})
	c, err := env.Client(servingv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	image := func(c byte) string { return "127.0.0.1:5000/fns/hello@sha256:" + strings.Repeat(string(c), 64) }
	for _, n := range []string{ns, other} {
		svc := &servingv1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: n, Name: "hello"},
			Spec: servingv1.ServiceSpec{ConfigurationSpec: servingv1.ConfigurationSpec{Template: servingv1.RevisionTemplateSpec{
				Spec: servingv1.RevisionSpec{PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Image: image('a')}}}},
			}}},
		}
		if err := c.Create(ctx, svc); err != nil {
			t.Fatal(err)
		}
	}
	serving := func(n, revision, img string) func() bool {
		return func() bool {
			svc := &servingv1.Service{}
			if err := c.Get(ctx, types.NamespacedName{Namespace: n, Name: "hello"}, svc); err != nil {
				return false
			}
			rev := &servingv1.Revision{}
			if err := c.Get(ctx, types.NamespacedName{Namespace: n, Name: revision}, rev); err != nil {
				return false
			}
			return svc.Status.ObservedGeneration == svc.Generation && svc.Status.GetCondition(apis.ConditionReady).IsTrue() &&
				svc.Status.LatestReadyRevisionName == revision && svc.Status.URL.String() == "http://hello."+n+".example.com" &&
				len(svc.Status.Traffic) == 1 && svc.Status.Traffic[0].RevisionName == revision &&
				rev.Status.GetCondition(apis.ConditionReady).IsTrue() && len(rev.Status.ContainerStatuses) == 1 &&
				rev.Status.ContainerStatuses[0].ImageDigest == img && rev.Spec.Containers[0].Image == img
		}
	}
	Until(t, "the Service ready on Revision hello-00001", serving(ns, "hello-00001", image('a')))

	svc := &servingv1.Service{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "hello"}, svc); err != nil {
		t.Fatal(err)
	}
	svc.Spec.Template.Spec.Containers[0].Image = image('b')
	if err := c.Update(ctx, svc); err != nil {
		t.Fatal(err)
	}
	Until(t, "the Service ready on Revision hello-00002", serving(ns, "hello-00002", image('b')))
	if !strings.Contains(observed.String(), "Service "+ns+"/hello: Revision hello-00002 ready, running "+image('b')) {
		t.Errorf("the simulation told:\n%s", observed)
	}

	// The other namespace's Service: no status, no Revision.
	time.Sleep(500 * time.Millisecond)
	if err := c.Get(ctx, types.NamespacedName{Namespace: other, Name: "hello"}, svc); err != nil {
		t.Fatal(err)
	}
	if len(svc.Status.Conditions) != 0 {
		t.Errorf("the Service of namespace %s, outside the simulation's, got status %+v", other, svc.Status)
	}
}

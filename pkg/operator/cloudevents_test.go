package operator

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/outcomes"
	"github.com/fnops/func-operator/pkg/outcomes/outcomestest"
	"github.com/fnops/func-operator/test/gitserver"
	"github.com/fnops/func-operator/test/registrytest"
)

// TestOperator_CloudEventsSent: with the ConfigMap's eventSink naming a real
// CloudEvents receiver, the operator, wired as the binary is, sends there the
// deploy of a new image it sees (not the first image it sees the Function run),
// and counts it in func_operator_cloudevents_sent_total.
func TestOperator_CloudEventsSent(t *testing.T) {
	rcv := outcomestest.Start(t)
	root := gitserver.NewRepoRoot(t)
	srv := gitserver.StartHTTP(t, root)
	gitserver.CreateRepo(t, root, "hello").Commit(t, "main", map[string]string{"func.yaml": funcYAML("hello", "go")}, "first")
	reg := registrytest.Start(t)
	image := reg.Push(t, "fns/hello", availableGoMiddleware(t))
	deployed := reg.Push(t, "fns/hello-v2", availableGoMiddleware(t))

	ns := newNamespace(t)
	addr := freeAddr(t)
	cfg := config.Defaults()
	cfg.CheckInterval, cfg.GitTimeout = time.Hour, 10*time.Second
	_, store, _ := startOperatorServing(t, cfg, map[string]string{config.KeyEventSink: rcv.URL}, addr, ns)
	// The watcher reads the ConfigMap: the sink is the key's.
	eventually(t, 20*time.Second, func() string {
		if got := store.Load().Events.Sink.URL; got != rcv.URL {
			return fmt.Sprintf("eventSink %q, want %q", got, rcv.URL)
		}
		return ""
	})
	ctx := context.Background()
	svc := &servingv1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hello", Labels: map[string]string{"function.knative.dev/name": "hello"}},
		Spec: servingv1.ServiceSpec{ConfigurationSpec: servingv1.ConfigurationSpec{Template: servingv1.RevisionTemplateSpec{
			Spec: servingv1.RevisionSpec{PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Image: image}}}},
		}}},
	}
	if err := k8sClient.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	fn := &v1alpha1.Function{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fn"},
		Spec:       v1alpha1.FunctionSpec{Repository: v1alpha1.Repository{URL: srv.URL("hello")}},
	}
	if err := k8sClient.Create(ctx, fn); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, func() string {
		if d := getFunction(t, ns, "fn").Status.Deployment; d == nil || d.Image == "" {
			return fmt.Sprintf("status.deployment = %+v, want the image seen", d)
		}
		return ""
	})
	// func deploy of a new image: the Service changes, and the Function follows.
	setServiceImage(t, svc.Namespace, svc.Name, deployed)
	e := rcv.Wait(t, 1, 30*time.Second)[0]
	var data outcomes.Data
	if err := e.DataAs(&data); err != nil {
		t.Fatal(err)
	}
	if e.Type() != outcomes.TypeDeploySeen || e.Source() != outcomes.Source(ns, "fn") || data.Namespace != ns || data.Name != "fn" ||
		data.UID != fn.UID || data.Image.After == "" || data.Image.Before == "" || data.Image.Before == data.Image.After || data.Function != "hello" {
		t.Errorf("received %s with data %+v; want a deploy seen of %s/fn's image", e, data, ns)
	}
	if got := getFunction(t, ns, "fn").Status.Deployment; got == nil || got.Image != data.Image.After {
		t.Errorf("status.deployment = %+v, want the image the event names (%s)", got, data.Image.After)
	}
	eventually(t, 20*time.Second, func() string {
		families := scrape(t, addr)
		f := families["func_operator_cloudevents_sent_total"]
		if f == nil || len(f.GetMetric()) != 1 || f.GetMetric()[0].GetCounter().GetValue() < 1 {
			return fmt.Sprintf("func_operator_cloudevents_sent_total = %v, want 1 or more", f)
		}
		if d := families["func_operator_cloudevents_dropped_total"]; d == nil || len(d.GetMetric()) != 4 {
			return fmt.Sprintf("func_operator_cloudevents_dropped_total = %v, want a series per reason", d)
		}
		return ""
	})
}

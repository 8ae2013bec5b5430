package operator

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/knative"
	"github.com/fnops/func-operator/pkg/reconciler/function/resources"
	"github.com/fnops/func-operator/test/tekton"
)

// TestOperator_BindingRefusesTakeover replays the measured takeover against the
// running operator: a Function whose func.yaml names a Knative Service "payments"
// that func did not deploy gets no PipelineRun, and a second Function claiming an
// outdated function another Function holds creates nothing, while the holder is
// rebuilt once (the positive control that rebuilds run here at all).
func TestOperator_BindingRefusesTakeover(t *testing.T) {
	ns := newNamespace(t)
	f := newRebuildFixture(t, ns, "payments", "hello")
	ctx := context.Background()
	// Service "payments" was not deployed by func: no function.knative.dev/name label.
	updateService(t, ns, "payments", func(s *servingv1.Service) { delete(s.Labels, knative.FunctionNameLabel) })
	payments := getService(t, ns, "payments")
	sim := tekton.StartKubelet(t, restConfig, tekton.Options{Namespaces: []string{ns}, Registry: f.reg, Decide: succeed(t)})
	startOperatorWith(t, rebuildConfig(2), ns)

	f.createFunction(t, "payments", nil) // the takeover attempt
	f.createFunction(t, "hello", nil)    // the holder of function hello
	eventually(t, 30*time.Second, condition(ns, "hello", v1alpha1.FunctionConditionDeployed, corev1.ConditionTrue, v1alpha1.ReasonDeployed))
	// A second Function whose func.yaml names function hello.
	second := &v1alpha1.Function{}
	second.Namespace, second.Name = ns, "hello-again"
	second.Spec.Repository = v1alpha1.Repository{URL: f.srv.URL("fleet"), Branch: "main", Path: "fns/hello"}
	if err := k8sClient.Create(ctx, second); err != nil {
		t.Fatal(err)
	}

	eventually(t, 30*time.Second, condition(ns, "payments", v1alpha1.FunctionConditionDeployed, corev1.ConditionFalse, v1alpha1.ReasonServiceNotFromFunc))
	eventually(t, 30*time.Second, condition(ns, "hello-again", v1alpha1.FunctionConditionDeployed, corev1.ConditionFalse, v1alpha1.ReasonFunctionNameConflict))
	eventually(t, 60*time.Second, rebuilt(t, ns, "hello"))
	time.Sleep(2 * time.Second) // time for a run the operator should not create

	runs := pipelineRuns(t, ns)
	if len(runs) != 1 || runs[0].Labels[resources.LabelFunction] != "hello" {
		of := make([]string, 0, len(runs))
		for _, pr := range runs {
			of = append(of, pr.Labels[resources.LabelFunction])
		}
		t.Errorf("PipelineRuns of Functions %v, want exactly one, of hello", of)
	}
	if n := len(sim.Started()); n != 1 {
		t.Errorf("%d runs started, want 1", n)
	}
	hello, again := getFunction(t, ns, "hello"), getFunction(t, ns, "hello-again")
	if hello.Status.Service == nil || hello.Status.Service.UID == "" {
		t.Errorf("hello: status.service = %+v, want bound (a Service UID)", hello.Status.Service)
	}
	if again.Status.Service != nil || again.Status.Build != nil {
		t.Errorf("hello-again: status.service %+v, status.build %+v; want neither", again.Status.Service, again.Status.Build)
	}
	if p := getFunction(t, ns, "payments"); p.Status.Build != nil || p.Status.Service != nil {
		t.Errorf("payments: status.build %+v, status.service %+v; want neither", p.Status.Build, p.Status.Service)
	}
	// The Service that was not func's is as it was: same image, same generation.
	after := &servingv1.Service{}
	if err := k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "payments"}, after); err != nil {
		t.Fatal(err)
	}
	if after.Generation != payments.Generation || after.Spec.Template.Spec.Containers[0].Image != f.oldImage["payments"] {
		t.Errorf("Service payments changed: generation %d → %d, image %s", payments.Generation, after.Generation, after.Spec.Template.Spec.Containers[0].Image)
	}

	// Deleting the holder frees function hello for the other Function, at once.
	if err := k8sClient.Delete(ctx, hello); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, condition(ns, "hello-again", v1alpha1.FunctionConditionDeployed, corev1.ConditionTrue, v1alpha1.ReasonDeployed))
}

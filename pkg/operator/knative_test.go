package operator

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/test/gitserver"
	"github.com/fnops/func-operator/test/registrytest"
)

// condition returns "" when the Function's condition t has the status and reason wanted.
func condition(ns, name string, t apis.ConditionType, status corev1.ConditionStatus, reason string) func() string {
	return func() string {
		fn := &v1alpha1.Function{}
		if err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, fn); err != nil {
			return err.Error()
		}
		c := fn.Status.GetCondition(t)
		if c == nil || c.Status != status || c.Reason != reason {
			return fmt.Sprintf("%s = %+v, want %s/%s", t, c, status, reason)
		}
		return ""
	}
}

func TestOperator_KnativeServiceIsWatched(t *testing.T) {
	root := gitserver.NewRepoRoot(t)
	srv := gitserver.StartHTTP(t, root)
	repo := gitserver.CreateRepo(t, root, "hello")
	repo.Commit(t, "main", map[string]string{"func.yaml": funcYAML("hello", "go")}, "first")

	// The function's image, in a registry of the test's own, with the newest middleware.
	reg := registrytest.Start(t)
	image := reg.Push(t, "fns/hello", availableGoMiddleware(t))

	ns := newNamespace(t)
	startOperator(t, time.Hour, ns) // no periodic check: only the watches act
	ctx := context.Background()
	if err := k8sClient.Create(ctx, &v1alpha1.Function{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fn"},
		Spec:       v1alpha1.FunctionSpec{Repository: v1alpha1.Repository{URL: srv.URL("hello")}},
	}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, condition(ns, "fn", v1alpha1.FunctionConditionDeployed, corev1.ConditionFalse, v1alpha1.ReasonNotDeployed))

	// func deploy creates the Service: the Function follows.
	svc := &servingv1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hello", Labels: map[string]string{"function.knative.dev/name": "hello"}},
		Spec: servingv1.ServiceSpec{ConfigurationSpec: servingv1.ConfigurationSpec{Template: servingv1.RevisionTemplateSpec{
			Spec: servingv1.RevisionSpec{PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Image: image}}}},
		}}},
	}
	if err := k8sClient.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, condition(ns, "fn", v1alpha1.FunctionConditionDeployed, corev1.ConditionTrue, v1alpha1.ReasonDeployed))
	eventually(t, 20*time.Second, condition(ns, "fn", v1alpha1.FunctionConditionServiceReady, corev1.ConditionUnknown, v1alpha1.ReasonServiceReconciling))

	// Knative reports the Service ready, then failing: ServiceReady follows each time.
	setReady := func(status corev1.ConditionStatus, reason, message string) {
		t.Helper()
		if err := k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "hello"}, svc); err != nil {
			t.Fatal(err)
		}
		svc.Status.ObservedGeneration = svc.Generation
		svc.Status.URL = apis.HTTP("hello." + ns + ".example.com")
		svc.Status.Conditions = duckv1.Conditions{{Type: apis.ConditionReady, Status: status, Reason: reason, Message: message}}
		if err := k8sClient.Status().Update(ctx, svc); err != nil {
			t.Fatal(err)
		}
	}
	setReady(corev1.ConditionTrue, "", "")
	eventually(t, 20*time.Second, condition(ns, "fn", v1alpha1.FunctionConditionServiceReady, corev1.ConditionTrue, v1alpha1.ReasonServiceReady))
	eventually(t, 20*time.Second, func() string {
		fn := getFunction(t, ns, "fn")
		if fn.Status.Service == nil || !fn.Status.Service.Ready.IsTrue() || fn.Status.Service.URL != "http://hello."+ns+".example.com" {
			return fmt.Sprintf("status.service = %+v", fn.Status.Service)
		}
		return ""
	})
	setReady(corev1.ConditionFalse, "RevisionFailed", "Revision \"hello-00002\" failed with message: crash loop.")
	eventually(t, 20*time.Second, condition(ns, "fn", v1alpha1.FunctionConditionServiceReady, corev1.ConditionFalse, "RevisionFailed"))
	eventually(t, 20*time.Second, condition(ns, "fn", apis.ConditionReady, corev1.ConditionFalse, "RevisionFailed"))
	if c := getFunction(t, ns, "fn").Status.GetCondition(v1alpha1.FunctionConditionMiddlewareUpToDate); !c.IsTrue() {
		t.Errorf("MiddlewareUpToDate = %+v, want True: the image carries the newest middleware", c)
	}

	// The Service is deleted: back to NotDeployed.
	if err := k8sClient.Delete(ctx, svc); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, condition(ns, "fn", v1alpha1.FunctionConditionDeployed, corev1.ConditionFalse, v1alpha1.ReasonNotDeployed))
}

// availableGoMiddleware is the func-go version a rebuild of an http Go function brings.
func availableGoMiddleware(t *testing.T) string {
	t.Helper()
	pin, err := funclib.AvailableMiddleware("go", "http")
	if err != nil {
		t.Fatal(err)
	}
	return pin.Version
}

package knative

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
)

// The status Knative Serving v0.50's controller writes (measured with the real
// controller in test/knative): a Service whose newest Revision's pods cannot pull
// their image, once progress-deadline passed.
func TestNewestRevisionFailed(t *testing.T) {
	failed := func(mod func(*servingv1.Service)) *servingv1.Service {
		svc := &servingv1.Service{}
		svc.Generation = 3
		svc.Status.ObservedGeneration = 3
		svc.Status.LatestCreatedRevisionName, svc.Status.LatestReadyRevisionName = "hello-00003", "hello-00002"
		svc.Status.Conditions = duckv1.Conditions{
			{Type: apis.ConditionReady, Status: corev1.ConditionFalse, Reason: "RevisionFailed",
				Message: `Revision "hello-00003" failed with message: Back-off pulling image "x".`},
			{Type: servingv1.ServiceConditionConfigurationsReady, Status: corev1.ConditionFalse, Reason: "RevisionFailed",
				Message: `Revision "hello-00003" failed with message: Back-off pulling image "x".`},
			{Type: servingv1.ServiceConditionRoutesReady, Status: corev1.ConditionTrue},
		}
		if mod != nil {
			mod(svc)
		}
		return svc
	}
	for _, tt := range []struct {
		name string
		svc  *servingv1.Service
		want string // the failed Revision; "" for none
	}{
		{name: "the newest Revision failed, an older one serves", svc: failed(nil), want: "hello-00003"},
		{name: "Knative has not observed the newest generation", svc: failed(func(s *servingv1.Service) { s.Generation = 4 })},
		{name: "the newest Revision is the ready one", svc: failed(func(s *servingv1.Service) { s.Status.LatestReadyRevisionName = "hello-00003" })},
		{name: "still deploying (Unknown)", svc: failed(func(s *servingv1.Service) {
			s.Status.MarkConfigurationNotReconciled()
		})},
		{name: "no Revision yet", svc: failed(func(s *servingv1.Service) { s.Status.LatestCreatedRevisionName = "" })},
		{name: "ready", svc: failed(func(s *servingv1.Service) {
			s.Status.Conditions = duckv1.Conditions{{Type: servingv1.ServiceConditionConfigurationsReady, Status: corev1.ConditionTrue}}
		})},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, c := NewestRevisionFailed(tt.svc)
			if got != tt.want || (c != nil) != (tt.want != "") {
				t.Errorf("NewestRevisionFailed() = %q, %+v; want %q", got, c, tt.want)
			}
		})
	}
}

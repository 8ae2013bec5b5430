package function

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"knative.dev/pkg/apis"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"

	"github.com/fnops/func-operator/api/v1alpha1"
)

func TestReconciler_reconcileDeployment(t *testing.T) {
	const digest = "registry.invalid/fns/hello@sha256:abcd"
	tests := []struct {
		name      string
		service   *knativeService // nil: none
		want      outcome
		wantImage string
	}{{
		name:    "no Knative Service: waiting, not failing",
		want:    outcome{Kind: "waiting", Reason: v1alpha1.ReasonNotDeployed, Condition: "False/NotDeployed/"},
		service: nil,
	}, {
		name: "deployed: the image its ready Revision resolved",
		service: &knativeService{ready: &apis.Condition{Type: apis.ConditionReady, Status: corev1.ConditionTrue},
			readyRevision: "hello-00001", revisionDigest: digest},
		want:      outcome{Condition: "True/Deployed/"},
		wantImage: digest,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := newNamespace(t)
			if tt.service != nil {
				tt.service.create(t, ns)
			}
			r, _ := newTestReconciler(t, 10)
			fn := &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fn"}}
			fn.Status.InitializeConditions()
			obs := &observation{source: sourceArtifact{name: "hello"}}

			res, err := r.reconcileDeployment(context.Background(), fn, obs)

			if diff := cmp.Diff(tt.want, outcomeOf(err, fn, v1alpha1.FunctionConditionDeployed)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s\nerror: %v", diff, err)
			}
			if diff := cmp.Diff(tt.wantImage, obs.deployment.image); diff != "" {
				t.Errorf("obs.deployment.image (-want +got):\n%s", diff)
			}
			if res.RequeueAfter != 0 || res.AfterPatch != nil {
				t.Errorf("Result = %+v, want none", res)
			}
		})
	}
}

func TestReconciler_reconcileServiceReady(t *testing.T) {
	tests := []struct {
		name     string
		service  knativeService
		replaced bool // the Service is not the one described
		want     outcome
	}{{
		name:     "replaced since it was described: transient, nothing mirrored",
		service:  knativeService{image: "img", ready: &apis.Condition{Type: apis.ConditionReady, Status: corev1.ConditionTrue}},
		replaced: true,
		want:     outcome{Kind: "transient", Condition: "Unknown//"},
	}, {
		name:    "ready",
		service: knativeService{image: "img", ready: &apis.Condition{Type: apis.ConditionReady, Status: corev1.ConditionTrue}},
		want:    outcome{Condition: "True/ServiceReady/"},
	}, {
		name: "not ready, in Knative's words",
		service: knativeService{image: "img", ready: &apis.Condition{Type: apis.ConditionReady, Status: corev1.ConditionFalse,
			Reason: "RevisionMissing", Message: "no ready Revision"}},
		want: outcome{Condition: "False/RevisionMissing/"},
	}, {
		name:    "latest spec not observed yet",
		service: knativeService{image: "img", staleGeneration: true, ready: &apis.Condition{Type: apis.ConditionReady, Status: corev1.ConditionTrue}},
		want:    outcome{Condition: "Unknown/ServiceReconciling/"},
	}, {
		name:    "no Ready condition yet",
		service: knativeService{image: "img"},
		want:    outcome{Condition: "Unknown/ServiceReconciling/"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := newNamespace(t)
			tt.service.create(t, ns)
			svc := &servingv1.Service{}
			if err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "hello"}, svc); err != nil {
				t.Fatal(err)
			}
			described := svc.UID
			if tt.replaced {
				described = "uid-of-the-described-service"
			}
			r, _ := newTestReconciler(t, 10)
			fn := &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fn"}}
			fn.Status.InitializeConditions()

			_, err := r.reconcileServiceReady(context.Background(), fn,
				&observation{source: sourceArtifact{name: "hello"}, deployment: deployment{uid: described}})

			if diff := cmp.Diff(tt.want, outcomeOf(err, fn, v1alpha1.FunctionConditionServiceReady)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s\nerror: %v", diff, err)
			}
		})
	}

	t.Run("the Service vanished since it was described: transient", func(t *testing.T) {
		r, _ := newTestReconciler(t, 10)
		fn := &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: newNamespace(t), Name: "fn"}}
		_, err := r.reconcileServiceReady(context.Background(), fn, &observation{source: sourceArtifact{name: "hello"}})
		if got := outcomeOf(err, fn, v1alpha1.FunctionConditionServiceReady); got.Kind != "transient" {
			t.Errorf("outcome = %+v, want a transient error", got)
		}
	})
}

package function

import (
	"context"
	"strings"
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
	onFakeClient(t)
	const digest = "registry.invalid/fns/hello@sha256:abcd"
	tests := []struct {
		name      string
		service   *knativeService // nil: none
		workload  *rawWorkload    // nil: none
		requested string          // func.yaml's deployer (status.deployment.requestedDeployer)
		want      outcome
		wantImage string
		// wantDeployer is status.deployment.deployer; wantMessage a part of Deployed's message.
		wantDeployer, wantMessage string
	}{{
		name:    "no Knative Service: waiting, not failing",
		want:    outcome{Kind: "waiting", Reason: v1alpha1.ReasonNotDeployed, Condition: "False/NotDeployed/"},
		service: nil,
	}, {
		name: "deployed: the image its ready Revision resolved",
		service: &knativeService{ready: &apis.Condition{Type: apis.ConditionReady, Status: corev1.ConditionTrue},
			readyRevision: "hello-00001", revisionDigest: digest},
		want:      outcome{Condition: "True/Deployed/"},
		wantImage: digest, wantDeployer: "knative", wantMessage: "Knative Service hello runs " + digest,
	}, {
		name:      "func's raw deployer: the Deployment's image",
		workload:  &rawWorkload{image: digest},
		requested: "raw",
		want:      outcome{Condition: "True/Deployed/"},
		wantImage: digest, wantDeployer: "raw", wantMessage: "Deployment hello of func's raw deployer runs " + digest,
	}, {
		name:      "func's keda deployer",
		workload:  &rawWorkload{deployer: "keda", image: digest, scaledObject: corev1.ConditionTrue},
		requested: "keda",
		want:      outcome{Condition: "True/Deployed/"},
		wantImage: digest, wantDeployer: "keda", wantMessage: "Deployment hello of func's keda deployer runs " + digest,
	}, {
		name:      "raw, but func.yaml asks for knative (names no deployer): deployed, and the Deployed message says a rebuild would strand it",
		workload:  &rawWorkload{image: digest},
		want:      outcome{Condition: "True/Deployed/"},
		wantImage: digest, wantDeployer: "raw",
		wantMessage: "func.yaml asks for func's knative deployer, but raw deployed the function: the operator does not rebuild it",
	}, {
		name:      "raw, func.yaml asks for keda: a safe switch",
		workload:  &rawWorkload{image: digest},
		requested: "keda",
		want:      outcome{Condition: "True/Deployed/"},
		wantImage: digest, wantDeployer: "raw", wantMessage: "a rebuild deploys with it (func switches raw to keda in place)",
	}, {
		name: "a Knative Service and a raw Deployment both: func.yaml's deployer picks, the other is named",
		service: &knativeService{ready: &apis.Condition{Type: apis.ConditionReady, Status: corev1.ConditionTrue},
			readyRevision: "hello-00001", revisionDigest: digest},
		workload:  &rawWorkload{image: "registry.invalid/fns/hello@sha256:ffff"},
		requested: "raw",
		want:      outcome{Condition: "True/Deployed/"},
		wantImage: "registry.invalid/fns/hello@sha256:ffff", wantDeployer: "raw",
		wantMessage: "Knative Service hello is there too, left by a deployer switch",
	}, {
		name:     "a raw Deployment func did not label for the function: not bound",
		workload: &rawWorkload{image: digest, label: "other"},
		want:     outcome{Kind: "stalling", Reason: v1alpha1.ReasonServiceNotFromFunc, Condition: "False/ServiceNotFromFunc/"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := newNamespace(t)
			if tt.service != nil {
				tt.service.create(t, ns)
			}
			if tt.workload != nil {
				tt.workload.create(t, ns)
			}
			r, _ := newTestReconciler(t, 10)
			fn := &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fn"}}
			fn.Status.InitializeConditions()
			fn.Status.Deployment = &v1alpha1.DeploymentStatus{RequestedDeployer: tt.requested}
			obs := &observation{source: sourceArtifact{name: "hello"}}

			res, err := r.reconcileDeployment(context.Background(), fn, obs)

			if diff := cmp.Diff(tt.want, outcomeOf(err, fn, v1alpha1.FunctionConditionDeployed)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s\nerror: %v", diff, err)
			}
			if diff := cmp.Diff(tt.wantImage, obs.deployment.image); diff != "" {
				t.Errorf("obs.deployment.image (-want +got):\n%s", diff)
			}
			if got := fn.Status.Deployment.Deployer; got != tt.wantDeployer {
				t.Errorf("status.deployment.deployer = %q, want %q", got, tt.wantDeployer)
			}
			if c := fn.Status.GetCondition(v1alpha1.FunctionConditionDeployed); tt.wantMessage != "" && !strings.Contains(c.Message, tt.wantMessage) {
				t.Errorf("Deployed message %q does not say %q", c.Message, tt.wantMessage)
			}
			if res.RequeueAfter != 0 || res.AfterPatch != nil {
				t.Errorf("Result = %+v, want none", res)
			}
		})
	}
}

func TestReconciler_reconcileServiceReady(t *testing.T) {
	onFakeClient(t)
	tests := []struct {
		name     string
		service  knativeService
		workload *rawWorkload // func's raw or keda deployer's, instead of service
		replaced bool         // the Service is not the one described
		want     outcome
		// rollingOut: what was read may not be what serves (a rebuild waits).
		rollingOut bool
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
	}, {
		name: "the latest Revision not ready yet, none ready: rolling out (the template's image does not serve)",
		service: knativeService{image: "img", createdRevision: "hello-00002", ready: &apis.Condition{Type: apis.ConditionReady, Status: corev1.ConditionUnknown,
			Reason: "RevisionMissing"}},
		want: outcome{Condition: "Unknown/RevisionMissing/"}, rollingOut: true,
	}, {
		name: "an older Revision ready, the latest not yet: rolling out",
		service: knativeService{readyRevision: "hello-00001", revisionDigest: "img@sha256:1", createdRevision: "hello-00002",
			ready: &apis.Condition{Type: apis.ConditionReady, Status: corev1.ConditionUnknown, Reason: "TrafficNotMigrated"}},
		want: outcome{Condition: "Unknown/TrafficNotMigrated/"}, rollingOut: true,
	}, {
		name: "the latest Revision ready, its traffic not migrated yet: rolling out",
		service: knativeService{readyRevision: "hello-00002", revisionDigest: "img@sha256:2", createdRevision: "hello-00002",
			ready: &apis.Condition{Type: apis.ConditionReady, Status: corev1.ConditionUnknown, Reason: "IngressNotConfigured"}},
		want: outcome{Condition: "Unknown/IngressNotConfigured/"}, rollingOut: true,
	}, {
		name: "the latest Revision ready: rolled out",
		service: knativeService{readyRevision: "hello-00002", revisionDigest: "img@sha256:2", createdRevision: "hello-00002",
			ready: &apis.Condition{Type: apis.ConditionReady, Status: corev1.ConditionTrue}},
		want: outcome{Condition: "True/ServiceReady/"},
	}, {
		name:     "raw: the Deployment rolled out and is available",
		workload: &rawWorkload{image: "img"},
		want:     outcome{Condition: "True/ServiceReady/"},
	}, {
		name:     "keda: the HTTPScaledObject is not ready, in the add-on's words",
		workload: &rawWorkload{deployer: "keda", image: "img", scaledObject: corev1.ConditionFalse},
		want:     outcome{Condition: "False/Reconciled/"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := newNamespace(t)
			if tt.workload != nil {
				// func's raw or keda deployer: the step reads what the deployment step found.
				tt.workload.create(t, ns)
				r, _ := newTestReconciler(t, 10)
				w, err := r.Workloads.Find(context.Background(), "hello", ns)
				if err != nil {
					t.Fatal(err)
				}
				fn := &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fn"}}
				fn.Status.InitializeConditions()
				_, err = r.reconcileServiceReady(context.Background(), fn, &observation{source: sourceArtifact{name: "hello"},
					deployment: deployment{found: workloadTarget{w: w}}})
				if diff := cmp.Diff(tt.want, outcomeOf(err, fn, v1alpha1.FunctionConditionServiceReady)); diff != "" {
					t.Errorf("outcome (-want +got):\n%s\nerror: %v", diff, err)
				}
				return
			}
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

			obs := &observation{source: sourceArtifact{name: "hello"}, deployment: deployment{found: knativeTarget{svc: &servingv1.Service{ObjectMeta: metav1.ObjectMeta{Name: "hello", UID: described}}}}}
			_, err := r.reconcileServiceReady(context.Background(), fn, obs)

			if diff := cmp.Diff(tt.want, outcomeOf(err, fn, v1alpha1.FunctionConditionServiceReady)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s\nerror: %v", diff, err)
			}
			if err == nil && obs.deployment.rollingOut != tt.rollingOut {
				t.Errorf("rollingOut = %t, want %t", obs.deployment.rollingOut, tt.rollingOut)
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

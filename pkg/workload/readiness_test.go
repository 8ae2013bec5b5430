package workload

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	kedav1alpha1 "github.com/kedacore/http-add-on/operator/apis/http/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/fnops/func-operator/pkg/funclib"
)

// deploymentYAML is a Deployment of func's raw deployer after a finished rollout of
// one replica, as the deployment controller reports it.
const deploymentYAML = `
metadata:
  name: hello
  namespace: fns
  generation: 2
  uid: 4f1e7a2c-0000-4000-8000-000000000001
  labels: {function.knative.dev/name: hello}
  annotations: {function.knative.dev/deployer: raw}
spec:
  replicas: 1
  template:
    spec:
      containers:
      - name: user-container
        image: 127.0.0.1:5000/fns/hello@sha256:1111111111111111111111111111111111111111111111111111111111111111
status:
  observedGeneration: 2
  replicas: 1
  updatedReplicas: 1
  readyReplicas: 1
  availableReplicas: 1
  conditions:
  - {type: Available, status: "True", reason: MinimumReplicasAvailable, message: Deployment has minimum availability.}
  - {type: Progressing, status: "True", reason: NewReplicaSetAvailable, message: ReplicaSet "hello-5d4" has successfully progressed.}
`

func readyDeployment(t *testing.T) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := yaml.UnmarshalStrict([]byte(deploymentYAML), d); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestReadinessOf(t *testing.T) {
	readySO := &kedav1alpha1.HTTPScaledObject{ObjectMeta: metav1.ObjectMeta{Name: "hello"},
		Status: kedav1alpha1.HTTPScaledObjectStatus{Conditions: []metav1.Condition{{Type: "Ready", Status: "True", Reason: "HTTPScaledObjectIsReady"}}}}
	tests := []struct {
		name     string
		deployer string
		mutate   func(d *appsv1.Deployment)
		so       *kedav1alpha1.HTTPScaledObject
		noKEDA   bool
		want     Readiness
	}{{
		name: "raw, rolled out and available", deployer: funclib.DeployerRaw,
		want: Readiness{Status: corev1.ConditionTrue, Reason: ReasonDeploymentAvailable, RolledOut: true},
	}, {
		name: "raw, spec not yet observed", deployer: funclib.DeployerRaw,
		mutate: func(d *appsv1.Deployment) { d.Generation = 3 },
		want:   Readiness{Status: corev1.ConditionUnknown, Reason: ReasonRollingOut},
	}, {
		name: "raw, new template on no replica yet", deployer: funclib.DeployerRaw,
		mutate: func(d *appsv1.Deployment) { d.Status.UpdatedReplicas = 0 },
		want:   Readiness{Status: corev1.ConditionUnknown, Reason: ReasonRollingOut},
	}, {
		name: "raw, an old replica still terminating", deployer: funclib.DeployerRaw,
		mutate: func(d *appsv1.Deployment) { d.Status.Replicas = 2 },
		want:   Readiness{Status: corev1.ConditionUnknown, Reason: ReasonRollingOut},
	}, {
		name: "raw, the new replica not yet available", deployer: funclib.DeployerRaw,
		mutate: func(d *appsv1.Deployment) { d.Status.AvailableReplicas = 0 },
		want:   Readiness{Status: corev1.ConditionUnknown, Reason: ReasonRollingOut},
	}, {
		name: "raw, progress deadline exceeded", deployer: funclib.DeployerRaw,
		mutate: func(d *appsv1.Deployment) {
			d.Status.UpdatedReplicas = 0
			d.Status.Conditions[1] = appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded", Message: "too slow"}
		},
		want: Readiness{Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"},
	}, {
		name: "raw, rolled out, then its one replica unavailable (a crash)", deployer: funclib.DeployerRaw,
		mutate: func(d *appsv1.Deployment) {
			d.Status.AvailableReplicas, d.Status.ReadyReplicas = 0, 0
			d.Status.Conditions[0] = appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse, Reason: "MinimumReplicasUnavailable"}
		},
		want: Readiness{Status: corev1.ConditionFalse, Reason: "MinimumReplicasUnavailable"},
	}, {
		name: "raw, scaled up (an HPA): new pods pending, the Available condition False for a moment: still serving", deployer: funclib.DeployerRaw,
		mutate: func(d *appsv1.Deployment) {
			d.Spec.Replicas = ptr.To[int32](4)
			d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.AvailableReplicas = 4, 4, 2
			d.Status.Conditions[0] = appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse, Reason: "MinimumReplicasUnavailable"}
		},
		want: Readiness{Status: corev1.ConditionTrue, Reason: ReasonDeploymentAvailable, RolledOut: true},
	}, {
		name: "keda, scaled up from zero a moment ago (a cold start): starting, not unready", deployer: funclib.DeployerKeda, so: readySO,
		mutate: func(d *appsv1.Deployment) {
			d.Status.AvailableReplicas, d.Status.ReadyReplicas = 0, 0
			d.Status.Conditions[0] = appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse, Reason: "MinimumReplicasUnavailable"}
		},
		want: Readiness{Status: corev1.ConditionUnknown, Reason: ReasonRollingOut},
	}, {
		name: "keda, its first replica never became available: the progress deadline says so", deployer: funclib.DeployerKeda, so: readySO,
		mutate: func(d *appsv1.Deployment) {
			d.Status.AvailableReplicas, d.Status.ReadyReplicas = 0, 0
			d.Status.Conditions[1] = appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"}
		},
		want: Readiness{Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"},
	}, {
		name: "raw, scaled to zero serves nothing", deployer: funclib.DeployerRaw,
		mutate: func(d *appsv1.Deployment) { scaleToZero(d) },
		want:   Readiness{Status: corev1.ConditionFalse, Reason: ReasonScaledToZero, RolledOut: true},
	}, {
		name: "keda, ready", deployer: funclib.DeployerKeda, so: readySO,
		want: Readiness{Status: corev1.ConditionTrue, Reason: ReasonDeploymentAvailable, RolledOut: true},
	}, {
		name: "keda, scaled to zero is ready", deployer: funclib.DeployerKeda, so: readySO,
		mutate: func(d *appsv1.Deployment) { scaleToZero(d) },
		want:   Readiness{Status: corev1.ConditionTrue, Reason: ReasonDeploymentAvailable, RolledOut: true},
	}, {
		name: "keda, no HTTPScaledObject", deployer: funclib.DeployerKeda,
		want: Readiness{Status: corev1.ConditionFalse, Reason: ReasonHTTPScaledObjectNotFound, RolledOut: true},
	}, {
		name: "keda, no KEDA HTTP add-on on the cluster", deployer: funclib.DeployerKeda, noKEDA: true,
		want: Readiness{Status: corev1.ConditionFalse, Reason: ReasonKEDAHTTPAddOnNotInstalled, RolledOut: true},
	}, {
		name: "keda, HTTPScaledObject without a Ready condition", deployer: funclib.DeployerKeda,
		so:   &kedav1alpha1.HTTPScaledObject{ObjectMeta: metav1.ObjectMeta{Name: "hello"}},
		want: Readiness{Status: corev1.ConditionUnknown, Reason: ReasonHTTPScaledObjectNotReady, RolledOut: true},
	}, {
		name: "keda, HTTPScaledObject not ready, in the add-on's words", deployer: funclib.DeployerKeda,
		so: &kedav1alpha1.HTTPScaledObject{ObjectMeta: metav1.ObjectMeta{Name: "hello"},
			Status: kedav1alpha1.HTTPScaledObjectStatus{Conditions: []metav1.Condition{{Type: "Ready", Status: "False", Reason: "ErrorCreatingAppScaledObject"}}}},
		want: Readiness{Status: corev1.ConditionFalse, Reason: "ErrorCreatingAppScaledObject", RolledOut: true},
	}, {
		name: "keda, ready add-on but the Deployment rolling out", deployer: funclib.DeployerKeda, so: readySO,
		mutate: func(d *appsv1.Deployment) { d.Status.AvailableReplicas = 0 },
		want:   Readiness{Status: corev1.ConditionUnknown, Reason: ReasonRollingOut},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := readyDeployment(t)
			if tt.mutate != nil {
				tt.mutate(d)
			}
			got := ReadinessOf(&Workload{Deployer: tt.deployer, Deployment: d, ScaledObject: tt.so, NoKEDA: tt.noKEDA})
			if got.Message == "" {
				t.Error("no message")
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(Readiness{}, "Message")); diff != "" {
				t.Errorf("ReadinessOf (-want +got):\n%s", diff)
			}
		})
	}
}

func scaleToZero(d *appsv1.Deployment) {
	d.Spec.Replicas = ptr.To[int32](0)
	d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas = 0, 0, 0, 0
}

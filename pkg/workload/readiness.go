package workload

import (
	"fmt"

	kedav1alpha1 "github.com/kedacore/http-add-on/operator/apis/http/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/fnops/func-operator/pkg/funclib"
)

// Reasons of a Readiness that the Deployment's or HTTPScaledObject's own conditions
// do not give (those pass on as they are, as Knative's do).
const (
	// ReasonRollingOut: the Deployment controller has not yet observed the
	// Deployment's spec, or not every replica runs its template yet.
	ReasonRollingOut = "RollingOut"
	// ReasonDeploymentAvailable: every replica runs the template and is available.
	ReasonDeploymentAvailable = "DeploymentAvailable"
	// ReasonScaledToZero: a raw function's Deployment wants no replica: nothing serves
	// it, and nothing (no KEDA) scales it up on a request.
	ReasonScaledToZero = "ScaledToZero"
	// ReasonHTTPScaledObjectNotFound: a keda function has no HTTPScaledObject, so no
	// request reaches it through the add-on's interceptor.
	ReasonHTTPScaledObjectNotFound = "HTTPScaledObjectNotFound"
	// ReasonKEDAHTTPAddOnNotInstalled: a keda function on a cluster that serves no
	// HTTPScaledObjects.
	ReasonKEDAHTTPAddOnNotInstalled = "KEDAHTTPAddOnNotInstalled"
	// ReasonHTTPScaledObjectNotReady: the add-on has not said the HTTPScaledObject is
	// ready (Unknown) or said it is not (False, when it gives no reason).
	ReasonHTTPScaledObjectNotReady = "HTTPScaledObjectNotReady"
)

// Readiness is whether a raw or keda function serves, as its objects say.
type Readiness struct {
	// Status is True, False or Unknown.
	Status corev1.ConditionStatus
	// Reason and Message say why, in the objects' own words where they have some.
	Reason, Message string
	// RolledOut: the Deployment controller observed the Deployment's spec, every
	// replica it keeps runs the template (none of an older one remains), and one is
	// available, or none is wanted: the template's image is the one that serves.
	RolledOut bool
}

// ReadinessOf is w's readiness. A raw function is ready when its Deployment serves
// (deploymentReadiness), and not at no replica (nothing scales it up); a keda one
// when its HTTPScaledObject is Ready too, and then also at no replica (KEDA scaled it
// to zero, and a request scales it up) and while KEDA scales it up from zero.
func ReadinessOf(w *Workload) Readiness {
	r := deploymentReadiness(w.Deployment)
	if w.Deployer != funclib.DeployerKeda {
		if r.Status == corev1.ConditionTrue && replicas(w.Deployment) == 0 {
			r.Status, r.Reason = corev1.ConditionFalse, ReasonScaledToZero
			r.Message = fmt.Sprintf("Deployment %s wants no replica: nothing serves the function", w.Deployment.Name)
		}
		return r
	}
	so := w.ScaledObject
	if so == nil && w.NoKEDA {
		return Readiness{Status: corev1.ConditionFalse, Reason: ReasonKEDAHTTPAddOnNotInstalled, RolledOut: r.RolledOut,
			Message: fmt.Sprintf("func's keda deployer deployed function %s, but the cluster serves no HTTPScaledObjects (http.keda.sh/v1alpha1): install the KEDA HTTP add-on", w.Deployment.Name)}
	}
	if so == nil {
		return Readiness{Status: corev1.ConditionFalse, Reason: ReasonHTTPScaledObjectNotFound, RolledOut: r.RolledOut,
			Message: fmt.Sprintf("func's keda deployer deployed function %s, but it has no HTTPScaledObject: no request reaches it through KEDA's interceptor", w.Deployment.Name)}
	}
	ready := meta.FindStatusCondition(so.Status.Conditions, kedav1alpha1.ConditionTypeReady)
	switch {
	case ready == nil:
		return Readiness{Status: corev1.ConditionUnknown, Reason: ReasonHTTPScaledObjectNotReady, RolledOut: r.RolledOut,
			Message: fmt.Sprintf("the KEDA HTTP add-on reports no Ready condition on HTTPScaledObject %s yet", so.Name)}
	case ready.Status != "True":
		reason := ready.Reason
		if reason == "" {
			reason = ReasonHTTPScaledObjectNotReady
		}
		return Readiness{Status: corev1.ConditionStatus(ready.Status), Reason: reason, RolledOut: r.RolledOut,
			Message: fmt.Sprintf("HTTPScaledObject %s: %s", so.Name, ready.Message)}
	}
	if replicas(w.Deployment) == 0 && r.RolledOut {
		return Readiness{Status: corev1.ConditionTrue, Reason: ReasonDeploymentAvailable, RolledOut: true,
			Message: fmt.Sprintf("Deployment %s is scaled to zero by KEDA; HTTPScaledObject %s is ready to scale it up on a request", w.Deployment.Name, so.Name)}
	}
	if r.Status == corev1.ConditionFalse && r.Reason != "ProgressDeadlineExceeded" {
		// KEDA scaled it up from zero a moment ago (a cold start): its first replica is
		// starting, within its progress deadline.
		return Readiness{Status: corev1.ConditionUnknown, Reason: ReasonRollingOut, RolledOut: r.RolledOut,
			Message: fmt.Sprintf("Deployment %s is scaling up from zero: no replica is available yet (%s)", w.Deployment.Name, r.Message)}
	}
	return r
}

// deploymentReadiness says whether the Deployment serves. A rollout (the controller
// has not observed the spec, or replicas of an older template remain) is Unknown, as
// kubectl rollout status waits on it, until its progress deadline passes (False). Once
// every replica runs the template (RolledOut), it serves while any replica is
// available: a scale-up (KEDA's, an HPA's) waiting for its new pods is not a loss of
// service, though the Available condition may say so for a moment. With none
// available it follows the Available condition (False with its reason), and is
// Unknown while the controller has not said.
func deploymentReadiness(d *appsv1.Deployment) Readiness {
	want := replicas(d)
	s := d.Status
	progressing := deploymentCondition(d, appsv1.DeploymentProgressing)
	oldReplicas := s.Replicas > s.UpdatedReplicas
	switch {
	case s.ObservedGeneration < d.Generation:
		return Readiness{Status: corev1.ConditionUnknown, Reason: ReasonRollingOut,
			Message: fmt.Sprintf("the deployment controller has not yet observed generation %d of Deployment %s", d.Generation, d.Name)}
	case progressing != nil && progressing.Reason == "ProgressDeadlineExceeded":
		return Readiness{Status: corev1.ConditionFalse, Reason: progressing.Reason, RolledOut: !oldReplicas && s.AvailableReplicas > 0,
			Message: fmt.Sprintf("Deployment %s: %s", d.Name, progressing.Message)}
	case oldReplicas:
		return Readiness{Status: corev1.ConditionUnknown, Reason: ReasonRollingOut,
			Message: fmt.Sprintf("Deployment %s is rolling out: %d of %d replicas run the new template, %d available",
				d.Name, s.UpdatedReplicas, s.Replicas, s.AvailableReplicas)}
	case want == 0:
		return Readiness{Status: corev1.ConditionTrue, Reason: ReasonDeploymentAvailable, RolledOut: true,
			Message: fmt.Sprintf("Deployment %s wants no replica", d.Name)}
	case s.AvailableReplicas > 0:
		return Readiness{Status: corev1.ConditionTrue, Reason: ReasonDeploymentAvailable, RolledOut: true,
			Message: fmt.Sprintf("Deployment %s is available: %d of %d replicas", d.Name, s.AvailableReplicas, want)}
	}
	// Every replica runs the template, none is available (yet).
	if available := deploymentCondition(d, appsv1.DeploymentAvailable); available != nil && available.Status == corev1.ConditionFalse {
		return Readiness{Status: corev1.ConditionFalse, Reason: available.Reason, Message: fmt.Sprintf("Deployment %s: no replica is available: %s", d.Name, available.Message)}
	}
	return Readiness{Status: corev1.ConditionUnknown, Reason: ReasonRollingOut,
		Message: fmt.Sprintf("Deployment %s: no replica is available yet (%d of %d run the template)", d.Name, s.UpdatedReplicas, want)}
}

// replicas is the number of replicas the Deployment wants (1 when unset, as the API
// server defaults it).
func replicas(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

func deploymentCondition(d *appsv1.Deployment, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range d.Status.Conditions {
		if d.Status.Conditions[i].Type == t {
			return &d.Status.Conditions[i]
		}
	}
	return nil
}

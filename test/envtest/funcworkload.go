package envtest

import (
	"context"
	"fmt"
	"time"

	httpv1alpha1 "github.com/kedacore/http-add-on/operator/apis/http/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FuncWorkload is what func v0.50.1's raw deployer (pkg/k8s: generateDeployment,
// generateService) writes for a Go function of the default settings, and, for its keda
// deployer (pkg/keda), the ExternalName bridge Service to KEDA's interceptor and the
// HTTPScaledObject (pkg/funclib/testdata/deployers/ keeps what func wrote, recorded).
// Tests change what they need before Create: the container of the template, a label.
type FuncWorkload struct {
	Deployment *appsv1.Deployment
	Service    *corev1.Service
	// Bridge and ScaledObject are keda's; nil for raw.
	Bridge       *corev1.Service
	ScaledObject *httpv1alpha1.HTTPScaledObject
}

// NewFuncWorkload returns what func's deployer (raw or keda) writes for function name
// of namespace ns running image: a Deployment of one replica running it in
// user-container on port 8080, and a ClusterIP Service on port 80, both labelled as
// func labels them (boson.dev/function, function.knative.dev/name and /runtime) and
// annotated with the deployer; keda adds the bridge and the HTTPScaledObject.
func NewFuncWorkload(ns, name, image, deployer string) FuncWorkload {
	labels := map[string]string{"boson.dev/function": "true", "function.knative.dev/name": name, "function.knative.dev/runtime": "go"}
	annotations := func() map[string]string { return map[string]string{"function.knative.dev/deployer": deployer} }
	w := FuncWorkload{
		Deployment: &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, Annotations: annotations()},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](1),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations()},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{
						Name: "user-container", Image: image,
						Ports: []corev1.ContainerPort{{ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
					}}},
				},
			},
		},
		Service: &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, Annotations: annotations()},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: labels,
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}},
		},
	}
	if deployer != "keda" {
		return w
	}
	bridge := name + "-interceptor-bridge"
	w.Bridge = &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: bridge},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "keda-add-ons-http-interceptor-proxy.keda.svc.cluster.local"},
	}
	w.ScaledObject = &httpv1alpha1.HTTPScaledObject{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, Annotations: annotations()},
		Spec: httpv1alpha1.HTTPScaledObjectSpec{
			Hosts:          []string{fmt.Sprintf("%s.%s.svc", bridge, ns), bridge},
			ScaleTargetRef: httpv1alpha1.ScaleTargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: name, Service: name, Port: 80},
			Replicas:       &httpv1alpha1.ReplicaStruct{Min: ptr.To[int32](1), Max: ptr.To[int32](10)},
			CooldownPeriod: ptr.To[int32](300),
			ScalingMetric: &httpv1alpha1.ScalingMetricSpec{Rate: &httpv1alpha1.RateMetricSpec{TargetValue: 100,
				Window: metav1.Duration{Duration: time.Minute}, Granularity: metav1.Duration{Duration: time.Second}}},
		},
	}
	return w
}

// Create creates the Deployment, then what func makes it own (the Services, the
// HTTPScaledObject: a controller reference to it, as func writes it).
func (w FuncWorkload) Create(ctx context.Context, c client.Client) error {
	if err := c.Create(ctx, w.Deployment); err != nil {
		return fmt.Errorf("creating Deployment %s: %w", w.Deployment.Name, err)
	}
	owner := *metav1.NewControllerRef(w.Deployment, appsv1.SchemeGroupVersion.WithKind("Deployment"))
	owned := []client.Object{w.Service}
	if w.Bridge != nil {
		owned = append(owned, w.Bridge)
	}
	if w.ScaledObject != nil {
		owned = append(owned, w.ScaledObject)
	}
	for _, o := range owned {
		o.SetOwnerReferences([]metav1.OwnerReference{owner})
		if err := c.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}

package workload

import (
	kedav1alpha1 "github.com/kedacore/http-add-on/operator/apis/http/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/netguard"
)

// Bounds of what a slimmed object keeps of fields anyone who may write a Deployment,
// a Service or an HTTPScaledObject in a namespace writes, into every replica's cache.
const (
	// MaxTextBytes bounds a kept condition message, image or host.
	MaxTextBytes = 1024
	// MaxHosts bounds the hosts kept of an HTTPScaledObject (func writes two).
	MaxHosts = 4
	// MaxHostBytes bounds a kept host: a DNS name has at most 253 bytes.
	MaxHostBytes = 253
	// maxLabelBytes bounds a kept annotation value or condition reason (which the API
	// server does not bound) to a label value's length.
	maxLabelBytes = 63
)

// Labels Knative Serving puts on what it makes for a Revision or a Route, beside the
// labels it copies from a knative function's Service (func's function name among
// them): those objects are Knative's, not a raw or keda function's.
const (
	knativeRevisionLabel = "serving.knative.dev/revision"
	knativeRouteLabel    = "serving.knative.dev/route"
)

// CacheSelector selects what the operator caches of Deployments, core Services and
// HTTPScaledObjects: the objects func's deployers labelled with a function's name,
// but for what Knative Serving made of a knative function (a Revision's Deployment
// and Services, a Route's Service), which carry that label too.
func CacheSelector() labels.Selector {
	must := func(r *labels.Requirement, err error) labels.Requirement {
		if err != nil {
			panic(err) // constant, valid keys
		}
		return *r
	}
	return labels.NewSelector().Add(
		must(labels.NewRequirement(FunctionNameLabel, selection.Exists, nil)),
		must(labels.NewRequirement(knativeRevisionLabel, selection.DoesNotExist, nil)),
		must(labels.NewRequirement(knativeRouteLabel, selection.DoesNotExist, nil)),
	)
}

// Slim is the cache's transform of the objects this package reads: it keeps only what
// Find, ReadinessOf and the Function mapping read, each text cut, so that a cached
// object costs a bounded few KiB however large the stored one is (measured by
// BenchmarkCachedObject: a func-written Deployment 3.0 KiB of heap, 11.5 KiB stored;
// mostly the empty structs of its Go type). Other objects pass
// unchanged.
func Slim(o any) (any, error) {
	switch o := o.(type) {
	case *appsv1.Deployment:
		return slimDeployment(o), nil
	case *metav1.PartialObjectMetadata:
		if o.Kind != "Service" {
			return o, nil
		}
		return &metav1.PartialObjectMetadata{TypeMeta: o.TypeMeta, ObjectMeta: slimMeta(o.ObjectMeta, funclib.DeployerAnnotation)}, nil
	case *kedav1alpha1.HTTPScaledObject:
		return slimScaledObject(o), nil
	}
	return o, nil
}

// slimMeta keeps identity, the function name label and the annotations named.
func slimMeta(m metav1.ObjectMeta, annotations ...string) metav1.ObjectMeta {
	out := metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		Generation: m.Generation, DeletionTimestamp: m.DeletionTimestamp, CreationTimestamp: m.CreationTimestamp}
	if v, ok := m.Labels[FunctionNameLabel]; ok {
		out.Labels = map[string]string{FunctionNameLabel: v} // the API server bounds label values
	}
	for _, a := range annotations {
		if v, ok := m.Annotations[a]; ok {
			if out.Annotations == nil {
				out.Annotations = map[string]string{}
			}
			out.Annotations[a] = netguard.CapText(v, maxLabelBytes)
		}
	}
	return out
}

// slimDeployment keeps the replicas wanted, the containers' names and images, and the
// rollout's status.
func slimDeployment(d *appsv1.Deployment) *appsv1.Deployment {
	out := &appsv1.Deployment{TypeMeta: d.TypeMeta, ObjectMeta: slimMeta(d.ObjectMeta, funclib.DeployerAnnotation)}
	out.Spec.Replicas = d.Spec.Replicas
	for i, c := range d.Spec.Template.Spec.Containers {
		if i == 2 {
			break // func's container is the first; the next could be a sidecar's
		}
		out.Spec.Template.Spec.Containers = append(out.Spec.Template.Spec.Containers,
			corev1.Container{Name: c.Name, Image: netguard.CapText(c.Image, MaxTextBytes)}) // a name is a DNS label
	}
	s := d.Status
	out.Status = appsv1.DeploymentStatus{ObservedGeneration: s.ObservedGeneration, Replicas: s.Replicas,
		UpdatedReplicas: s.UpdatedReplicas, ReadyReplicas: s.ReadyReplicas, AvailableReplicas: s.AvailableReplicas}
	for _, c := range s.Conditions {
		if c.Type != appsv1.DeploymentAvailable && c.Type != appsv1.DeploymentProgressing {
			continue
		}
		out.Status.Conditions = append(out.Status.Conditions, appsv1.DeploymentCondition{Type: c.Type, Status: c.Status,
			Reason: netguard.CapText(c.Reason, maxLabelBytes), Message: netguard.CapText(c.Message, MaxTextBytes)})
	}
	return out
}

// slimScaledObject keeps the hosts and the Ready condition.
func slimScaledObject(so *kedav1alpha1.HTTPScaledObject) *kedav1alpha1.HTTPScaledObject {
	out := &kedav1alpha1.HTTPScaledObject{TypeMeta: so.TypeMeta, ObjectMeta: slimMeta(so.ObjectMeta)}
	for i, h := range so.Spec.Hosts {
		if i == MaxHosts {
			break
		}
		if len(h) > MaxHostBytes {
			continue // no DNS name: it addresses nothing
		}
		out.Spec.Hosts = append(out.Spec.Hosts, h)
	}
	for _, c := range so.Status.Conditions {
		if c.Type == kedav1alpha1.ConditionTypeReady {
			out.Status.Conditions = append(out.Status.Conditions, metav1.Condition{Type: c.Type, Status: c.Status,
				ObservedGeneration: c.ObservedGeneration, Reason: netguard.CapText(c.Reason, maxLabelBytes), Message: netguard.CapText(c.Message, MaxTextBytes)})
		}
	}
	return out
}

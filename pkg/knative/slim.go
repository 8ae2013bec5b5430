package knative

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"

	"github.com/fnops/func-operator/pkg/netguard"
)

// Bounds of what a slimmed Knative Service or Revision keeps of fields a tenant writes
// (a Service's spec, which its Revisions and its status's traffic copy), into every
// replica's cache: the operator caches every Service and Revision of the cluster,
// func's or not.
const (
	// MaxTextBytes bounds a kept image or condition message.
	MaxTextBytes = 1024
	// MaxTraffic bounds the traffic targets kept of a Service's status: their URLs
	// are the function's routes (a tagged target has its own).
	MaxTraffic = 16
	// maxContainerStatuses bounds a Revision's container statuses kept: func's
	// container is the first; a sidecar's may follow.
	maxContainerStatuses = 2
	// maxReasonBytes bounds a kept condition reason (a CamelCase word) or Revision
	// name (a DNS label).
	maxReasonBytes = 63
)

// Slim is the cache's transform of the Knative Serving objects the operator reads:
// a Service keeps what Services and the Function mapping read (the function name
// label, generation, the first container's image, the Ready condition, the URLs,
// the latest Revisions' names), a Revision the image digests it resolved. Every
// other field (env, volumes, annotations, the pod spec, which a tenant may fill up
// to the API server's 1.5 MiB and copy into a Revision at each update) is dropped,
// so that a cached Service or Revision costs a bounded few KiB. Other objects pass
// unchanged.
func Slim(o any) (any, error) {
	switch o := o.(type) {
	case *servingv1.Service:
		return slimService(o), nil
	case *servingv1.Revision:
		return slimRevision(o), nil
	}
	return o, nil
}

// slimMeta keeps identity and the function name label (the API server bounds label
// values): Revisions and Services are mapped to Functions by name, and a Service is
// bound only with func's label.
func slimMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	out := metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		Generation: m.Generation, DeletionTimestamp: m.DeletionTimestamp, CreationTimestamp: m.CreationTimestamp}
	if v, ok := m.Labels[FunctionNameLabel]; ok {
		out.Labels = map[string]string{FunctionNameLabel: v}
	}
	return out
}

func slimService(s *servingv1.Service) *servingv1.Service {
	out := &servingv1.Service{TypeMeta: s.TypeMeta, ObjectMeta: slimMeta(s.ObjectMeta)}
	if cs := s.Spec.Template.Spec.Containers; len(cs) > 0 {
		out.Spec.Template.Spec.Containers = []corev1.Container{{Name: cs[0].Name, Image: netguard.CapText(cs[0].Image, MaxTextBytes)}}
	}
	st := &s.Status
	out.Status.ObservedGeneration = st.ObservedGeneration
	out.Status.LatestReadyRevisionName = netguard.CapText(st.LatestReadyRevisionName, maxReasonBytes)
	out.Status.LatestCreatedRevisionName = netguard.CapText(st.LatestCreatedRevisionName, maxReasonBytes)
	// Ready, and ConfigurationsReady: whether the newest Revision failed
	// (NewestRevisionFailed).
	for _, t := range []apis.ConditionType{apis.ConditionReady, servingv1.ServiceConditionConfigurationsReady} {
		if c := st.GetCondition(t); c != nil {
			out.Status.Conditions = append(out.Status.Conditions, slimCondition(*c))
		}
	}
	out.Status.URL = slimURL(st.URL)
	if a := st.Address; a != nil {
		if u := slimURL(a.URL); u != nil {
			out.Status.Address = &duckv1.Addressable{URL: u}
		}
	}
	for i, t := range st.Traffic {
		if i == MaxTraffic {
			break
		}
		if u := slimURL(t.URL); u != nil {
			out.Status.Traffic = append(out.Status.Traffic, servingv1.TrafficTarget{URL: u})
		}
	}
	return out
}

// slimRevision keeps the image digests of its containers' statuses.
func slimRevision(r *servingv1.Revision) *servingv1.Revision {
	out := &servingv1.Revision{TypeMeta: r.TypeMeta, ObjectMeta: slimMeta(r.ObjectMeta)}
	for i, c := range r.Status.ContainerStatuses {
		if i == maxContainerStatuses {
			break
		}
		out.Status.ContainerStatuses = append(out.Status.ContainerStatuses,
			servingv1.ContainerStatus{Name: c.Name, ImageDigest: netguard.CapText(c.ImageDigest, MaxTextBytes)})
	}
	// Ready's reason, and when it changed, for NewestRevisionFailure; not its message.
	if c := r.Status.GetCondition(apis.ConditionReady); c != nil {
		sc := slimCondition(*c)
		sc.Message = ""
		out.Status.Conditions = duckv1.Conditions{sc}
	}
	return out
}

func slimCondition(c apis.Condition) apis.Condition {
	return apis.Condition{Type: c.Type, Status: c.Status, Severity: c.Severity, LastTransitionTime: c.LastTransitionTime,
		Reason: netguard.CapText(c.Reason, maxReasonBytes), Message: netguard.CapText(c.Message, MaxTextBytes)}
}

// slimURL keeps a URL's scheme, host and path, or nothing when the host is no DNS
// name or the path is longer than a Trigger's filter may be: such a URL routes
// nothing a Trigger could name (subscribesTo).
func slimURL(u *apis.URL) *apis.URL {
	if u == nil || len(u.Host) > maxHostBytes || len(u.Path) > MaxAttributeBytes {
		return nil
	}
	return &apis.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}
}

package knative

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"knative.dev/pkg/apis"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
)

// RevisionFailure is Knative's report that a Service's newest Revision failed while
// an older one serves. It carries reasons, never messages: a failed container's
// message is the tail of the function's own log (Knative's
// FallbackToLogsOnError), which must not reach a build's status, Events or
// CloudEvents.
type RevisionFailure struct {
	// Revision is the failed Revision's name.
	Revision string
	// Reason is the Revision's (ImagePullBackOff, ExitCode1,
	// ProgressDeadlineExceeded...), else the Service's (RevisionFailed).
	Reason string
	// Since is when the Service's ConfigurationsReady turned False.
	Since time.Time
	// Created is when the Revision was made; zero when it was not read.
	Created time.Time
}

// NewestRevisionFailed returns the failed Revision's name and since when Knative
// reports svc's newest Revision failed while an older one serves: ConfigurationsReady
// False at the Service's observed generation, a latest created Revision that is not
// the latest ready one. Knative reports some failures at once that end by
// themselves (a pod not scheduled yet, a container restarted once): Since tells how
// long it has lasted.
func NewestRevisionFailed(svc *servingv1.Service) (name string, c *apis.Condition) {
	st := svc.Status
	if st.ObservedGeneration != svc.Generation || st.LatestCreatedRevisionName == "" ||
		st.LatestCreatedRevisionName == st.LatestReadyRevisionName {
		return "", nil
	}
	c = st.GetCondition(servingv1.ServiceConditionConfigurationsReady)
	if c == nil || c.Status != corev1.ConditionFalse {
		return "", nil
	}
	return st.LatestCreatedRevisionName, c
}

// NewestRevisionFailure is NewestRevisionFailed with the failed Revision read (from
// the cache): its creation time and Ready reason. Nil when Knative reports none.
func (s *Services) NewestRevisionFailure(ctx context.Context, svc *servingv1.Service) *RevisionFailure {
	name, c := NewestRevisionFailed(svc)
	if c == nil {
		return nil
	}
	f := &RevisionFailure{Revision: name, Reason: c.Reason, Since: c.LastTransitionTime.Inner.Time}
	rev := &servingv1.Revision{}
	if err := s.Reader.Get(ctx, types.NamespacedName{Namespace: svc.Namespace, Name: name}, rev); err != nil {
		return f
	}
	f.Created = rev.CreationTimestamp.Time
	if rc := rev.Status.GetCondition(apis.ConditionReady); rc != nil && rc.Reason != "" {
		f.Reason = rc.Reason
	}
	return f
}

// Serves reports whether Knative serves svc's newest template: Ready at its
// generation, on its latest created Revision.
func Serves(svc *servingv1.Service) bool {
	st := svc.Status
	return svc.IsReady() && st.LatestReadyRevisionName != "" && st.LatestReadyRevisionName == st.LatestCreatedRevisionName
}

// RollingOut reports whether Knative has not settled svc's newest template yet: it
// created a Revision but does not serve the template (Serves). Until then the image
// read may not be what serves: with no ready Revision it is the template's, and an
// older Revision may become ready first (a rebuild verified on the template would be
// built again).
func RollingOut(svc *servingv1.Service) bool {
	return svc.Status.LatestCreatedRevisionName != "" && !Serves(svc)
}

package knative

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
)

// NewestRevisionFailed says why Knative reports svc's newest Revision failed while
// an older one serves — the Revision's name and Knative's reason and message, cut
// to MaxAttributeBytes — or "" when it does not: ConfigurationsReady False at the
// Service's observed generation, a latest created Revision that is not the latest
// ready one. A Revision whose pods cannot start (an image that cannot be pulled, a
// container that exits) fails once config-deployment's progress-deadline passes
// (10 minutes by default); until then the Service is Unknown, and so is this.
func NewestRevisionFailed(svc *servingv1.Service) string {
	st := svc.Status
	if st.ObservedGeneration != svc.Generation || st.LatestCreatedRevisionName == "" ||
		st.LatestCreatedRevisionName == st.LatestReadyRevisionName {
		return ""
	}
	c := st.GetCondition(servingv1.ServiceConditionConfigurationsReady)
	if c == nil || c.Status != corev1.ConditionFalse {
		return ""
	}
	return Cut(fmt.Sprintf("Knative reports Revision %s failed (%s: %s)", st.LatestCreatedRevisionName, c.Reason, c.Message), MaxAttributeBytes)
}

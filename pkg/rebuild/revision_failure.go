package rebuild

import (
	"fmt"
	"time"

	"github.com/fnops/func-operator/api/v1alpha1"
)

// RevisionFailedGrace is how long Knative must have reported a build's Revision
// failed before the build counts as failed: Knative reports some failures at once
// that end by themselves (a pod not scheduled yet while a node is added, a
// container restarted once during its rollout). Still well below DeployGrace.
const RevisionFailedGrace = 30 * time.Second

// RevisionFailure is Knative's report that the newest Revision of what func deployed
// failed while an older one serves (knative.RevisionFailure).
type RevisionFailure struct {
	// Revision, Reason: the failed Revision and its reason (no message: it may
	// quote the function's log). Revision is empty when Knative reports none.
	Revision, Reason string
	// Since is when Knative reported it; Created when the Revision was made.
	Since, Created time.Time
}

// Of reports whether the failure is b's deploy's, and lasted: a Revision made
// after b started, reported failed for RevisionFailedGrace by now. A Revision from
// before b (a failed deploy of someone's, a stale read of the Service) is not b's.
func (f RevisionFailure) Of(b *v1alpha1.BuildStatus, now time.Time) bool {
	return f.Revision != "" && b.StartTime != nil && !f.Created.IsZero() && !f.Created.Before(b.StartTime.Time) &&
		now.Sub(f.Since) >= RevisionFailedGrace
}

// String says what Knative reports, for a build's failure message.
func (f RevisionFailure) String() string {
	return fmt.Sprintf("Knative reports Revision %s failed (%s)", f.Revision, f.Reason)
}

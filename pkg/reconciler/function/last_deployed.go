package function

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fnops/func-operator/api/v1alpha1"
)

// deployClockSkew is how far in the future a last-deployed time may be and still be
// taken: func deploy writes its own machine's clock. A later one is taken once the
// operator's clock reaches it (the annotation stays until the next deploy).
const deployClockSkew = 5 * time.Minute

// recordDeploy reads annotation functions.knative.dev/last-deployed, which `func
// deploy` sets on every deploy, as the upstream operator does: a deploy newer than
// status.deployment.imageBuilt becomes its value and a history entry, and a Normal
// Event. A value that is not an RFC 3339 time is not func's and is ignored; the
// annotation is never written.
func (r *Reconciler) recordDeploy(fn *v1alpha1.Function) {
	v, ok := fn.Annotations[v1alpha1.AnnotationLastDeployed]
	if !ok {
		return
	}
	t, err := time.Parse(time.RFC3339, strings.TrimSpace(v))
	if err != nil || t.After(r.clock.Now().Add(deployClockSkew)) {
		return
	}
	at := metav1.NewTime(t.UTC().Truncate(time.Second))
	if fn.Status.Deployment == nil {
		fn.Status.Deployment = &v1alpha1.DeploymentStatus{}
	}
	d := fn.Status.Deployment
	if d.ImageBuilt != nil && !at.After(d.ImageBuilt.Time) {
		return
	}
	for _, h := range fn.Status.History {
		if h.Message == v1alpha1.HistoryDeployed && h.Time.Equal(&at) {
			return // recorded; a rebuild finished since, before the time func wrote
		}
	}
	d.ImageBuilt = &at
	fn.Status.AddHistory(v1alpha1.HistoryEntry{Time: at, Message: v1alpha1.HistoryDeployed})
	r.recorder.Eventf(fn, corev1.EventTypeNormal, "Deployed", "%s with func deploy at %s (annotation %s)",
		v1alpha1.HistoryDeployed, at.Format(time.RFC3339), v1alpha1.AnnotationLastDeployed)
}

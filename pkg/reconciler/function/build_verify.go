package function

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/fnops/func-operator/api/v1alpha1"
)

// verifyRebuild follows a successful build until the Knative Service runs its image
// (obs.deployment) with the middleware it was to bring (obs.middleware). It returns
// decided when the build's outcome is settled for this reconcile: still waiting for
// the deploy, or failed; not decided once the rebuild is recorded (or was already).
func (r *Reconciler) verifyRebuild(fn *v1alpha1.Function, obs *observation) (Result, bool) {
	mw, b := fn.Status.Middleware, fn.Status.Build
	if mw.LastRebuild != nil && b.CompletionTime != nil && mw.LastRebuild.Equal(b.CompletionTime) {
		return Result{}, false // recorded already
	}
	now, image := r.now(), obs.deployment.image
	if b.ServiceUID != "" && b.ServiceUID != obs.deployment.uid {
		r.buildFailed(fn, now, failure{message: fmt.Sprintf("PipelineRun %s succeeded, but the Knative Service it was started for (UID %s) was replaced since: not counted as a rebuild",
			b.PipelineRun, b.ServiceUID)})
		fn.Status.MarkBuildFailed("%s", failureSummary(b))
		return Result{}, true
	}
	if image == b.FromImage && b.FromImage != "" {
		if b.CompletionTime != nil && now.Sub(b.CompletionTime.Time) > deployGrace {
			r.buildFailed(fn, now, failure{message: fmt.Sprintf("PipelineRun %s succeeded but the Knative Service still runs %s after %s", b.PipelineRun, b.FromImage, deployGrace)})
			fn.Status.MarkBuildFailed("%s", failureSummary(b))
			return Result{}, true
		}
		fn.Status.MarkRebuilding("PipelineRun %s succeeded: waiting for the Knative Service to run the new image", b.PipelineRun)
		return requeueAfter(pollWhileWaiting), true
	}
	if obs.middleware.rebuildDue {
		r.buildFailed(fn, now, failure{message: fmt.Sprintf("PipelineRun %s succeeded but the new image %s runs middleware %s; %s is available",
			b.PipelineRun, image, orDefault(obs.middleware.current, "unknown"), obs.middleware.available)})
		fn.Status.MarkBuildFailed("%s", failureSummary(b))
		return Result{}, true
	}
	mw.LastRebuild = b.CompletionTime.DeepCopy()
	fn.Status.Deployment.ImageBuilt = b.CompletionTime.DeepCopy()
	msg := fmt.Sprintf("Middleware updated from %s to %s", orDefault(b.FromMiddleware, "unknown"), orDefault(obs.middleware.current, "unknown"))
	b.Message = fmt.Sprintf("%s by PipelineRun %s; the Service runs %s", msg, b.PipelineRun, image)
	fn.Status.AddHistory(v1alpha1.HistoryEntry{Time: *b.CompletionTime.DeepCopy(), Message: msg})
	r.Recorder.Eventf(fn, corev1.EventTypeNormal, "Rebuilt", "%s (PipelineRun %s)", msg, b.PipelineRun)
	return Result{}, false
}

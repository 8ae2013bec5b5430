package build

import (
	"context"
	"fmt"
	"strings"

	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/rebuild"
	"github.com/fnops/func-operator/pkg/reconciler/function/resources"
	"github.com/fnops/func-operator/pkg/rerror"
	"github.com/fnops/func-operator/pkg/tenancy"
)

// StopUnbound stops fn's build in flight when it was started for another Knative
// Service than the one the deployment step found fn bound to (d; none
// when it left the Service: gone, or not fn's any more). A build never goes on to
// deploy over a Service whose binding changed: its launch is cancelled (func's
// provider deletes the PipelineRun it follows), its PipelineRun deleted, and the
// build recorded as failed. It does nothing when the deployment step did not learn
// the binding.
func (r *Reconciler) StopUnbound(ctx context.Context, fn *v1alpha1.Function, d Deployed) error {
	if !r.Enabled() || (d.BoundUID == "" && !d.Unbound) {
		return nil
	}
	m := r.machine()
	if !m.Next(fn.Status.Build, rebuild.Event{Kind: rebuild.Bound, At: r.now(), BoundUID: d.BoundUID}).Stop {
		return nil
	}
	b := fn.Status.Build
	left, err := r.stopBuild(ctx, fn)
	if err != nil {
		return err
	}
	msg := fmt.Sprintf("stopped: what func deployed that the build was started for (UID %s: a Knative Service, or a raw or keda Deployment) "+
		"is no longer what this Function is bound to, and the build must not deploy over another",
		b.ServiceUID)
	if len(left) > 0 {
		msg += fmt.Sprintf("; the namespace no longer lets the operator delete its PipelineRun (%s, ClusterRole %s): delete it yourself",
			strings.Join(left, ", "), tenancy.NamespaceClusterRole)
	}
	r.apply(fn, m.Next(b, rebuild.Event{Kind: rebuild.Stopped, At: r.now(), Failure: rebuild.Failure{Message: msg}}))
	return nil
}

// stopBuild stops fn's build in flight: its launch is cancelled (func's provider
// deletes the PipelineRun it follows) and its PipelineRuns deleted. It returns those
// the namespace does not let the operator delete.
func (r *Reconciler) stopBuild(ctx context.Context, fn *v1alpha1.Function) (left []string, _ error) {
	b := fn.Status.Build
	r.Builds.Launcher.Cancel(client.ObjectKeyFromObject(fn))
	if !r.Builds.TektonServed() {
		return nil, nil
	}
	left, err := r.deleteLabelled(ctx, pipelinev1.SchemeGroupVersion.WithKind("PipelineRun"), fn.Namespace,
		client.MatchingLabels(resources.BuildLabels(fn, b.ID)))
	if err != nil {
		return nil, rerror.NewTransient(v1alpha1.ReasonBuildFailed, "stopping build %s: %w", b.ID, err)
	}
	return left, nil
}

package function

import (
	"context"
	"fmt"
	"strings"

	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/reconciler/function/resources"
	"github.com/fnops/func-operator/pkg/rerror"
	"github.com/fnops/func-operator/pkg/tenancy"
)

// stopUnboundBuild stops fn's build in flight when it was started for another Knative
// Service than uid, the one fn is bound to now ("" for none: the Service is gone, or
// not fn's any more). A build never goes on to deploy over a Service whose binding
// changed: its launch is cancelled (func's provider deletes the PipelineRun it
// follows), its PipelineRun deleted, and the build recorded as failed.
func (r *Reconciler) stopUnboundBuild(ctx context.Context, fn *v1alpha1.Function, uid types.UID) error {
	b := fn.Status.Build
	if r.Launcher == nil || b == nil || (b.Phase != v1alpha1.BuildPhaseStarting && b.Phase != v1alpha1.BuildPhaseRunning) ||
		b.ServiceUID == "" || b.ServiceUID == uid {
		return nil
	}
	left, err := r.stopBuild(ctx, fn)
	if err != nil {
		return err
	}
	msg := fmt.Sprintf("stopped: the Knative Service the build was started for (UID %s) is no longer the one this Function is bound to, and the build must not deploy over another",
		b.ServiceUID)
	if len(left) > 0 {
		msg += fmt.Sprintf("; the namespace no longer lets the operator delete its PipelineRun (%s, ClusterRole %s): delete it yourself",
			strings.Join(left, ", "), tenancy.NamespaceClusterRole)
	}
	r.buildFailed(fn, r.now(), failure{message: msg})
	return nil
}

// stopBuild stops fn's build in flight: its launch is cancelled (func's provider
// deletes the PipelineRun it follows) and its PipelineRuns deleted. It returns those
// the namespace does not let the operator delete.
func (r *Reconciler) stopBuild(ctx context.Context, fn *v1alpha1.Function) (left []string, _ error) {
	b := fn.Status.Build
	r.Launcher.Cancel(client.ObjectKeyFromObject(fn))
	if !r.tektonServed() {
		return nil, nil
	}
	left, err := r.deleteLabelled(ctx, pipelinev1.SchemeGroupVersion.WithKind("PipelineRun"), fn.Namespace,
		client.MatchingLabels(resources.BuildLabels(fn, b.ID)))
	if err != nil {
		return nil, rerror.NewTransient(v1alpha1.ReasonBuildFailed, "stopping build %s: %w", b.ID, err)
	}
	return left, nil
}

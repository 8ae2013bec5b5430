package function

import (
	"context"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/reconciler/function/oncommit"
)

// reconcileDeployOnCommit runs the source policy's check (package oncommit) into
// obs.onCommit: whether the followed commit changes the function, and is to be built.
func (r *Reconciler) reconcileDeployOnCommit(ctx context.Context, fn *v1alpha1.Function, obs *observation) (Result, error) {
	running, anchor := runningCommit(fn)
	oc, err := r.onCommit.Check(ctx, fn, oncommit.Input{Head: obs.source.head, Auth: obs.source.auth,
		Tree: obs.source.tree, PipelinesAsCode: obs.source.pipelinesAsCode, Running: running, Anchor: anchor})
	obs.onCommit = oc
	return Result{}, err
}

// runningCommit is the commit the running function was built from, as far as known
// (abbreviated when the image's label is; "-dirty" counts as its base), and the
// anchor a lookup of an abbreviated one searches from
// (status.deployment.followedAtDeploy).
func runningCommit(fn *v1alpha1.Function) (commit, anchor string) {
	d := fn.Status.Deployment
	if d == nil {
		return "", ""
	}
	if rev := parseRevision(d.Revision); rev.commit != "" {
		return rev.commit, d.FollowedAtDeploy
	}
	return d.FollowedAtDeploy, d.FollowedAtDeploy
}

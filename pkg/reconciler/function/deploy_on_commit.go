package function

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/rerror"
)

// The source policy (annotation functions.dev/deploy-on-commit, ConfigMap key
// deployOnCommit): a new commit of the followed reference that changes the function's
// directory is built and deployed, through the same path as a middleware rebuild.
// Whether a commit changes the function is told by the git tree of its directory,
// which is the same exactly when nothing in it changed: a commit that touches only
// other directories of a monorepo builds nothing.

// reconcileDeployOnCommit decides, while the source policy is on, whether the
// followed commit changes the function against the deployed one, into obs.onCommit,
// and shows it in status.deployOnCommit and condition SourceDeployed. Reading the
// deployed commit may fail without failing the check: a middleware rebuild does not
// depend on it.
func (r *Reconciler) reconcileDeployOnCommit(ctx context.Context, fn *v1alpha1.Function, obs *observation) (Result, error) {
	cfg := r.config.Load()
	on, source := fn.Settings().DeployOnCommit(cfg.DeployOnCommit)
	if !on {
		fn.Status.DeployOnCommit = nil
		fn.Status.ClearSourceDeployed()
		return Result{}, nil
	}
	st := fn.Status.DeployOnCommit
	if st == nil {
		st = &v1alpha1.DeployOnCommitStatus{}
		fn.Status.DeployOnCommit = st
	}
	followed := obs.source.head.Commit
	st.Enabled, st.Source, st.FollowedCommit = true, source, followed
	if st.LastBuildTime != nil {
		obs.onCommit.NotBefore = st.LastBuildTime.Add(cfg.MinSourceBuildInterval)
	}
	obs.onCommit.Enabled = true

	tree, pac, err := r.followedTree(ctx, fn, obs)
	if err != nil {
		return r.deployedCommitUnknown(fn, st, "the followed commit %s cannot be read: %s", v1alpha1.ShortCommit(followed), err)
	}
	st.PipelinesAsCode = pac
	base, baseTree, err := r.deployedTree(ctx, fn, obs, tree)
	if err != nil {
		return r.deployedCommitUnknown(fn, st, "%s", err)
	}
	st.DeployedCommit, st.DeployedTree = base, baseTree
	st.Changed = baseTree != tree
	obs.onCommit.Changed, obs.onCommit.Deployed = st.Changed, base
	switch now := r.clock.Now(); {
	case !st.Changed:
		fn.Status.MarkSourceDeployed(corev1.ConditionTrue, v1alpha1.ReasonCommitDeployed, pac,
			"the function's directory at the followed commit %s is deployed (built from commit %s)", v1alpha1.ShortCommit(followed), v1alpha1.ShortCommit(base))
	case fn.Status.ManagementDisabled():
		fn.Status.MarkSourceDeployed(corev1.ConditionFalse, v1alpha1.ReasonManagementDisabled, pac,
			"commit %s changes the function (running: commit %s), but func.yaml sets deploy.managementDisabled: it is not built", v1alpha1.ShortCommit(followed), v1alpha1.ShortCommit(base))
	case now.Before(obs.onCommit.NotBefore):
		fn.Status.MarkSourceDeployed(corev1.ConditionFalse, v1alpha1.ReasonBuildIntervalNotOver, pac,
			"commit %s changes the function (running: commit %s); the last build for a new commit started at %s: the next starts at %s (ConfigMap %s, key %s)",
			v1alpha1.ShortCommit(followed), v1alpha1.ShortCommit(base), st.LastBuildTime.UTC().Format(time.RFC3339),
			obs.onCommit.NotBefore.UTC().Format(time.RFC3339), config.ConfigMapName, config.KeyMinSourceBuildInterval)
	default:
		fn.Status.MarkSourceDeployed(corev1.ConditionFalse, v1alpha1.ReasonNewCommit, pac,
			"commit %s changes the function (running: commit %s): it is built and deployed (status.build)", v1alpha1.ShortCommit(followed), v1alpha1.ShortCommit(base))
	}
	return Result{}, nil
}

// deployedCommitUnknown shows why the deployed commit cannot be compared with the
// followed one: no source build starts, and the check goes on.
func (r *Reconciler) deployedCommitUnknown(fn *v1alpha1.Function, st *v1alpha1.DeployOnCommitStatus, format string, args ...any) (Result, error) {
	st.Changed = false
	fn.Status.MarkSourceDeployed(corev1.ConditionUnknown, v1alpha1.ReasonDeployedCommitUnknown, st.PipelinesAsCode,
		"no new commit is built: "+format, args...)
	return Result{}, nil
}

// followedTree is the tree of the function's directory at the followed commit, and
// whether the repository holds a .tekton/ directory there: as the source step read
// them, or from the Fetcher's cache (a transfer when a restart emptied it).
func (r *Reconciler) followedTree(ctx context.Context, fn *v1alpha1.Function, obs *observation) (string, bool, error) {
	if obs.source.tree != "" {
		return obs.source.tree, obs.source.pipelinesAsCode, nil
	}
	res, err := r.remote.fetcher.Read(ctx, fn.Spec.Repository.URL, obs.source.head, fn.Spec.Repository.CleanPath(), obs.source.auth, r.config.Load().GitTimeout)
	if err != nil {
		return "", false, err
	}
	return res.Tree, res.PipelinesAsCode, nil
}

// deployedTree returns the commit the running function was built from, in full, and
// the tree of the function's directory there: the operator's last build while its
// image runs (its tree recorded when it started), else the running image's revision
// label, else the commit followed when the image was first seen. A commit other than
// the followed one is read once, in the followed reference's history, and its tree
// kept in the status.
func (r *Reconciler) deployedTree(ctx context.Context, fn *v1alpha1.Function, obs *observation, followedTree string) (string, string, error) {
	st, followed := fn.Status.DeployOnCommit, obs.source.head.Commit
	want, anchor := runningCommit(fn)
	switch {
	case want == "":
		return "", "", fmt.Errorf("the commit the running function was built from is not known: the image names none, and the operator has not seen it deployed")
	case st.LastBuildTree != "" && st.LastBuildCommit == want:
		return want, st.LastBuildTree, nil
	case st.DeployedTree != "" && strings.HasPrefix(st.DeployedCommit, want):
		return st.DeployedCommit, st.DeployedTree, nil
	case want == followed || (strings.HasPrefix(followed, want) && anchor == followed):
		return followed, followedTree, nil
	}
	res, err := r.remote.fetcher.ReadAt(ctx, fn.Spec.Repository.URL, obs.source.head, want, anchor, fn.Spec.Repository.CleanPath(),
		obs.source.auth, r.config.Load().GitTimeout)
	switch {
	case rerror.IsStalling(err):
		return "", "", fmt.Errorf("commit %s, the one the running function was built from, cannot be read: %w", v1alpha1.ShortCommit(want), err)
	case err != nil:
		return "", "", fmt.Errorf("reading commit %s, the one the running function was built from: %w", v1alpha1.ShortCommit(want), err)
	}
	return res.Commit, res.Tree, nil
}

// runningCommit is the commit the running function was built from, as far as known
// (abbreviated when the image's label is), and the anchor a lookup of an abbreviated
// one searches from (status.deployment.followedAtDeploy).
func runningCommit(fn *v1alpha1.Function) (commit, anchor string) {
	d, b, st := fn.Status.Deployment, fn.Status.Build, fn.Status.DeployOnCommit
	if d == nil {
		return "", ""
	}
	anchor = d.FollowedAtDeploy
	// The operator's build runs: it is what deployed the image (status.deployment.imageBuilt).
	if b != nil && b.Phase == v1alpha1.BuildPhaseSucceeded && b.Commit != "" && b.CompletionTime != nil &&
		d.ImageBuilt != nil && d.ImageBuilt.Equal(b.CompletionTime) {
		return b.Commit, anchor
	}
	if rev := parseRevision(d.Revision); rev.commit != "" {
		return rev.commit, anchor
	}
	if st != nil && st.DeployedCommit != "" && st.DeployedCommit == d.FollowedAtDeploy {
		return st.DeployedCommit, anchor
	}
	return d.FollowedAtDeploy, anchor
}

package function

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/git"
	"github.com/fnops/func-operator/pkg/lanes"
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
	tree, pac, err := r.followedTree(ctx, fn, obs)
	st.Enabled, st.Source, st.FollowedCommit = true, source, followed
	if err != nil {
		st.FollowedTree = ""
		return r.deployedCommitUnknown(fn, st, "the followed commit %s cannot be read: %s", v1alpha1.ShortCommit(followed), err)
	}
	st.FollowedTree, st.PipelinesAsCode = tree, pac
	if st.LastBuildTime != nil {
		obs.onCommit.NotBefore = st.LastBuildTime.Add(cfg.MinSourceBuildInterval)
	}
	obs.onCommit.Enabled, obs.onCommit.Tried = true, st.LastBuildTree == tree
	base, baseTree, err := r.deployedTree(ctx, fn, obs, tree)
	switch {
	case lanes.IsHostBusy(err):
		return Result{}, err
	case err != nil:
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
	case fn.Settings().HoldRebuilds:
		obs.onCommit.Changed = false
		fn.Status.MarkSourceDeployed(corev1.ConditionFalse, v1alpha1.ReasonRebuildsHeld, pac,
			"commit %s changes the function (running: commit %s), but an invalid settings annotation holds every rebuild (condition SettingsValid)",
			v1alpha1.ShortCommit(followed), v1alpha1.ShortCommit(base))
	case now.Before(obs.onCommit.NotBefore):
		fn.Status.MarkSourceDeployed(corev1.ConditionFalse, v1alpha1.ReasonBuildIntervalNotOver, pac,
			"commit %s changes the function (running: commit %s); the last build for a new commit started at %s: the next starts at %s (ConfigMap %s, key %s)",
			v1alpha1.ShortCommit(followed), v1alpha1.ShortCommit(base), st.LastBuildTime.UTC().Format(time.RFC3339),
			obs.onCommit.NotBefore.UTC().Format(time.RFC3339), config.ConfigMapName, config.KeyMinSourceBuildInterval)
	default:
		fn.Status.MarkSourceDeployed(corev1.ConditionFalse, v1alpha1.ReasonNewCommit, pac,
			"commit %s changes the function (running: commit %s): a build of it is due (status.build says where it stands)",
			v1alpha1.ShortCommit(followed), v1alpha1.ShortCommit(base))
	}
	return Result{}, nil
}

// deployedCommitUnknown shows why the deployed commit cannot be compared with the
// followed one: no source build starts, and the check goes on.
func (r *Reconciler) deployedCommitUnknown(fn *v1alpha1.Function, st *v1alpha1.DeployOnCommitStatus, format string, args ...any) (Result, error) {
	st.Changed, st.DeployedCommit, st.DeployedTree = false, "", ""
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
	// Read by an earlier check, of the same commit: an unchanged check reads nothing.
	if st := fn.Status.DeployOnCommit; st != nil && st.FollowedTree != "" && st.FollowedCommit == obs.source.head.Commit {
		return st.FollowedTree, st.PipelinesAsCode, nil
	}
	res, err := r.remote.fetcher.Read(ctx, fn.Spec.Repository.URL, obs.source.head, fn.Spec.Repository.CleanPath(), obs.source.auth, r.config.Load().GitTimeout)
	if err != nil {
		return "", false, err
	}
	return res.Tree, res.PipelinesAsCode, nil
}

// deployedTree returns the commit the running function was built from, in full, and
// the tree of the function's directory there (empty when the directory is not
// there: the function changed). The commit is the running image's revision label,
// else the commit followed when the image was first seen (the commit of the
// operator's build that deployed it, see newImage). A commit other than the followed
// one is read once, in the followed reference's history, in the git host's lane: its
// tree is kept in the status, and so is a commit that cannot be read, until the
// function runs another image.
func (r *Reconciler) deployedTree(ctx context.Context, fn *v1alpha1.Function, obs *observation, followedTree string) (string, string, error) {
	st, followed := fn.Status.DeployOnCommit, obs.source.head.Commit
	want, anchor := runningCommit(fn)
	unknown := fn.Status.Deployment.Image + "@" + want
	switch {
	case want == "":
		return "", "", fmt.Errorf("the commit the running function was built from is not known: the image names none, and the operator has not seen it deployed")
	case st.DeployedTree != "" && strings.HasPrefix(st.DeployedCommit, want):
		return st.DeployedCommit, st.DeployedTree, nil
	case want == followed || (strings.HasPrefix(followed, want) && anchor == followed):
		return followed, followedTree, nil
	case st.UnknownFor == unknown:
		return "", "", fmt.Errorf("commit %s, the one the running function was built from, could not be read (not again until it runs another image)",
			v1alpha1.ShortCommit(want))
	}
	host := lanes.GitHost(fn.Spec.Repository.URL)
	leave, ok := r.remote.lanes.Enter(host, fn.Namespace)
	if !ok {
		return "", "", lanes.Busy(host)
	}
	res, err := r.remote.fetcher.ReadAt(ctx, fn.Spec.Repository.URL, obs.source.head, want, anchor, fn.Spec.Repository.CleanPath(),
		obs.source.auth, r.config.Load().GitTimeout)
	leave(git.IsTimeout(err))
	switch reason := rerror.Reason(err); {
	case err == nil:
		st.UnknownFor = ""
		return res.Commit, res.Tree, nil
	case reason == v1alpha1.ReasonPathNotFound || reason == v1alpha1.ReasonFuncYamlNotFound:
		return cmp.Or(res.Commit, want), "", nil // the function was not there: it changed
	case rerror.IsStalling(err):
		st.UnknownFor = unknown
		return "", "", fmt.Errorf("commit %s, the one the running function was built from, cannot be read: %w", v1alpha1.ShortCommit(want), err)
	default:
		return "", "", fmt.Errorf("reading commit %s, the one the running function was built from: %w", v1alpha1.ShortCommit(want), err)
	}
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

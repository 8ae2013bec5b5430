package oncommit

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/git"
	"github.com/fnops/func-operator/pkg/lanes"
	"github.com/fnops/func-operator/pkg/reconciler/function/build"
	"github.com/fnops/func-operator/pkg/rerror"
)

// Deps is what the source policy's check reads through.
type Deps struct {
	// Sources reads a commit's function directory (git.Fetcher).
	Sources build.Sources
	// Lanes keeps one git host from holding every worker; nil: no bound.
	Lanes  *lanes.Lanes
	Config *config.Store
	// Clock is the real one when nil.
	Clock clock.PassiveClock
}

// Checker checks Functions against their source policy.
type Checker struct {
	Deps
}

// New returns the Checker of d.
func New(d Deps) *Checker {
	if d.Clock == nil {
		d.Clock = clock.RealClock{}
	}
	return &Checker{Deps: d}
}

// Input is what the checks before this one observed.
type Input struct {
	// Head is the followed reference and its commit; Auth the repository's credentials.
	Head git.Head
	Auth *git.Auth
	// Tree and PipelinesAsCode are what the source step read of the followed commit
	// (git.Result), when it read it ("": they are read again, from the Fetcher's cache).
	Tree            string
	PipelinesAsCode bool
	// Running is the commit the running function was built from, as far as known
	// (abbreviated when the image's label is); Anchor the commit a lookup of an
	// abbreviated one searches from (status.deployment.followedAtDeploy).
	Running, Anchor string
}

// Check decides, while the source policy is on, whether the followed commit
// (in.Head) changes the function against the deployed one,
// and shows it in status.deployOnCommit and condition SourceDeployed. Reading the
// deployed commit may fail without failing the check: a middleware rebuild does not
// depend on it.
func (c *Checker) Check(ctx context.Context, fn *v1alpha1.Function, in Input) (build.OnCommit, error) {
	var out build.OnCommit
	cfg := c.Config.Load()
	on, source := fn.Settings().DeployOnCommit(cfg.DeployOnCommit)
	if !on {
		fn.Status.DeployOnCommit = nil
		fn.Status.ClearSourceDeployed()
		return out, nil
	}
	st := fn.Status.DeployOnCommit
	if st == nil {
		st = &v1alpha1.DeployOnCommitStatus{}
		fn.Status.DeployOnCommit = st
	}
	followed := in.Head.Commit
	tree, pac, err := c.followedTree(ctx, fn, in)
	st.Enabled, st.Source, st.FollowedCommit = true, source, followed
	if err != nil {
		st.FollowedTree = ""
		deployedCommitUnknown(fn, st, "the followed commit %s cannot be read: %s", v1alpha1.ShortCommit(followed), err)
		return out, nil
	}
	st.FollowedTree, st.PipelinesAsCode = tree, pac
	if st.LastBuildTime != nil {
		out.NotBefore = st.LastBuildTime.Add(cfg.MinSourceBuildInterval)
	}
	out.Enabled, out.Tree, out.Tried = true, tree, st.LastBuildTree == tree
	base, baseTree, err := c.deployedTree(ctx, fn, in, tree)
	switch {
	case lanes.IsHostBusy(err):
		return out, err
	case err != nil:
		deployedCommitUnknown(fn, st, "%s", err)
		return out, nil
	}
	st.DeployedCommit, st.DeployedTree = base, baseTree
	st.Changed = baseTree != tree
	out.Changed, out.Deployed = st.Changed, base
	switch now := c.Clock.Now(); {
	case !st.Changed:
		fn.Status.MarkSourceDeployed(corev1.ConditionTrue, v1alpha1.ReasonCommitDeployed, pac,
			"the function's directory at the followed commit %s is deployed (built from commit %s)", v1alpha1.ShortCommit(followed), v1alpha1.ShortCommit(base))
	case fn.Status.ManagementDisabled():
		fn.Status.MarkSourceDeployed(corev1.ConditionFalse, v1alpha1.ReasonManagementDisabled, pac,
			"commit %s changes the function (running: commit %s), but func.yaml sets deploy.managementDisabled: it is not built", v1alpha1.ShortCommit(followed), v1alpha1.ShortCommit(base))
	case fn.Settings().HoldRebuilds:
		out.Changed = false
		fn.Status.MarkSourceDeployed(corev1.ConditionFalse, v1alpha1.ReasonRebuildsHeld, pac,
			"commit %s changes the function (running: commit %s), but an invalid settings annotation holds every rebuild (condition SettingsValid)",
			v1alpha1.ShortCommit(followed), v1alpha1.ShortCommit(base))
	case now.Before(out.NotBefore):
		fn.Status.MarkSourceDeployed(corev1.ConditionFalse, v1alpha1.ReasonBuildIntervalNotOver, pac,
			"commit %s changes the function (running: commit %s); the last build for a new commit started at %s: the next starts at %s (ConfigMap %s, key %s)",
			v1alpha1.ShortCommit(followed), v1alpha1.ShortCommit(base), st.LastBuildTime.UTC().Format(time.RFC3339),
			out.NotBefore.UTC().Format(time.RFC3339), config.ConfigMapName, config.KeyMinSourceBuildInterval)
	default:
		fn.Status.MarkSourceDeployed(corev1.ConditionFalse, v1alpha1.ReasonNewCommit, pac,
			"commit %s changes the function (running: commit %s): a build of it is due (status.build says where it stands)",
			v1alpha1.ShortCommit(followed), v1alpha1.ShortCommit(base))
	}
	return out, nil
}

// deployedCommitUnknown shows why the deployed commit cannot be compared with the
// followed one: no source build starts, and the check goes on.
func deployedCommitUnknown(fn *v1alpha1.Function, st *v1alpha1.DeployOnCommitStatus, format string, args ...any) {
	st.Changed, st.DeployedCommit, st.DeployedTree = false, "", ""
	fn.Status.MarkSourceDeployed(corev1.ConditionUnknown, v1alpha1.ReasonDeployedCommitUnknown, st.PipelinesAsCode,
		"no new commit is built: "+format, args...)
}

// followedTree is the tree of the function's directory at the followed commit, and
// whether the repository holds a .tekton/ directory there: as the source step read
// them, or from the Fetcher's cache (a transfer when a restart emptied it).
func (c *Checker) followedTree(ctx context.Context, fn *v1alpha1.Function, in Input) (string, bool, error) {
	if in.Tree != "" {
		return in.Tree, in.PipelinesAsCode, nil
	}
	// Read by an earlier check, of the same commit: an unchanged check reads nothing.
	if st := fn.Status.DeployOnCommit; st != nil && st.FollowedTree != "" && st.FollowedCommit == in.Head.Commit {
		return st.FollowedTree, st.PipelinesAsCode, nil
	}
	res, err := c.Sources.Read(ctx, fn.Spec.Repository.URL, in.Head, fn.Spec.Repository.CleanPath(), in.Auth, c.Config.Load().GitTimeout)
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
func (c *Checker) deployedTree(ctx context.Context, fn *v1alpha1.Function, in Input, followedTree string) (string, string, error) {
	st, followed := fn.Status.DeployOnCommit, in.Head.Commit
	want, anchor := in.Running, in.Anchor
	image := ""
	if d := fn.Status.Deployment; d != nil {
		image = d.Image
	}
	unknown := image + "@" + want
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
	leave, ok := c.Lanes.Enter(host, fn.Namespace)
	if !ok {
		return "", "", lanes.Busy(host)
	}
	res, err := c.Sources.ReadAt(ctx, fn.Spec.Repository.URL, in.Head, want, anchor, fn.Spec.Repository.CleanPath(),
		in.Auth, c.Config.Load().GitTimeout)
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

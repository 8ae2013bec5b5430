package function

import (
	"fmt"
	"strings"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/git"
	"github.com/fnops/func-operator/pkg/registry"
)

// Which commit a rebuild builds. func's builds label the image with the commit of
// the source they built (org.opencontainers.image.revision: func writes its first 7
// hex digits, "-dirty" appended for uncommitted changes; the operator's rebuilds
// write it in full). A middleware rebuild builds that commit, so that it changes the
// middleware and nothing else: never whatever was pushed to the followed branch
// since the function was deployed, unless the policy says so (annotation
// functions.dev/rebuild-commit, else ConfigMap key rebuildCommit).

// rebuildFrom is the commit a rebuild builds, as decided before it starts.
type rebuildFrom struct {
	// commit in full, or as the revision label abbreviates it (looked up in the
	// followed reference's history when the rebuild starts); empty when no commit
	// may be built: problem says why.
	commit string
	// source is v1alpha1.RebuildFromDeployed or RebuildFromFollowed; empty with problem.
	source string
	// policy and policySource are the policy that decided, and which setting set it.
	policy, policySource string
	// why says, for messages, why the followed commit is built; empty for the deployed one.
	why string
	// problem says why no commit may be built.
	problem string
}

// unreadFrom is the commit a rebuild of a function whose image the middleware step
// does not read (its middleware lives in its source, or its runtime has none) builds:
// the followed one when the policy says so; else none, as the commit the running
// image was built from is not known (only a request rebuilds such a function).
func unreadFrom(fn *v1alpha1.Function, cfg config.Config, followed string) rebuildFrom {
	d := decideRebuildFrom(fn, cfg, "", followed)
	if d.policy == v1alpha1.RebuildCommitFollowed {
		return d
	}
	return rebuildFrom{policy: d.policy, policySource: d.policySource,
		problem: "the running image is not read (the function's middleware lives in its own source), so the commit it was built from is not known"}
}

// revisionLabel is what an image's revision label says of the source it was built from.
type revisionLabel struct {
	// commit is the commit id, lower-case, as abbreviated as the label has it; empty
	// when the label is absent or names no commit (a tag, a branch, free text).
	commit string
	// dirty is true for func's "-dirty" suffix: the source had uncommitted changes.
	dirty bool
}

// parseRevision reads an image's org.opencontainers.image.revision label.
func parseRevision(label string) revisionLabel {
	s := strings.ToLower(strings.TrimSpace(label))
	dirty := false
	if base, ok := strings.CutSuffix(s, "-dirty"); ok {
		s, dirty = base, true
	}
	// func abbreviates to 7 digits: a shorter label is not taken for a commit.
	if len(s) < 7 || !git.IsCommitPrefix(s) {
		return revisionLabel{}
	}
	return revisionLabel{commit: s, dirty: dirty}
}

// decideRebuildFrom decides which commit a rebuild of fn builds, from the policy
// that applies, the running image's revision label and the followed commit.
// resolved is the commit a previous reconcile looked the label up to (the status's
// rebuildFrom.commit), kept while it still matches.
func decideRebuildFrom(fn *v1alpha1.Function, cfg config.Config, label, followed string) rebuildFrom {
	policy, policySource := fn.Settings().RebuildFrom(cfg.RebuildCommit)
	d := rebuildFrom{policy: policy, policySource: policySource}
	if policy == v1alpha1.RebuildCommitFollowed {
		d.commit, d.source = followed, v1alpha1.RebuildFromFollowed
		d.why = fmt.Sprintf("the rebuild-commit policy is %s (set by %s)", policy, policySourceText(policySource))
		return d
	}
	rev := parseRevision(label)
	switch {
	case rev.commit == "" && policy == v1alpha1.RebuildCommitDeployedOnly:
		d.problem = fmt.Sprintf("the running image names no commit it was built from (%s), and the rebuild-commit policy is %s (set by %s)",
			noCommitText(label), policy, policySourceText(policySource))
	case rev.commit == "":
		d.commit, d.source = followed, v1alpha1.RebuildFromFollowed
		d.why = fmt.Sprintf("the running image names no commit it was built from (%s)", noCommitText(label))
	case rev.dirty:
		d.problem = fmt.Sprintf("the running image was built from uncommitted changes on commit %s (label %s=%q): no commit holds what runs",
			rev.commit, registry.LabelRevision, label)
	default:
		d.commit, d.source = rev.commit, v1alpha1.RebuildFromDeployed
		anchor := ""
		if fn.Status.Deployment != nil {
			anchor = fn.Status.Deployment.FollowedAtDeploy
		}
		switch mw := fn.Status.Middleware; {
		case rev.commit == followed || (strings.HasPrefix(followed, rev.commit) && anchor == followed):
			// The followed commit, in full, or abbreviated while the reference has
			// not moved since the deploy: never a commit pushed since that merely
			// begins with the same digits.
			d.commit = followed
		case mw != nil && mw.RebuildFrom != nil && mw.RebuildFrom.Source == v1alpha1.RebuildFromDeployed &&
			len(mw.RebuildFrom.Commit) > len(rev.commit) && strings.HasPrefix(mw.RebuildFrom.Commit, rev.commit):
			d.commit = mw.RebuildFrom.Commit // looked up by an earlier rebuild (buildSource)
		}
	}
	return d
}

func noCommitText(label string) string {
	if strings.TrimSpace(label) == "" {
		return "no " + registry.LabelRevision + " label: func writes one from v0.49"
	}
	return fmt.Sprintf("its label %s=%q is not a commit id", registry.LabelRevision, label)
}

func policySourceText(source string) string {
	if source == v1alpha1.AutoUpdateSourceAnnotation {
		return "annotation " + v1alpha1.AnnotationRebuildCommit
	}
	return fmt.Sprintf("ConfigMap %s, key %s", config.ConfigMapName, config.KeyRebuildCommit)
}

// status is d as status.middleware.rebuildFrom shows it.
func (d rebuildFrom) status() *v1alpha1.RebuildFromStatus {
	return &v1alpha1.RebuildFromStatus{Commit: d.commit, Source: d.source, Policy: d.policy, PolicySource: d.policySource}
}

// text says which commit a rebuild builds, for MiddlewareUpToDate's messages.
func (d rebuildFrom) text() string {
	switch {
	case d.problem != "":
		return "no commit can be rebuilt: " + d.problem
	case d.source == v1alpha1.RebuildFromDeployed:
		return fmt.Sprintf("a rebuild builds commit %s, the one the running image was built from", v1alpha1.ShortCommit(d.commit))
	default:
		return fmt.Sprintf("a rebuild builds commit %s, the followed reference's: %s", v1alpha1.ShortCommit(d.commit), d.why)
	}
}

// remedy says how to have the followed commit built instead, for a rebuild that
// cannot build the deployed one.
func (d rebuildFrom) remedy(followed string) string {
	return fmt.Sprintf("set annotation %s: %s to rebuild the followed reference's commit %s instead (with what was pushed since the deploy), or deploy the function again with func",
		v1alpha1.AnnotationRebuildCommit, v1alpha1.RebuildCommitFollowed, v1alpha1.ShortCommit(followed))
}

package build

import (
	"cmp"
	"fmt"
	"time"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/reconciler/function/step"
	"github.com/fnops/func-operator/pkg/rerror"
)

// Cause is why a rebuild is due: what of the running function is outdated, what it
// runs and what a rebuild brings. The plan decides it (dueCause), the machine
// records it in status.build.cause, and the status and Events word it.
type Cause struct {
	// Kind is a v1alpha1.BuildCause*.
	Kind string
	// Running is the middleware the function runs ("" when unknown); Brings what a
	// rebuild brings (Middleware, Source), Request the annotation's value (Request).
	Running, Brings, Request string
	// Commit is the followed commit a Source build builds; Deployed the one it replaces.
	Commit, Deployed string
	// Base is the base verdict of a Base cause.
	Base *Base
}

// outdatedMiddleware is the cause of a function whose middleware is older than what func
// builds.
func outdatedMiddleware(running, available string) *Cause {
	return &Cause{Kind: v1alpha1.BuildCauseMiddleware, Running: running, Brings: available}
}

// requested is the cause of a rebuild asked for by annotation
// functions.dev/rebuild-requested-at (value request, as the status shows it).
func requested(request, running string) *Cause {
	return &Cause{Kind: v1alpha1.BuildCauseRequest, Running: running, Brings: running, Request: request}
}

// newCommit is the cause of a build of followed, a commit that changes the function
// against deployed, the commit it runs, while the source policy is on: it brings the
// middleware func builds now, too.
func newCommit(followed, deployed, running, available string) *Cause {
	return &Cause{Kind: v1alpha1.BuildCauseSource, Running: running, Brings: available, Commit: followed, Deployed: deployed}
}

// String says why a rebuild is due: "<brings> is available (running: <running>)", or
// "a rebuild was requested (...)", or "commit <c> changes the function (...)".
func (c *Cause) String() string {
	if c.Kind == v1alpha1.BuildCauseSource {
		return fmt.Sprintf("commit %s changes the function (running: commit %s) and annotation %s or ConfigMap key deployOnCommit says to deploy it",
			v1alpha1.ShortCommit(c.Commit), v1alpha1.ShortCommit(c.Deployed), v1alpha1.AnnotationDeployOnCommit)
	}
	if c.Kind == v1alpha1.BuildCauseBase {
		return c.Base.String()
	}
	if c.Kind == v1alpha1.BuildCauseRequest {
		return fmt.Sprintf("a rebuild was requested (annotation %s: %q; running: %s)",
			v1alpha1.AnnotationRebuildRequestedAt, c.Request, cmp.Or(c.Running, "unknown"))
	}
	return fmt.Sprintf("%s is available (running: %s)", c.Brings, cmp.Or(c.Running, "unknown"))
}

// blocked is the stalling error of a rebuild that cannot start, with reason:
// "<cause> but <why>", why formatted with args; mark records it on the status
// (step.MarkedBy), so the condition says what the error says.
func (c *Cause) blocked(mark step.MarkFunc, reason, why string, args ...any) *rerror.Stalling {
	return step.MarkedBy(mark, rerror.NewStalling(reason, "%s but "+why, append([]any{c}, args...)...))
}

// dueCause is why a rebuild of the observed function is due; nil when none is. A new
// cause of rebuilds is a new case here. An outdated middleware comes first: its
// rebuild answers a request too (handled when it starts). A requested build that
// failed (its launch lost to a restart included) is retried, after its backoff, as a
// middleware rebuild is while the middleware is outdated, until a build succeeds.
//
// A new commit (the source policy) comes before an outdated middleware, whose rebuild
// a build of it brings too, but for a commit whose build failed: then the deployed
// commit's middleware rebuild goes first, so that a commit that does not build never
// keeps the running function on old middleware. A source build waits out
// minSourceBuildInterval after the last (onCommitWaits).
func dueCause(fn *v1alpha1.Function, obs Observed, now time.Time) *Cause {
	mw, b, oc := obs.Middleware, fn.Status.Build, obs.OnCommit
	// The last build, of this very directory, failed: a push elsewhere in the
	// repository is no new chance for it.
	failedHere := b != nil && b.Phase == v1alpha1.BuildPhaseFailed && b.Cause == v1alpha1.BuildCauseSource && oc.Tried
	switch {
	case fn.Status.ManagementDisabled():
		return nil
	case oc.Enabled && oc.Changed && !now.Before(oc.NotBefore) && (!failedHere || !mw.Due):
		return newCommit(obs.Head.Commit, oc.Deployed, mw.Current, mw.Available)
	case mw.Due:
		return outdatedMiddleware(mw.Current, mw.Available)
	case obs.Base.Due:
		// After a middleware rebuild, which builds on the current base too.
		return baseMoved(obs.Base, mw.Current)
	case fn.PendingRebuildRequest() != "":
		return requested(fn.PendingRebuildRequest(), mw.Current)
	case b != nil && b.Phase == v1alpha1.BuildPhaseFailed && b.Cause == v1alpha1.BuildCauseRequest:
		return requested(fn.Status.LastHandledRebuildRequest, mw.Current)
	}
	return nil
}

// skipsBackoff reports whether a build for c starts without waiting out the backoff
// of b, the failed build before it: only a new commit whose directory was never built
// (tried: it was) does, as its source is a new chance, whatever failed before; the
// pace of those is minSourceBuildInterval's. Every other cause waits, whichever cause
// failed: a failure shared by every build (a registry down) never alternates causes
// past the backoff.
func skipsBackoff(b *v1alpha1.BuildStatus, c *Cause, tried bool) bool {
	return b != nil && c.Kind == v1alpha1.BuildCauseSource && !tried
}

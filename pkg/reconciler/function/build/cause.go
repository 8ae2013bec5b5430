package build

import (
	"cmp"
	"fmt"

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
	// rebuild brings (Middleware), Request the annotation's value (Request).
	Running, Brings, Request string
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

// String says why a rebuild is due: "<brings> is available (running: <running>)", or
// "a rebuild was requested (...)".
func (c *Cause) String() string {
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
func dueCause(fn *v1alpha1.Function, obs Observed) *Cause {
	mw, b := obs.Middleware, fn.Status.Build
	switch {
	case mw.Due:
		return outdatedMiddleware(mw.Current, mw.Available)
	case fn.PendingRebuildRequest() != "":
		return requested(fn.PendingRebuildRequest(), mw.Current)
	case b != nil && b.Phase == v1alpha1.BuildPhaseFailed && b.Cause == v1alpha1.BuildCauseRequest:
		return requested(fn.Status.LastHandledRebuildRequest, mw.Current)
	}
	return nil
}

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
	// Running is what the function runs ("" when unknown); Brings what a rebuild brings.
	Running, Brings string
}

// outdatedMiddleware is the cause of a function whose middleware is older than what func
// builds.
func outdatedMiddleware(running, available string) *Cause {
	return &Cause{Kind: v1alpha1.BuildCauseMiddleware, Running: running, Brings: available}
}

// String says what a rebuild brings: "<brings> is available (running: <running>)".
func (c *Cause) String() string {
	return fmt.Sprintf("%s is available (running: %s)", c.Brings, cmp.Or(c.Running, "unknown"))
}

// blocked is the stalling error of a rebuild that cannot start, with reason:
// "<cause> but <why>", why formatted with args; mark records it on the status
// (step.MarkedBy), so the condition says what the error says.
func (c *Cause) blocked(mark step.MarkFunc, reason, why string, args ...any) *rerror.Stalling {
	return step.MarkedBy(mark, rerror.NewStalling(reason, "%s but "+why, append([]any{c}, args...)...))
}

// dueCause is why a rebuild of the observed function is due; nil when none is. A new
// cause of rebuilds is a new case here.
func dueCause(obs Observed) *Cause {
	if mw := obs.Middleware; mw.Due {
		return outdatedMiddleware(mw.Current, mw.Available)
	}
	return nil
}

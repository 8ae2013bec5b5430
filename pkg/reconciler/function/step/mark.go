package step

import "github.com/fnops/func-operator/pkg/rerror"

// MarkFunc is a status helper that sets a condition from a reason and a message
// (MarkMiddlewareUnknown, MarkNotBound, ...).
type MarkFunc func(reason, format string, a ...any)

// MarkedBy marks a condition with err's reason and text, and returns err: a failure's
// condition message, its Stalled message and its error are one value (as Flux
// builds both from one error), never two texts that drift apart.
func MarkedBy[E interface {
	*rerror.Stalling | *rerror.Waiting | *rerror.Transient
	error
}](mark MarkFunc, err E) E {
	mark(rerror.Reason(err), "%s", err)
	return err
}

// WithReason adapts a status helper whose reason is fixed (MarkRebuildNotPossible)
// to MarkedBy: the error's reason must be that one.
func WithReason(mark func(format string, a ...any)) MarkFunc {
	return func(_, format string, a ...any) { mark(format, a...) }
}

package function

import "github.com/fnops/func-operator/pkg/rerror"

// markFunc is a status helper that sets a condition from a reason and a message
// (MarkMiddlewareUnknown, MarkNotBound, ...).
type markFunc func(reason, format string, a ...any)

// markedBy marks a condition with err's reason and text, and returns err: a failure's
// condition message, its Stalled message and its error are one value (as Flux
// builds both from one error), never two texts that drift apart.
func markedBy[E interface {
	*rerror.Stalling | *rerror.Waiting | *rerror.Transient
	error
}](mark markFunc, err E) E {
	mark(rerror.Reason(err), "%s", err)
	return err
}

// withReason adapts a status helper whose reason is fixed (MarkRebuildNotPossible)
// to markedBy: the error's reason must be that one.
func withReason(mark func(format string, a ...any)) markFunc {
	return func(_, format string, a ...any) { mark(format, a...) }
}

package step

import "time"

// Result is what a step asks of the end of its reconcile, besides its error.
type Result struct {
	// RequeueAfter, when not zero, brings the Function back sooner than its check interval.
	RequeueAfter time.Duration
	// AfterPatch, when set, runs once the status is written (patched true) or failed to be.
	AfterPatch func(patched bool)
}

// RequeueAfter returns a Result that brings the Function back within d.
func RequeueAfter(d time.Duration) Result {
	if d <= 0 {
		d = time.Millisecond
	}
	return Result{RequeueAfter: d}
}

// Merge combines the Results of two steps: the sooner requeue, and both callbacks, in order.
func (r Result) Merge(o Result) Result {
	if o.RequeueAfter > 0 && (r.RequeueAfter == 0 || o.RequeueAfter < r.RequeueAfter) {
		r.RequeueAfter = o.RequeueAfter
	}
	switch first, second := r.AfterPatch, o.AfterPatch; {
	case first == nil:
		r.AfterPatch = second
	case second != nil:
		r.AfterPatch = func(patched bool) { first(patched); second(patched) }
	}
	return r
}

package function

import (
	"context"
	"time"
)

// reconcileState is what the steps of one reconcile leave for its end.
type reconcileState struct {
	// requeueAfter, when not zero, brings the Function back sooner than the check interval.
	requeueAfter time.Duration
	// after run once the status is written (patched true) or failed to be (false).
	after []func(patched bool)
}

type stateKey struct{}

func withState(ctx context.Context) (context.Context, *reconcileState) {
	st := &reconcileState{}
	return context.WithValue(ctx, stateKey{}, st), st
}

// stateFrom returns the reconcile's state; a throw-away one outside a reconcile.
func stateFrom(ctx context.Context) *reconcileState {
	if st, ok := ctx.Value(stateKey{}).(*reconcileState); ok {
		return st
	}
	return &reconcileState{}
}

// afterPatch runs fn once the status is written, or failed to be.
func (s *reconcileState) afterPatch(fn func(patched bool)) { s.after = append(s.after, fn) }

// requeueWithin brings the Function back within d.
func (r *Reconciler) requeueWithin(ctx context.Context, d time.Duration) {
	st := stateFrom(ctx)
	if d <= 0 {
		d = time.Millisecond
	}
	if st.requeueAfter == 0 || d < st.requeueAfter {
		st.requeueAfter = d
	}
}

package function

import (
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// retryLimiter is the controller's rate limiter: controller-runtime's default
// (per-Function exponential backoff from 5 ms, and a 10/s bucket for the whole
// queue), with the backoff capped at ceiling(). The default's cap, 1000 s, let a
// Function whose first read of its repository timed out on a loaded machine wait 16
// minutes and more for its next try, long after the host answered again; a transient
// failure is retried at least as often as an outage is rechecked (retryCeiling).
type retryLimiter struct {
	workqueue.TypedRateLimiter[reconcile.Request]
	ceiling func() time.Duration
}

// newRetryLimiter returns the default limiter, its backoff capped at ceiling().
func newRetryLimiter(ceiling func() time.Duration) workqueue.TypedRateLimiter[reconcile.Request] {
	return retryLimiter{TypedRateLimiter: workqueue.DefaultTypedControllerRateLimiter[reconcile.Request](), ceiling: ceiling}
}

// When returns how long item waits before its next try: the default's backoff, at
// most the ceiling. The default still counts the failures (Forget resets them).
func (l retryLimiter) When(item reconcile.Request) time.Duration {
	return min(l.TypedRateLimiter.When(item), l.ceiling())
}

// retryCeiling is the longest a transient failure waits for its retry: the outage
// recheck (a minute), or the check interval when shorter (ConfigMap key
// checkInterval), so a Function is never looked at less often failing than healthy.
func retryCeiling(checkInterval time.Duration) time.Duration {
	return min(outageRecheck, checkFloor(checkInterval))
}

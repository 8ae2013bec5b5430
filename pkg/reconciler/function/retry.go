package function

import (
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// retryLimiter is the controller's rate limiter: controller-runtime's default, a
// Function's exponential backoff (from 5 ms, doubling) and a bucket for the whole queue
// (10 a second, bursts of 100), with the backoff capped at ceiling(). The default's cap,
// 1000 s, let a Function whose first read of its repository timed out on a loaded
// machine wait 16 minutes and more for its next try, long after the host answered
// again; a transient failure is retried at least as often as an outage is rechecked
// (retryCeiling). The bucket is not capped: it is what holds back a whole fleet failing
// at once.
type retryLimiter struct {
	backoff, bucket workqueue.TypedRateLimiter[reconcile.Request]
	ceiling         func() time.Duration
}

// newRetryLimiter returns the default limiter's two parts, the backoff capped at
// ceiling().
func newRetryLimiter(ceiling func() time.Duration) workqueue.TypedRateLimiter[reconcile.Request] {
	return &retryLimiter{
		// The values of workqueue.DefaultTypedControllerRateLimiter.
		backoff: workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](5*time.Millisecond, 1000*time.Second),
		bucket:  &workqueue.TypedBucketRateLimiter[reconcile.Request]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
		ceiling: ceiling,
	}
}

// When returns how long item waits before its next try: its backoff, at most the
// ceiling, or longer when the whole queue's bucket says so.
func (l *retryLimiter) When(item reconcile.Request) time.Duration {
	return max(min(l.backoff.When(item), l.ceiling()), l.bucket.When(item))
}

// Forget starts item's backoff over (it succeeded).
func (l *retryLimiter) Forget(item reconcile.Request) {
	l.backoff.Forget(item)
	l.bucket.Forget(item)
}

// NumRequeues returns how many times item failed in a row.
func (l *retryLimiter) NumRequeues(item reconcile.Request) int { return l.backoff.NumRequeues(item) }

// retryCeiling is the longest a transient failure waits for its retry: the outage
// recheck (a minute), or the check interval when shorter (ConfigMap key
// checkInterval), so a Function is never looked at less often failing than healthy.
func retryCeiling(checkInterval time.Duration) time.Duration {
	return min(outageRecheck, checkFloor(checkInterval))
}

package function

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestRetryLimiter_When: a Function that keeps failing (a first read of its
// repository timing out on a loaded machine) is retried with the default's backoff,
// but never waits longer than the ceiling; a success (Forget) starts it over. The
// positive control is the default alone, which by then waits longer than the ceiling.
func TestRetryLimiter_When(t *testing.T) {
	const ceiling = 9 * time.Second
	fn := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "fn"}}
	other := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "other"}}
	l := newRetryLimiter(func() time.Duration { return ceiling })
	def := workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]()

	var got, want time.Duration
	for i := 1; i <= 30; i++ {
		got, want = l.When(fn), def.When(fn)
		if got > ceiling {
			t.Fatalf("failure %d: waits %s, want at most %s", i, got, ceiling)
		}
		if i == 1 && got != want {
			t.Errorf("first failure: waits %s, want the default's %s", got, want)
		}
	}
	if want <= ceiling {
		t.Fatalf("the default alone waits %s after 30 failures, not more than the ceiling %s: the test proves nothing", want, ceiling)
	}
	if got != ceiling {
		t.Errorf("after 30 failures: waits %s, want the ceiling %s", got, ceiling)
	}
	if n := l.NumRequeues(fn); n != 30 {
		t.Errorf("NumRequeues = %d, want 30 (the default still counts)", n)
	}
	if d := l.When(other); d > 10*time.Millisecond {
		t.Errorf("another Function's first failure waits %s, want the default's few milliseconds", d)
	}
	l.Forget(fn)
	if d := l.When(fn); d > 10*time.Millisecond {
		t.Errorf("after a success, a failure waits %s, want the default's few milliseconds", d)
	}
}

// TestRetryLimiter_Bucket: the whole queue's bucket (10 a second, bursts of 100) is
// not capped: 200 Functions failing at once, the last waits its turn in the bucket,
// longer than the ceiling, as with the default alone (the positive control).
func TestRetryLimiter_Bucket(t *testing.T) {
	const ceiling = 5 * time.Second
	l := newRetryLimiter(func() time.Duration { return ceiling })
	def := workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]()
	var got, want time.Duration
	for i := range 200 {
		fn := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("fn-%d", i)}}
		got, want = l.When(fn), def.When(fn)
	}
	if want <= ceiling {
		t.Fatalf("the default alone makes the 200th Function wait %s, not more than %s: the test proves nothing", want, ceiling)
	}
	if got <= ceiling {
		t.Errorf("the 200th Function of a burst waits %s, want the bucket's wait (the default's: %s), over the ceiling %s", got, want, ceiling)
	}
}

// TestRetryCeiling: a failing Function is looked at again at least as often as a
// healthy one, and at least once a minute (an outage's recheck).
func TestRetryCeiling(t *testing.T) {
	for _, tt := range []struct {
		interval, want time.Duration
	}{
		{interval: 10 * time.Second, want: 9 * time.Second},
		{interval: 5 * time.Minute, want: outageRecheck},
		{interval: time.Hour, want: outageRecheck},
	} {
		if got := retryCeiling(tt.interval); got != tt.want {
			t.Errorf("retryCeiling(%s) = %s, want %s", tt.interval, got, tt.want)
		}
	}
}

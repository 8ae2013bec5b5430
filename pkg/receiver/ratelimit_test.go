package receiver

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestLimiter(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	l := newLimiter(2, 2, 3)
	got := make([]time.Duration, 0, 5)
	for range 3 {
		got = append(got, l.take("a", now))
	}
	got = append(got, l.take("a", now.Add(250*time.Millisecond)), l.take("a", now.Add(500*time.Millisecond)))
	want := []time.Duration{0, 0, 500 * time.Millisecond, 250 * time.Millisecond, 0}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
	// A clock that goes back takes nothing away.
	if w := l.take("a", now); w == 0 {
		t.Errorf("empty bucket gave a token with the clock back")
	}
}

// TestLimiterBounded: the buckets never exceed max; full ones go first, and an
// emptied one is kept while there is room.
func TestLimiterBounded(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	l := newLimiter(1, 1, 3)
	l.take("busy", now)
	for i := range 100 {
		l.take(fmt.Sprint(i), now.Add(time.Duration(i)*time.Second))
		if n := l.len(); n > 3 {
			t.Fatalf("%d buckets, max 3", n)
		}
	}
	l = newLimiter(1, 1, 3)
	l.take("busy", now)
	l.take("x", now.Add(time.Second)) // busy is full again by now
	l.take("y", now.Add(time.Second))
	l.take("z", now.Add(time.Second)) // sweeps busy
	if w := l.take("z", now.Add(time.Second)); w == 0 {
		t.Errorf("z kept no bucket")
	}
	// All empty at once: one goes, whichever.
	l = newLimiter(1, 1, 3)
	for _, k := range []string{"a", "b", "c", "d"} {
		l.take(k, now)
	}
	if n := l.len(); n != 3 {
		t.Errorf("%d buckets, want 3", n)
	}
}

package rebuild

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// base is the reference instant of the tests: at(i) is i seconds later.
var base = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func at(i int) time.Time { return base.Add(time.Duration(i) * time.Second) }

func key(ns, name string) Key { return Key{Namespace: ns, Name: name} }

// wakes records the calls to a Queue's wake callback.
type wakes struct {
	mu   sync.Mutex
	keys []Key
}

func (w *wakes) wake(k Key) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.keys = append(w.keys, k)
}

// take returns the recorded wakes, never nil, and forgets them.
func (w *wakes) take() []Key {
	w.mu.Lock()
	defer w.mu.Unlock()
	got := append([]Key{}, w.keys...)
	w.keys = nil
	return got
}

// fixture is a Queue whose limit reads a variable and whose wakes are recorded.
type fixture struct {
	limit, perNS int
	wakes        wakes
	q            *Queue
}

// newFixture returns a fixture whose Queue is not seeded yet.
func newFixture(limit int) *fixture {
	f := &fixture{limit: limit}
	f.q = NewQueue(func() int { return f.limit }, f.wakes.wake).WithNamespaceLimit(func() int { return f.perNS })
	return f
}

// seededFixture returns a fixture whose Queue was seeded with nothing, as by an owner
// that has no builds to recover.
func seededFixture(limit int) *fixture {
	f := newFixture(limit)
	f.q.Seed(nil, nil)
	return f
}

// admitResult is what Admit returns.
type admitResult struct {
	Admitted         bool
	Position, Length int
}

func (f *fixture) admit(k Key, queuedAt time.Time) admitResult {
	a, p, l := f.q.Admit(k, queuedAt)
	return admitResult{Admitted: a, Position: p, Length: l}
}

// A step is one call on a fixture, with what it must return and wake.
type step struct {
	name string
	do   func(f *fixture) any // returns what the call returned, nil when nothing
	want any                  // compared to do's result when not nil
	// wakes are the Keys the call must wake, in order; nil for none.
	wakes []Key
}

func admitStep(k Key, queuedAt int, admitted bool, position, length int) step {
	return step{
		name: fmt.Sprintf("Admit(%s, at(%d))", k, queuedAt),
		do:   func(f *fixture) any { return f.admit(k, at(queuedAt)) },
		want: admitResult{Admitted: admitted, Position: position, Length: length},
	}
}

func runningStep(k Key) step {
	return step{name: fmt.Sprintf("Running(%s)", k), do: func(f *fixture) any { f.q.Running(k); return nil }}
}

func releaseStep(k Key, wakes ...Key) step {
	return step{name: fmt.Sprintf("Release(%s)", k), do: func(f *fixture) any { f.q.Release(k); return nil }, wakes: wakes}
}

func forgetStep(k Key, wakes ...Key) step {
	return step{name: fmt.Sprintf("Forget(%s)", k), do: func(f *fixture) any { f.q.Forget(k); return nil }, wakes: wakes}
}

// seedStep calls Seed with copies of running and waiting, as a caller builds fresh
// values, and expects it to wake wakes.
func seedStep(running []Key, waiting map[Key]time.Time, wakes ...Key) step {
	return step{
		name: fmt.Sprintf("Seed(%v, %v)", running, waiting),
		do: func(f *fixture) any {
			w := make(map[Key]time.Time, len(waiting))
			for k, t := range waiting {
				w[k] = t
			}
			f.q.Seed(append([]Key(nil), running...), w)
			return nil
		},
		wakes: wakes,
	}
}

func seededStep(want bool) step {
	return step{name: "Seeded()", do: func(f *fixture) any { return f.q.isSeeded() }, want: want}
}

func kickStep(wakes ...Key) step {
	return step{name: "Kick()", do: func(f *fixture) any { f.q.Kick(); return nil }, wakes: wakes}
}

func limitStep(n int) step {
	return step{name: fmt.Sprintf("limit=%d", n), do: func(f *fixture) any { f.limit = n; return nil }}
}

type lenResult struct{ Running, Waiting int }

func lenStep(running, waiting int) step {
	return step{
		name: "Len()",
		do: func(f *fixture) any {
			r, w := f.q.Len()
			return lenResult{Running: r, Waiting: w}
		},
		want: lenResult{Running: running, Waiting: waiting},
	}
}

func isRunningStep(k Key, want bool) step {
	return step{name: fmt.Sprintf("IsRunning(%s)", k), do: func(f *fixture) any { return f.q.IsRunning(k) }, want: want}
}

func isWaitingStep(k Key, want bool) step {
	return step{name: fmt.Sprintf("IsWaiting(%s)", k), do: func(f *fixture) any { return f.q.IsWaiting(k) }, want: want}
}

// run plays steps on f, checking each result and the wakes each step causes.
func (f *fixture) run(t *testing.T, steps []step) {
	t.Helper()
	f.wakes.take()
	for i, s := range steps {
		got := s.do(f)
		if s.want != nil {
			if diff := cmp.Diff(s.want, got); diff != "" {
				t.Errorf("step %d %s: result mismatch (-want +got):\n%s", i, s.name, diff)
			}
		}
		want := s.wakes
		if want == nil {
			want = []Key{}
		}
		if diff := cmp.Diff(want, f.wakes.take()); diff != "" {
			t.Errorf("step %d %s: wakes mismatch (-want +got):\n%s", i, s.name, diff)
		}
	}
}

type scenario struct {
	name  string
	limit int
	// perNS is the namespace limit (0: none).
	perNS int
	// unseeded leaves the Queue unseeded before the steps, which seed it with a
	// seedStep; otherwise it is seeded with nothing.
	unseeded bool
	steps    []step
}

func runScenarios(t *testing.T, scenarios []scenario) {
	t.Helper()
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			f := newFixture(sc.limit)
			f.perNS = sc.perNS
			if !sc.unseeded {
				f.q.Seed(nil, nil)
			}
			f.run(t, sc.steps)
		})
	}
}

var (
	a1, a2, a3, a4, a5 = key("a", "f1"), key("a", "f2"), key("a", "f3"), key("a", "f4"), key("a", "f5")
	b1, b2             = key("b", "f1"), key("b", "f2")
	c1                 = key("c", "f1")
)

func TestQueue_AdmitUnderLimit(t *testing.T) {
	runScenarios(t, []scenario{{
		name:  "first two admitted, then positions 1 and 2",
		limit: 2,
		steps: []step{
			admitStep(a1, 1, true, 0, 0),
			admitStep(a2, 2, true, 0, 0),
			admitStep(a3, 3, false, 1, 1),
			admitStep(a4, 4, false, 2, 2),
			lenStep(2, 2),
			isRunningStep(a1, true),
			isRunningStep(a2, true),
			isRunningStep(a3, false),
		},
	}, {
		name:  "admitted key admitted again",
		limit: 2,
		steps: []step{
			admitStep(a1, 1, true, 0, 0),
			admitStep(a2, 2, true, 0, 0),
			admitStep(a3, 3, false, 1, 1),
			admitStep(a1, 1, true, 0, 1),
			admitStep(a1, 9, true, 0, 1),
			lenStep(2, 1),
		},
	}, {
		name:  "release wakes exactly the next key, which is then admitted",
		limit: 2,
		steps: []step{
			admitStep(a1, 1, true, 0, 0),
			admitStep(a2, 2, true, 0, 0),
			admitStep(a3, 3, false, 1, 1),
			admitStep(a4, 4, false, 2, 2),
			releaseStep(a1, a3),
			lenStep(1, 2),
			admitStep(a3, 3, true, 0, 1),
			lenStep(2, 1),
			isRunningStep(a1, false),
			isRunningStep(a3, true),
		},
	}, {
		name:  "non-first waiting key not admitted while the first holds the free slot",
		limit: 2,
		steps: []step{
			admitStep(a1, 1, true, 0, 0),
			admitStep(a2, 2, true, 0, 0),
			admitStep(a3, 3, false, 1, 1),
			admitStep(a4, 4, false, 2, 2),
			releaseStep(a1, a3),
			admitStep(a4, 4, false, 2, 2),
			admitStep(a3, 3, true, 0, 1),
			admitStep(a4, 4, false, 1, 1),
			releaseStep(a2, a4),
			admitStep(a4, 4, true, 0, 0),
			lenStep(2, 0),
		},
	}, {
		name:  "two releases before the woken key admits wake it twice and the next",
		limit: 2,
		steps: []step{
			admitStep(a1, 1, true, 0, 0),
			admitStep(a2, 2, true, 0, 0),
			admitStep(a3, 3, false, 1, 1),
			admitStep(a4, 4, false, 2, 2),
			admitStep(a5, 5, false, 3, 3),
			releaseStep(a1, a3),
			releaseStep(a2, a3, a4),
			admitStep(a4, 4, true, 0, 2),
			admitStep(a3, 3, true, 0, 1),
			admitStep(a5, 5, false, 1, 1),
		},
	}, {
		name:  "release of a key that holds no slot wakes nothing when full",
		limit: 1,
		steps: []step{
			admitStep(a1, 1, true, 0, 0),
			admitStep(a2, 2, false, 1, 1),
			releaseStep(b1),
			lenStep(1, 1),
		},
	}, {
		name:  "release with an empty queue wakes nothing",
		limit: 1,
		steps: []step{
			admitStep(a1, 1, true, 0, 0),
			releaseStep(a1),
			lenStep(0, 0),
			admitStep(a2, 2, true, 0, 0),
		},
	}, {
		name:  "a new key does not jump a woken key of the same rank queued earlier",
		limit: 1,
		steps: []step{
			admitStep(a1, 1, true, 0, 0),
			admitStep(b1, 2, false, 1, 1),
			releaseStep(a1, b1),
			admitStep(c1, 3, false, 2, 2),
			admitStep(b1, 2, true, 0, 1),
		},
	}})
}

func TestQueue_Fairness(t *testing.T) {
	runScenarios(t, []scenario{{
		name:  "one waiting in b goes before five waiting longer in a",
		limit: 2,
		steps: []step{
			admitStep(key("a", "r0"), 0, true, 0, 0),
			admitStep(key("a", "r1"), 0, true, 0, 0),
			admitStep(a1, 1, false, 1, 1),
			admitStep(a2, 2, false, 2, 2),
			admitStep(a3, 3, false, 3, 3),
			admitStep(a4, 4, false, 4, 4),
			admitStep(a5, 5, false, 5, 5),
			admitStep(b1, 10, false, 1, 6),
			releaseStep(key("a", "r1"), b1),
			// 1 runs in a, 1 slot is free: b's goes first.
			admitStep(a1, 1, false, 2, 6),
			admitStep(b1, 10, true, 0, 5),
			lenStep(2, 5),
			releaseStep(b1, a1),
			admitStep(a1, 1, true, 0, 4),
		},
	}, {
		name:  "new namespace takes the free slot over a busier one",
		limit: 3,
		steps: []step{
			admitStep(a1, 1, true, 0, 0),
			admitStep(a2, 2, true, 0, 0),
			admitStep(b1, 3, true, 0, 0),
			admitStep(a3, 4, false, 1, 1),
			admitStep(b2, 5, false, 1, 2), // rank 1 in b, rank 2 for a3
			admitStep(c1, 6, false, 1, 3), // rank 0
			releaseStep(a1, c1),
			admitStep(c1, 6, true, 0, 2),
		},
	}})
}

// TestQueue_NamespaceLimit: a namespace runs at most the namespace limit, whatever
// slots are free, so that namespaces whose builds hang until buildTimeout cannot hold
// every slot; the Keys of other namespaces are admitted past its waiting ones. The
// positive controls: without the limit the same steps fill every slot from one
// namespace, and a freed slot of the namespace admits its next Key.
func TestQueue_NamespaceLimit(t *testing.T) {
	runScenarios(t, []scenario{{
		name:  "two hanging namespaces hold one slot each, a third is admitted",
		limit: 3, perNS: 1,
		steps: []step{
			admitStep(a1, 1, true, 0, 0),
			admitStep(a2, 2, false, 1, 1), // a slot is free, but a runs its one
			admitStep(b1, 3, true, 0, 1),
			admitStep(b2, 4, false, 2, 2),
			admitStep(c1, 5, true, 0, 2),
			lenStep(3, 2),
			// a's build ends: its next is woken, a's slot admits only it.
			releaseStep(a1, a2),
			admitStep(b2, 4, false, 2, 2), // still over b's limit: a2 is ahead (rank 0)
			admitStep(a2, 2, true, 0, 1),
			releaseStep(c1), // b2 is over b's limit: nobody is woken
			isWaitingStep(b2, true),
			{name: "NamespaceFull(b)", do: func(f *fixture) any { full, n, l := f.q.NamespaceFull("b"); return []any{full, n, l} }, want: []any{true, 1, 1}},
			{name: "NamespaceFull(c)", do: func(f *fixture) any { full, n, l := f.q.NamespaceFull("c"); return []any{full, n, l} }, want: []any{false, 0, 1}},
		},
	}, {
		name:  "the control: no namespace limit, one namespace fills every slot",
		limit: 3,
		steps: []step{
			admitStep(a1, 1, true, 0, 0),
			admitStep(a2, 2, true, 0, 0),
			admitStep(b1, 3, true, 0, 0),
			admitStep(c1, 5, false, 1, 1),
			{name: "NamespaceFull(a)", do: func(f *fixture) any { full, n, l := f.q.NamespaceFull("a"); return []any{full, n, l} }, want: []any{false, 2, 0}},
		},
	}, {
		name:  "a raised namespace limit admits on Kick",
		limit: 3, perNS: 1,
		steps: []step{
			admitStep(a1, 1, true, 0, 0),
			admitStep(a2, 2, false, 1, 1),
			kickStep(),
			{name: "perNS=2", do: func(f *fixture) any { f.perNS = 2; return nil }},
			kickStep(a2),
			admitStep(a2, 2, true, 0, 0),
		},
	}, {
		name:  "a namespace limit over the limit changes nothing",
		limit: 2, perNS: 5,
		steps: []step{
			admitStep(a1, 1, true, 0, 0),
			admitStep(a2, 2, true, 0, 0),
			admitStep(a3, 3, false, 1, 1),
		},
	}})
}

// queued is a waiting Key and when it was queued.
type queued struct {
	key Key
	at  int
}

// TestQueue_Order checks the admission order: by rank (rebuilds running in the Key's
// namespace plus its index among the namespace's waiting Keys, ordered by queuedAt
// then name), then by queuedAt, then by name. It reads the order twice: from the
// positions Admit reports, and from the Keys Kick wakes once the limit admits all.
func TestQueue_Order(t *testing.T) {
	tests := []struct {
		name    string
		running []Key
		waiting []queued
		want    []Key
	}{{
		name:    "single namespace by queuedAt",
		waiting: []queued{{a3, 3}, {a1, 1}, {a2, 2}},
		want:    []Key{a1, a2, a3},
	}, {
		name:    "same queuedAt by name",
		waiting: []queued{{a3, 1}, {a1, 1}, {a2, 1}},
		want:    []Key{a1, a2, a3},
	}, {
		name:    "namespaces interleave by rank",
		waiting: []queued{{a1, 1}, {a2, 2}, {a3, 3}, {b1, 4}, {b2, 5}},
		want:    []Key{a1, b1, a2, b2, a3},
	}, {
		name:    "running count raises the rank of its namespace",
		running: []Key{key("a", "r")},
		waiting: []queued{{a1, 1}, {a2, 2}, {a3, 3}, {a4, 4}, {a5, 5}, {b1, 10}},
		want:    []Key{b1, a1, a2, a3, a4, a5},
	}, {
		name:    "equal ranks across namespaces by queuedAt then name",
		waiting: []queued{{key("e", "z"), 3}, {key("d", "a"), 3}, {key("f", "a"), 2}},
		want:    []Key{key("f", "a"), key("d", "a"), key("e", "z")},
	}, {
		name:    "mixed",
		running: []Key{key("a", "r1"), key("a", "r2"), key("b", "r1")},
		waiting: []queued{
			{key("a", "x"), 1}, // rank 2
			{key("a", "y"), 2}, // rank 3
			{key("b", "x"), 5}, // rank 2: b/y is ahead of it in b
			{key("b", "y"), 0}, // rank 1
			{key("c", "x"), 9}, // rank 0
			{key("c", "y"), 9}, // rank 1: c/x is ahead by name
			{key("d", "a"), 3}, // rank 0
		},
		want: []Key{
			key("d", "a"), key("c", "x"), // rank 0
			key("b", "y"), key("c", "y"), // rank 1
			key("a", "x"), key("b", "x"), // rank 2
			key("a", "y"), // rank 3
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := seededFixture(0)
			for _, k := range tt.running {
				f.q.Running(k)
			}
			queuedAt := map[Key]time.Time{}
			for _, w := range tt.waiting {
				queuedAt[w.key] = at(w.at)
				if r := f.admit(w.key, at(w.at)); r.Admitted {
					t.Fatalf("Admit(%s) admitted with limit 0", w.key)
				}
			}
			byPosition := map[int]Key{}
			for _, w := range tt.waiting {
				r := f.admit(w.key, at(w.at))
				if r.Admitted || r.Length != len(tt.waiting) {
					t.Errorf("Admit(%s) again = %+v, want waiting among %d", w.key, r, len(tt.waiting))
				}
				if prev, ok := byPosition[r.Position]; ok {
					t.Errorf("%s and %s both at position %d", prev, w.key, r.Position)
				}
				byPosition[r.Position] = w.key
			}
			var got []Key
			for p := 1; p <= len(tt.waiting); p++ {
				got = append(got, byPosition[p])
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("order by position mismatch (-want +got):\n%s", diff)
			}

			f.limit = len(tt.running) + len(tt.waiting)
			f.q.Kick()
			if diff := cmp.Diff(tt.want, f.wakes.take()); diff != "" {
				t.Errorf("order of Kick's wakes mismatch (-want +got):\n%s", diff)
			}
			// Each woken Key, admitted in order, is admitted.
			for i, k := range tt.want {
				if r := f.admit(k, queuedAt[k]); !r.Admitted || r.Length != len(tt.want)-i-1 {
					t.Errorf("Admit(%s) after Kick = %+v, want admitted with %d waiting", k, r, len(tt.want)-i-1)
				}
			}
		})
	}
}

func TestQueue_Forget(t *testing.T) {
	runScenarios(t, []scenario{{
		name:  "forget a waiting key removes it from the queue",
		limit: 1,
		steps: []step{
			admitStep(a1, 1, true, 0, 0),
			admitStep(a2, 2, false, 1, 1),
			admitStep(a3, 3, false, 2, 2),
			forgetStep(a2),
			lenStep(1, 1),
			admitStep(a3, 3, false, 1, 1),
			releaseStep(a1, a3),
		},
	}, {
		name:  "forget a running key frees its slot and wakes the next",
		limit: 1,
		steps: []step{
			admitStep(a1, 1, true, 0, 0),
			admitStep(a2, 2, false, 1, 1),
			forgetStep(a1, a2),
			lenStep(0, 1),
			isRunningStep(a1, false),
			admitStep(a2, 2, true, 0, 0),
		},
	}, {
		name:  "forget a running key with an empty queue",
		limit: 1,
		steps: []step{
			admitStep(a1, 1, true, 0, 0),
			forgetStep(a1),
			lenStep(0, 0),
			admitStep(a2, 2, true, 0, 0),
		},
	}, {
		name:  "forget an unknown key is a no-op",
		limit: 1,
		steps: []step{
			admitStep(a1, 1, true, 0, 0),
			admitStep(a2, 2, false, 1, 1),
			forgetStep(b1),
			lenStep(1, 1),
			admitStep(a2, 2, false, 1, 1),
			isRunningStep(a1, true),
		},
	}, {
		name:  "forget on an empty queue is a no-op",
		limit: 1,
		steps: []step{
			forgetStep(b1),
			lenStep(0, 0),
		},
	}, {
		name:  "forget twice",
		limit: 1,
		steps: []step{
			admitStep(a1, 1, true, 0, 0),
			admitStep(a2, 2, false, 1, 1),
			forgetStep(a1, a2),
			forgetStep(a1, a2), // the slot is still free: a2 is woken again
			lenStep(0, 1),
		},
	}, {
		name:  "forgotten key queues again at the back",
		limit: 1,
		steps: []step{
			admitStep(a1, 1, true, 0, 0),
			admitStep(a2, 2, false, 1, 1),
			admitStep(a3, 3, false, 2, 2),
			forgetStep(a2),
			admitStep(a2, 4, false, 2, 2),
		},
	}})
}

func TestQueue_Release(t *testing.T) {
	runScenarios(t, []scenario{{
		name:  "release does not remove a waiting key",
		limit: 1,
		steps: []step{
			admitStep(a1, 1, true, 0, 0),
			admitStep(a2, 2, false, 1, 1),
			admitStep(a3, 3, false, 2, 2),
			releaseStep(a2),
			lenStep(1, 2),
			admitStep(a2, 2, false, 1, 2),
			releaseStep(a1, a2),
			admitStep(a2, 2, true, 0, 1),
		},
	}, {
		name:  "release twice frees one slot",
		limit: 2,
		steps: []step{
			admitStep(a1, 1, true, 0, 0),
			admitStep(a2, 2, true, 0, 0),
			admitStep(a3, 3, false, 1, 1),
			admitStep(a4, 4, false, 2, 2),
			releaseStep(a1, a3),
			releaseStep(a1, a3),
			lenStep(1, 2),
		},
	}, {
		name:  "released key queues again behind those waiting",
		limit: 1,
		steps: []step{
			admitStep(a1, 1, true, 0, 0),
			admitStep(a2, 2, false, 1, 1),
			releaseStep(a1, a2),
			admitStep(a2, 2, true, 0, 0),
			admitStep(a1, 5, false, 1, 1),
			releaseStep(a2, a1),
		},
	}})
}

func TestQueue_RunningAdoptsBeyondLimit(t *testing.T) {
	runScenarios(t, []scenario{{
		name:  "two adopted with limit 1, a third waits",
		limit: 1,
		steps: []step{
			runningStep(a1),
			runningStep(b1),
			lenStep(2, 0),
			isRunningStep(a1, true),
			isRunningStep(b1, true),
			admitStep(c1, 1, false, 1, 1),
			releaseStep(a1), // 1 runs, the limit is 1: nothing to wake
			admitStep(c1, 1, false, 1, 1),
			releaseStep(b1, c1),
			admitStep(c1, 1, true, 0, 0),
		},
	}, {
		name:  "adopting a waiting key takes it out of the queue",
		limit: 1,
		steps: []step{
			admitStep(a1, 1, true, 0, 0),
			admitStep(a2, 2, false, 1, 1),
			admitStep(a3, 3, false, 2, 2),
			runningStep(a2),
			lenStep(2, 1),
			admitStep(a3, 3, false, 1, 1),
			admitStep(a2, 2, true, 0, 1),
		},
	}, {
		name:  "adopting twice holds one slot",
		limit: 2,
		steps: []step{
			runningStep(a1),
			runningStep(a1),
			lenStep(1, 0),
			admitStep(a2, 2, true, 0, 0),
		},
	}, {
		name:  "adopted key counts in its namespace's rank",
		limit: 2,
		steps: []step{
			runningStep(key("a", "r1")),
			runningStep(key("a", "r2")),
			admitStep(a1, 1, false, 1, 1),
			admitStep(b1, 2, false, 1, 2),
			releaseStep(key("a", "r1"), b1), // b1 ranks 0, a1 ranks 1
			releaseStep(key("a", "r2"), a1, b1),
		},
	}})
}

func TestQueue_LimitZero(t *testing.T) {
	runScenarios(t, []scenario{{
		name:  "nothing admitted",
		limit: 0,
		steps: []step{
			admitStep(a1, 1, false, 1, 1),
			admitStep(a2, 2, false, 2, 2),
			admitStep(b1, 3, false, 2, 3),
			admitStep(a1, 1, false, 1, 3),
			kickStep(),
			releaseStep(a1),
			forgetStep(c1),
			lenStep(0, 3),
		},
	}, {
		name:  "negative limit admits nothing",
		limit: -1,
		steps: []step{
			admitStep(a1, 1, false, 1, 1),
			kickStep(),
			lenStep(0, 1),
		},
	}, {
		name:  "lowering the limit to 0 keeps running keys and admits nothing more",
		limit: 2,
		steps: []step{
			admitStep(a1, 1, true, 0, 0),
			limitStep(0),
			admitStep(a2, 2, false, 1, 1),
			releaseStep(a1),
			lenStep(0, 1),
			admitStep(a2, 2, false, 1, 1),
		},
	}})
}

func TestQueue_KickAfterLimitRaise(t *testing.T) {
	waiting := []queued{{a1, 1}, {a2, 2}, {a3, 3}, {b1, 4}}
	order := []Key{a1, b1, a2, a3}
	tests := []struct {
		name    string
		running int // keys of namespace "r" adopted first
		limit   int
		want    []Key
	}{
		{name: "still 0", limit: 0, want: []Key{}},
		{name: "to 1", limit: 1, want: order[:1]},
		{name: "to 2", limit: 2, want: order[:2]},
		{name: "to 4", limit: 4, want: order},
		{name: "beyond the waiting keys", limit: 10, want: order},
		{name: "to 2 with 1 running", running: 1, limit: 2, want: order[:1]},
		{name: "to 3 with 3 running", running: 3, limit: 3, want: []Key{}},
		{name: "to 2 with 3 running", running: 3, limit: 2, want: []Key{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := seededFixture(0)
			for i := 0; i < tt.running; i++ {
				f.q.Running(key("r", fmt.Sprint(i)))
			}
			for _, w := range waiting {
				if r := f.admit(w.key, at(w.at)); r.Admitted {
					t.Fatalf("Admit(%s) admitted with limit 0", w.key)
				}
			}
			f.wakes.take()
			f.limit = tt.limit
			f.q.Kick()
			got := f.wakes.take()
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Kick() wakes mismatch (-want +got):\n%s", diff)
			}
			// The woken keys are admitted; the next is not.
			for _, k := range got {
				if r := f.admit(k, queuedAtOf(waiting, k)); !r.Admitted {
					t.Errorf("Admit(%s) after Kick = %+v, want admitted", k, r)
				}
			}
			if len(got) < len(order) {
				next := order[len(got)]
				if r := f.admit(next, queuedAtOf(waiting, next)); r.Admitted || r.Position != 1 {
					t.Errorf("Admit(%s) after Kick = %+v, want waiting at position 1", next, r)
				}
			}
			r, w := f.q.Len()
			if diff := cmp.Diff(lenResult{tt.running + len(got), len(order) - len(got)}, lenResult{r, w}); diff != "" {
				t.Errorf("Len() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func queuedAtOf(qs []queued, k Key) time.Time {
	for _, q := range qs {
		if q.key == k {
			return at(q.at)
		}
	}
	panic(fmt.Sprintf("%s not queued", k))
}

func TestQueue_ReAdmit(t *testing.T) {
	runScenarios(t, []scenario{{
		name:  "same queuedAt keeps the position",
		limit: 1,
		steps: []step{
			admitStep(a1, 1, true, 0, 0),
			admitStep(a2, 2, false, 1, 1),
			admitStep(a3, 3, false, 2, 2),
			admitStep(a4, 4, false, 3, 3),
			admitStep(a3, 3, false, 2, 3),
			admitStep(a3, 3, false, 2, 3),
			admitStep(a2, 2, false, 1, 3),
			admitStep(a4, 4, false, 3, 3),
		},
	}, {
		name:  "later queuedAt moves the key back",
		limit: 1,
		steps: []step{
			admitStep(a1, 1, true, 0, 0),
			admitStep(a2, 2, false, 1, 1),
			admitStep(a3, 3, false, 2, 2),
			admitStep(a2, 9, false, 2, 2),
			admitStep(a3, 3, false, 1, 2),
		},
	}, {
		name:  "earlier queuedAt moves the key forward",
		limit: 1,
		steps: []step{
			admitStep(a1, 1, true, 0, 0),
			admitStep(a2, 2, false, 1, 1),
			admitStep(a3, 3, false, 2, 2),
			admitStep(a3, 0, false, 1, 2),
			admitStep(a2, 2, false, 2, 2),
		},
	}, {
		name:  "same instant in another location keeps the position",
		limit: 1,
		steps: []step{
			admitStep(a1, 1, true, 0, 0),
			admitStep(a2, 2, false, 1, 1),
			admitStep(a3, 3, false, 2, 2),
			{
				name: "Admit(a/f2, at(2) in UTC+1)",
				do:   func(f *fixture) any { return f.admit(a2, at(2).In(time.FixedZone("UTC+1", 3600))) },
				want: admitResult{Admitted: false, Position: 1, Length: 2},
			},
		},
	}})
}

func TestQueue_NilWake(t *testing.T) {
	q := NewQueue(func() int { return 1 }, nil)
	q.Seed(nil, nil)
	if a, _, _ := q.Admit(a1, at(1)); !a {
		t.Fatalf("Admit(%s) not admitted", a1)
	}
	q.Admit(a2, at(2))
	q.Release(a1) // must not panic
	q.Kick()
	q.Forget(a2)
	r, w := q.Len()
	if diff := cmp.Diff(lenResult{0, 0}, lenResult{r, w}); diff != "" {
		t.Errorf("Len() mismatch (-want +got):\n%s", diff)
	}
}

// TestQueue_SeedThenFirstCall: after Seed, the first call of each kind sees the
// seeded builds, and later calls do not merge them again.
func TestQueue_SeedThenFirstCall(t *testing.T) {
	r1, r2 := key("r", "f1"), key("r", "f2")
	seed := func(wakes ...Key) step { return seedStep([]Key{r1, r2}, map[Key]time.Time{b1: at(1)}, wakes...) }
	tests := []struct {
		name  string
		limit int
		steps []step
	}{{
		name:  "Admit",
		limit: 2,
		steps: []step{seed(), admitStep(a1, 5, false, 2, 2), lenStep(2, 2)},
	}, {
		name:  "Running",
		limit: 2,
		steps: []step{seed(), runningStep(a1), lenStep(3, 1)},
	}, {
		name:  "Release of a seeded running key",
		limit: 2,
		steps: []step{seed(), releaseStep(r1, b1), lenStep(1, 1), isRunningStep(r1, false)},
	}, {
		name:  "Forget of a seeded waiting key",
		limit: 2,
		steps: []step{seed(), forgetStep(b1), lenStep(2, 0), isWaitingStep(b1, false)},
	}, {
		name:  "Forget of an unknown key",
		limit: 3,
		steps: []step{seed(b1), forgetStep(c1, b1), lenStep(2, 1)},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(tt.limit)
			f.run(t, tt.steps)
			// More calls do not merge the seeded builds again: a released or
			// forgotten seeded Key stays out.
			wantR, wantW := f.q.Len()
			f.q.Admit(c1, at(9))
			f.q.Release(c1)
			f.q.Running(c1)
			f.q.Forget(c1)
			f.q.Kick()
			r, w := f.q.Len()
			if diff := cmp.Diff(lenResult{wantR, wantW}, lenResult{r, w}); diff != "" {
				t.Errorf("Len() after more calls mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestQueue_CallsBeforeSeed: until Seed, the Queue admits nothing and wakes nobody,
// but every call still updates the running and waiting Keys.
func TestQueue_CallsBeforeSeed(t *testing.T) {
	runScenarios(t, []scenario{{
		name:     "Admit queues and reports the position",
		limit:    10,
		unseeded: true,
		steps: []step{
			seededStep(false),
			admitStep(a1, 1, false, 1, 1),
			admitStep(a2, 2, false, 2, 2),
			admitStep(b1, 3, false, 2, 3),
			admitStep(a1, 1, false, 1, 3),
			lenStep(0, 3),
			isWaitingStep(a1, true),
			isRunningStep(a1, false),
			seededStep(false),
			seedStep(nil, nil, a1, b1, a2),
			seededStep(true),
			admitStep(a2, 2, true, 0, 2),
			admitStep(a1, 1, true, 0, 1),
			admitStep(b1, 3, true, 0, 0),
			lenStep(3, 0),
		},
	}, {
		name:     "Running holds a slot, Release frees it and wakes nobody",
		limit:    1,
		unseeded: true,
		steps: []step{
			runningStep(a1),
			isRunningStep(a1, true),
			admitStep(a1, 1, true, 0, 0),
			admitStep(b1, 2, false, 1, 1),
			lenStep(1, 1),
			releaseStep(a1),
			lenStep(0, 1),
			isRunningStep(a1, false),
			admitStep(b1, 2, false, 1, 1), // the slot is free, but the Queue is not seeded
			seedStep(nil, nil, b1),
			admitStep(b1, 2, true, 0, 0),
		},
	}, {
		name:     "Forget takes keys out and wakes nobody",
		limit:    1,
		unseeded: true,
		steps: []step{
			runningStep(a1),
			admitStep(a2, 2, false, 1, 1),
			admitStep(a3, 3, false, 2, 2),
			forgetStep(a2),
			forgetStep(a1),
			lenStep(0, 1),
			isWaitingStep(a2, false),
			isRunningStep(a1, false),
			seedStep(nil, nil, a3),
			admitStep(a3, 3, true, 0, 0),
		},
	}, {
		name:     "Kick wakes nobody, even after the limit grew",
		limit:    2,
		unseeded: true,
		steps: []step{
			admitStep(a1, 1, false, 1, 1),
			kickStep(),
			limitStep(5),
			kickStep(),
			seedStep(nil, nil, a1),
			kickStep(a1),
			admitStep(a1, 1, true, 0, 0),
		},
	}})
}

// TestQueue_KickBeforeSeed: a Kick before Seed wakes nobody; Seed then wakes the
// Keys the free slots admit, and so does the next Kick.
func TestQueue_KickBeforeSeed(t *testing.T) {
	f := newFixture(2)
	f.run(t, []step{
		kickStep(),
		seedStep([]Key{key("r", "f1")}, map[Key]time.Time{a1: at(1), b1: at(2)}, a1),
		kickStep(a1),
	})
}

func TestQueue_SeedRunningCountsAgainstLimit(t *testing.T) {
	r1, r2 := key("r", "f1"), key("r", "f2")
	runScenarios(t, []scenario{{
		name:     "seeded running keys fill the limit",
		limit:    2,
		unseeded: true,
		steps: []step{
			seedStep([]Key{r1, r2}, nil),
			admitStep(a1, 1, false, 1, 1),
			lenStep(2, 1),
			isRunningStep(r1, true),
			admitStep(r1, 0, true, 0, 1),
			releaseStep(r1, a1),
			admitStep(a1, 1, true, 0, 0),
		},
	}, {
		name:     "seeded running keys beyond the limit",
		limit:    1,
		unseeded: true,
		steps: []step{
			seedStep([]Key{r1, r2}, nil),
			admitStep(a1, 1, false, 1, 1),
			releaseStep(r1),
			releaseStep(r2, a1),
		},
	}, {
		name:     "seeded running keys count in their namespace's rank",
		limit:    3,
		unseeded: true,
		steps: []step{
			seedStep([]Key{key("a", "r1"), key("a", "r2")}, nil),
			admitStep(a1, 1, true, 0, 0), // 1 slot free
			admitStep(a2, 2, false, 1, 1),
			admitStep(b1, 3, false, 1, 2),
		},
	}, {
		name:     "a key seeded as running and waiting runs",
		limit:    2,
		unseeded: true,
		steps: []step{
			lenStep(0, 0), // not seeded yet
			seedStep([]Key{r1}, map[Key]time.Time{r1: at(0), a1: at(1)}, a1),
			isWaitingStep(r1, false),
			admitStep(a1, 1, true, 0, 0),
			lenStep(2, 0),
			isRunningStep(r1, true),
		},
	}, {
		name:     "duplicate seeded running keys hold one slot",
		limit:    2,
		unseeded: true,
		steps: []step{
			seedStep([]Key{r1, r1}, nil),
			admitStep(a1, 1, true, 0, 0),
			lenStep(2, 0),
		},
	}})
}

func TestQueue_SeedWaitingKeepsOrder(t *testing.T) {
	seeded := map[Key]time.Time{
		key("a", "w3"): at(30),
		key("b", "w1"): at(10),
		key("c", "w2"): at(20),
		key("a", "w4"): at(5), // ahead of a/w3 in a
	}
	runScenarios(t, []scenario{{
		name:     "new keys queue among the seeded ones by rank and queuedAt",
		limit:    0,
		unseeded: true,
		steps: []step{
			seedStep(nil, seeded),
			// rank 0: a/w4 (5), b/w1 (10), d/new (15), c/w2 (20); rank 1: a/w3 (30)
			admitStep(key("d", "new"), 15, false, 3, 5),
			admitStep(key("a", "w4"), 5, false, 1, 5),
			admitStep(key("b", "w1"), 10, false, 2, 5),
			admitStep(key("c", "w2"), 20, false, 4, 5),
			admitStep(key("a", "w3"), 30, false, 5, 5),
			limitStep(2),
			kickStep(key("a", "w4"), key("b", "w1")),
		},
	}, {
		name:     "a key admitted before seeding keeps its own queuedAt",
		limit:    0,
		unseeded: true,
		steps: []step{
			admitStep(a1, 30, false, 1, 1), // not seeded: a1 queued at 30
			seedStep(nil, map[Key]time.Time{a1: at(10), a2: at(20)}),
			admitStep(a3, 25, false, 2, 3), // a2 (20), a3 (25), a1 (30)
			admitStep(a2, 20, false, 1, 3),
			admitStep(a1, 30, false, 3, 3),
		},
	}})
}

// TestQueue_SeedAfterAdmits: Admits before Seed queue the key and admit nothing;
// once seeded, the same Admit sees the seeded builds, however many came before.
func TestQueue_SeedAfterAdmits(t *testing.T) {
	tests := []struct {
		name          string
		before, after int // Admits before and after Seed
		seed          bool
	}{
		{name: "seeded first", before: 0, after: 3, seed: true},
		{name: "one Admit first", before: 1, after: 2, seed: true},
		{name: "two Admits first", before: 2, after: 3, seed: true},
		{name: "never seeded", before: 4, seed: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var steps []step
			for i := 0; i < tt.before; i++ {
				steps = append(steps, admitStep(a1, 5, false, 1, 1))
			}
			if tt.seed {
				steps = append(steps, seedStep([]Key{key("r", "f1")}, map[Key]time.Time{b1: at(1)}))
			}
			for i := 0; i < tt.after; i++ {
				steps = append(steps, admitStep(a1, 5, false, 2, 2)) // b1 (1) is ahead
			}
			if tt.seed {
				steps = append(steps, lenStep(1, 2), seededStep(true))
			} else {
				steps = append(steps, lenStep(0, 1), seededStep(false))
			}
			newFixture(0).run(t, steps)
		})
	}
}

// TestQueue_UnseededDoesNotOverAdmit: before Seed, the Queue does not know the builds
// that already run, so admitting would break the limit once they are known.
func TestQueue_UnseededDoesNotOverAdmit(t *testing.T) {
	r1, r2 := key("r", "f1"), key("r", "f2")
	t.Run("the limit holds once seeded", func(t *testing.T) {
		f := newFixture(2)
		got := f.admit(a1, at(1)) // not seeded
		f.q.Seed([]Key{r1, r2}, nil)
		f.admit(a2, at(2))
		if r, _ := f.q.Len(); r > 2 || got.Admitted {
			t.Errorf("Admit(%s) before Seed = %+v; once seeded %d run, want at most the limit 2", a1, got, r)
		}
	})
	runScenarios(t, []scenario{{
		name:     "nothing admitted or woken until Seed",
		limit:    2,
		unseeded: true,
		steps: []step{
			admitStep(a1, 1, false, 1, 1),
			kickStep(),
			releaseStep(b1),
			admitStep(a1, 1, false, 1, 1),
			lenStep(0, 1),
			seedStep([]Key{r1}, nil, a1), // r1 runs, 1 slot is free
			kickStep(a1),
			admitStep(a1, 1, true, 0, 0),
			lenStep(2, 0),
		},
	}, {
		name:     "the Admit after Seed admits at once",
		limit:    2,
		unseeded: true,
		steps: []step{
			admitStep(a1, 1, false, 1, 1),
			seedStep([]Key{r1}, nil, a1), // r1 runs, 1 slot is free
			admitStep(a1, 1, true, 0, 0),
			admitStep(a2, 2, false, 1, 1),
		},
	}})
}

// TestQueue_SeedRunningKeyQueuedBeforeSeeding: a Key queued before Seed, then seeded
// as running, runs and no longer waits, as Running does.
func TestQueue_SeedRunningKeyQueuedBeforeSeeding(t *testing.T) {
	newFixture(0).run(t, []step{
		admitStep(a1, 1, false, 1, 1), // not seeded: a1 waits
		seedStep([]Key{a1}, nil),      // a1 runs
		admitStep(a2, 2, false, 1, 1),
		lenStep(1, 1),
		isRunningStep(a1, true),
		isWaitingStep(a1, false),
		admitStep(a1, 1, true, 0, 1),
	})
}

// TestQueue_SeedTwice: Seed merges again when called again.
func TestQueue_SeedTwice(t *testing.T) {
	r1 := key("r", "f1")
	running, waiting := []Key{r1}, map[Key]time.Time{b1: at(1), a2: at(2)}
	runScenarios(t, []scenario{{
		name:     "the same data twice changes nothing",
		limit:    3,
		unseeded: true,
		steps: []step{
			admitStep(a1, 5, false, 1, 1),
			// Order: b1 and a2 (rank 0), a1 (rank 1 in a); r1 holds 1 of 3 slots.
			seedStep(running, waiting, b1, a2),
			lenStep(1, 3),
			seedStep(running, waiting, b1, a2), // only wakes, as Kick
			lenStep(1, 3),
			admitStep(a1, 5, false, 3, 3),
			admitStep(b1, 1, true, 0, 2),
			admitStep(a2, 2, true, 0, 1),
			lenStep(3, 1),
			seedStep(running, waiting), // b1 and a2 run: they do not wait again
			lenStep(3, 1),
			isWaitingStep(b1, false),
			isRunningStep(a2, true),
			releaseStep(r1, a1),
			admitStep(a1, 5, true, 0, 0),
		},
	}, {
		name:     "a key released in between is added back",
		limit:    2,
		unseeded: true,
		steps: []step{
			seedStep(running, map[Key]time.Time{a1: at(1)}, a1),
			releaseStep(r1, a1),
			lenStep(0, 1),
			seedStep(running, map[Key]time.Time{a1: at(1)}, a1),
			lenStep(1, 1),
			isRunningStep(r1, true),
		},
	}, {
		name:     "Seed(nil, nil) twice only wakes",
		limit:    1,
		unseeded: true,
		steps: []step{
			admitStep(a1, 1, false, 1, 1),
			seedStep(nil, nil, a1),
			seedStep(nil, nil, a1),
			lenStep(0, 1),
			admitStep(a1, 1, true, 0, 0),
			seedStep(nil, nil),
			lenStep(1, 0),
		},
	}})
}

// TestQueue_SeedWakes checks that Seed wakes exactly the waiting Keys the free slots
// admit, in the admission order: each woken Key is then admitted, and the next is not.
func TestQueue_SeedWakes(t *testing.T) {
	r1, r2 := key("r", "f1"), key("r", "f2")
	tests := []struct {
		name    string
		limit   int
		before  []queued // Admitted before Seed
		running []Key
		waiting []queued
		want    []Key
		next    Key // the Key at position 1 after the woken ones run; zero for none
	}{{
		name:  "nothing to wake",
		limit: 2,
		want:  []Key{},
	}, {
		name:    "free slots wake the first in order",
		limit:   2,
		waiting: []queued{{a1, 1}, {a2, 2}, {b1, 3}},
		want:    []Key{a1, b1},
		next:    a2,
	}, {
		name:    "a limit beyond the waiting keys wakes all in order",
		limit:   10,
		waiting: []queued{{a1, 1}, {a2, 2}, {b1, 3}},
		want:    []Key{a1, b1, a2},
	}, {
		name:    "seeded running keys fill the limit",
		limit:   2,
		running: []Key{r1, r2},
		waiting: []queued{{a1, 1}},
		want:    []Key{},
		next:    a1,
	}, {
		name:    "seeded running keys beyond the limit",
		limit:   1,
		running: []Key{r1, r2},
		waiting: []queued{{a1, 1}},
		want:    []Key{},
		next:    a1,
	}, {
		name:    "duplicate seeded running keys hold one slot",
		limit:   2,
		running: []Key{r1, r1},
		waiting: []queued{{a1, 1}, {b1, 2}},
		want:    []Key{a1},
		next:    b1,
	}, {
		name:    "seeded running keys raise their namespace's rank",
		limit:   3,
		running: []Key{key("a", "r")},
		waiting: []queued{{a1, 1}, {a2, 2}, {b1, 5}},
		want:    []Key{b1, a1},
		next:    a2,
	}, {
		name:    "keys queued before Seed merge with the seeded ones",
		limit:   2,
		before:  []queued{{a3, 0}},
		waiting: []queued{{a1, 1}, {b1, 2}},
		want:    []Key{a3, b1},
		next:    a1,
	}, {
		name:    "a key queued before Seed keeps its queuedAt",
		limit:   1,
		before:  []queued{{a1, 9}},
		waiting: []queued{{a1, 1}, {a2, 2}},
		want:    []Key{a2},
		next:    a1,
	}, {
		name:    "a key queued before Seed and seeded as running runs",
		limit:   2,
		before:  []queued{{a1, 1}, {a2, 2}},
		running: []Key{a1},
		want:    []Key{a2},
	}, {
		name:    "limit 0 wakes nobody",
		limit:   0,
		waiting: []queued{{a1, 1}},
		want:    []Key{},
		next:    a1,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(tt.limit)
			queuedAt := map[Key]time.Time{}
			waiting := map[Key]time.Time{}
			for _, w := range tt.waiting {
				queuedAt[w.key] = at(w.at)
				waiting[w.key] = at(w.at)
			}
			for _, b := range tt.before {
				queuedAt[b.key] = at(b.at) // a Key queued before Seed keeps its queuedAt
				if r := f.admit(b.key, at(b.at)); r.Admitted {
					t.Fatalf("Admit(%s) before Seed = %+v, want waiting", b.key, r)
				}
			}
			if diff := cmp.Diff([]Key{}, f.wakes.take()); diff != "" {
				t.Fatalf("wakes before Seed mismatch (-want +got):\n%s", diff)
			}

			f.q.Seed(tt.running, waiting)
			if diff := cmp.Diff(tt.want, f.wakes.take()); diff != "" {
				t.Errorf("Seed() wakes mismatch (-want +got):\n%s", diff)
			}
			_, w := f.q.Len()
			for i, k := range tt.want {
				if r := f.admit(k, queuedAt[k]); !r.Admitted || r.Length != w-i-1 {
					t.Errorf("Admit(%s) after Seed = %+v, want admitted with %d waiting", k, r, w-i-1)
				}
			}
			if tt.next != (Key{}) {
				if r := f.admit(tt.next, queuedAt[tt.next]); r.Admitted || r.Position != 1 {
					t.Errorf("Admit(%s) after the woken keys = %+v, want waiting at position 1", tt.next, r)
				}
			} else if _, w := f.q.Len(); w != 0 {
				t.Errorf("%d keys wait after the woken keys, want none", w)
			}
		})
	}
}

// TestQueue_WakeWithoutLock: wake may call the Queue, so it must run without the
// Queue's lock held; a call that held it would deadlock.
func TestQueue_WakeWithoutLock(t *testing.T) {
	tests := []struct {
		name  string
		setUp func(q *Queue, limit *int)
		do    func(q *Queue)
	}{{
		name:  "Seed",
		setUp: func(q *Queue, limit *int) { q.Admit(a1, at(1)) },
		do:    func(q *Queue) { q.Seed([]Key{key("r", "f1")}, map[Key]time.Time{b1: at(2)}) },
	}, {
		name: "Kick",
		setUp: func(q *Queue, limit *int) {
			q.Seed(nil, nil)
			*limit = 0
			q.Admit(a1, at(1))
			*limit = 3
		},
		do: func(q *Queue) { q.Kick() },
	}, {
		name: "Release",
		setUp: func(q *Queue, limit *int) {
			q.Seed(nil, nil)
			*limit = 1
			q.Admit(a1, at(1))
			q.Admit(a2, at(2))
		},
		do: func(q *Queue) { q.Release(a1) },
	}, {
		name: "Forget",
		setUp: func(q *Queue, limit *int) {
			q.Seed(nil, nil)
			*limit = 1
			q.Admit(a1, at(1))
			q.Admit(a2, at(2))
		},
		do: func(q *Queue) { q.Forget(a1) },
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			limit := 3
			var woken []Key
			var q *Queue
			q = NewQueue(func() int { return limit }, func(k Key) {
				if q.IsWaiting(k) { // takes the lock
					woken = append(woken, k)
				}
			})
			tt.setUp(q, &limit)
			done := make(chan struct{})
			go func() {
				defer close(done)
				tt.do(q)
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("%s did not return in 10s: wake called with the lock held", tt.name)
			}
			if len(woken) == 0 {
				t.Errorf("%s woke nobody, want a waiting key", tt.name)
			}
		})
	}
}

// TestQueue_ConcurrentSeed seeds the Queue while goroutines admit and release, as
// an operator that lists the cluster while its workers already run: nothing is
// admitted before Seed, and once seeded the running builds never exceed the limit.
func TestQueue_ConcurrentSeed(t *testing.T) {
	const (
		workers = 40
		rounds  = 10
	)
	tests := []struct {
		limit, running int
		delay          time.Duration // before Seed
	}{
		{limit: 1, running: 2, delay: 2 * time.Millisecond},
		{limit: 3, running: 1},
		{limit: 3, running: 1, delay: 2 * time.Millisecond},
		{limit: 4, running: 4},
		{limit: 10},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("limit %d running %d delay %s", tt.limit, tt.running, tt.delay), func(t *testing.T) {
			wakeC := map[Key]chan struct{}{} // read-only once the workers start
			keys := make([]Key, workers)
			seedWaiting := map[Key]time.Time{}
			for i := range keys {
				keys[i] = key(fmt.Sprintf("ns%d", i%5), fmt.Sprintf("fn%d", i))
				wakeC[keys[i]] = make(chan struct{}, 1)
				if i%2 == 0 {
					seedWaiting[keys[i]] = base.Add(time.Duration(i) * time.Second) // queued before the restart
				}
			}
			seedRunning := make([]Key, tt.running)
			for i := range seedRunning {
				seedRunning[i] = key(fmt.Sprintf("ns%d", i%3), fmt.Sprintf("adopted%d", i))
			}
			q := NewQueue(func() int { return tt.limit }, func(k Key) {
				select {
				case wakeC[k] <- struct{}{}:
				default:
				}
			})

			var (
				errMu sync.Mutex
				errs  = map[string]bool{}
			)
			report := func(format string, args ...any) {
				errMu.Lock()
				defer errMu.Unlock()
				errs[fmt.Sprintf(format, args...)] = true
			}
			var (
				seedCalled          atomic.Bool
				heldSeeded          atomic.Int64 // seeded running Keys not yet released; never above the real count
				current, admissions atomic.Int64
				wg                  sync.WaitGroup
			)
			heldSeeded.Store(int64(tt.running))
			start := make(chan struct{})
			for _, k := range keys {
				wg.Add(1)
				go func(k Key) {
					defer wg.Done()
					<-start
					for r := 0; r < rounds; r++ {
						queuedAt := time.Now()
						deadline := time.After(30 * time.Second)
						for {
							admitted, pos, length := q.Admit(k, queuedAt)
							if admitted {
								break
							}
							if pos < 1 || pos > length {
								report("Admit(%s) = position %d of %d", k, pos, length)
							}
							select {
							case <-wakeC[k]:
							case <-deadline:
								report("%s not woken in 30s at position %d", k, pos)
								return
							}
						}
						if !seedCalled.Load() {
							report("%s admitted before Seed", k)
						}
						n := current.Add(1)
						admissions.Add(1)
						// Once a worker runs, the seeded Keys beyond the limit are gone.
						if h := heldSeeded.Load(); n+h > int64(tt.limit) {
							report("%d workers and %d seeded keys run at once, limit %d", n, h, tt.limit)
						}
						if running, _ := q.Len(); running > tt.limit {
							report("Len() = %d running with a worker admitted, limit %d", running, tt.limit)
						}
						if r%3 == 0 {
							time.Sleep(10 * time.Microsecond)
						}
						current.Add(-1)
						if r%5 == 4 {
							q.Forget(k)
						} else {
							q.Release(k)
						}
					}
				}(k)
			}

			close(start)
			time.Sleep(tt.delay)
			if q.isSeeded() {
				t.Error("Seeded() = true before Seed")
			}
			seedCalled.Store(true)
			q.Seed(seedRunning, seedWaiting)
			if !q.isSeeded() {
				t.Error("Seeded() = false after Seed")
			}
			q.Seed(seedRunning, nil) // the same running Keys again: changes nothing
			for _, k := range seedRunning {
				time.Sleep(time.Millisecond)
				heldSeeded.Add(-1) // before Release, so it never counts a freed slot
				q.Release(k)
			}
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
		seeding:
			for {
				select {
				case <-done:
					break seeding
				case <-time.After(100 * time.Microsecond):
					q.Seed(nil, nil) // concurrent with the workers' Admits and Releases
				}
			}

			for e := range errs {
				t.Error(e)
			}
			if got := admissions.Load(); got != workers*rounds {
				t.Errorf("%d admissions, want %d", got, workers*rounds)
			}
			r, w := q.Len()
			if diff := cmp.Diff(lenResult{0, 0}, lenResult{r, w}); diff != "" {
				t.Errorf("Len() at the end mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestQueue_ConcurrentAdmitRelease runs goroutines that each wait for a slot,
// hold it and release it, checking the running builds never exceed the limit.
func TestQueue_ConcurrentAdmitRelease(t *testing.T) {
	const (
		workers = 50
		rounds  = 20
	)
	for _, limit := range []int{1, 3, 10} {
		t.Run(fmt.Sprintf("limit %d", limit), func(t *testing.T) {
			wakeC := map[Key]chan struct{}{} // read-only once the workers start
			keys := make([]Key, workers)
			for i := range keys {
				keys[i] = key(fmt.Sprintf("ns%d", i%7), fmt.Sprintf("fn%d", i))
				wakeC[keys[i]] = make(chan struct{}, 1)
			}
			var wakeCount atomic.Int64
			q := NewQueue(func() int { return limit }, func(k Key) {
				wakeCount.Add(1)
				select {
				case wakeC[k] <- struct{}{}:
				default:
				}
			})
			q.Seed(nil, nil)

			var (
				current, peak, admissions atomic.Int64
				wg                        sync.WaitGroup
			)
			errs := make(chan string, workers*rounds)
			for i := 0; i < workers; i++ {
				wg.Add(1)
				go func(k Key) {
					defer wg.Done()
					for r := 0; r < rounds; r++ {
						queuedAt := time.Now()
						deadline := time.After(30 * time.Second)
						for {
							admitted, pos, length := q.Admit(k, queuedAt)
							if admitted {
								break
							}
							if pos < 1 || pos > length {
								errs <- fmt.Sprintf("Admit(%s) = position %d of %d", k, pos, length)
							}
							select {
							case <-wakeC[k]:
							case <-deadline:
								errs <- fmt.Sprintf("%s not woken in 30s at position %d", k, pos)
								return
							}
						}
						n := current.Add(1)
						admissions.Add(1)
						for {
							p := peak.Load()
							if n <= p || peak.CompareAndSwap(p, n) {
								break
							}
						}
						if n > int64(limit) {
							errs <- fmt.Sprintf("%d run at once, limit %d", n, limit)
						}
						if running, _ := q.Len(); running > limit {
							errs <- fmt.Sprintf("Len() = %d running, limit %d", running, limit)
						}
						if !q.IsRunning(k) {
							errs <- fmt.Sprintf("%s admitted but not running", k)
						}
						if r%3 == 0 {
							time.Sleep(10 * time.Microsecond)
						}
						current.Add(-1)
						if r%5 == 4 {
							q.Forget(k)
						} else {
							q.Release(k)
						}
					}
				}(keys[i])
			}
			wg.Wait()
			close(errs)
			seen := map[string]bool{}
			for e := range errs {
				if !seen[e] {
					seen[e] = true
					t.Error(e)
				}
			}
			if got := admissions.Load(); got != workers*rounds {
				t.Errorf("%d admissions, want %d", got, workers*rounds)
			}
			if p := peak.Load(); p > int64(limit) {
				t.Errorf("peak %d running, limit %d", p, limit)
			}
			r, w := q.Len()
			if diff := cmp.Diff(lenResult{0, 0}, lenResult{r, w}); diff != "" {
				t.Errorf("Len() at the end mismatch (-want +got):\n%s", diff)
			}
			t.Logf("peak %d running, %d wakes", peak.Load(), wakeCount.Load())
		})
	}
}

// TestQueue_ConcurrentLimitChanges raises and lowers the limit while goroutines
// admit and release, and checks the Queue ends empty with everything admitted.
func TestQueue_ConcurrentLimitChanges(t *testing.T) {
	const workers = 30
	var limit atomic.Int64
	limit.Store(0)
	wakeC := make([]chan struct{}, workers)
	index := map[Key]int{}
	for i := range wakeC {
		wakeC[i] = make(chan struct{}, 1)
		index[key(fmt.Sprintf("ns%d", i%4), fmt.Sprint(i))] = i
	}
	q := NewQueue(func() int { return int(limit.Load()) }, func(k Key) {
		select {
		case wakeC[index[k]] <- struct{}{}:
		default:
		}
	})
	q.Seed(nil, nil)
	var wg sync.WaitGroup
	var admissions atomic.Int64
	for k, i := range index {
		wg.Add(1)
		go func(k Key, i int) {
			defer wg.Done()
			for r := 0; r < 10; r++ {
				queuedAt := time.Now()
				for {
					if ok, _, _ := q.Admit(k, queuedAt); ok {
						break
					}
					select {
					case <-wakeC[i]:
					case <-time.After(20 * time.Second):
						t.Errorf("%s not woken in 20s", k)
						return
					}
				}
				admissions.Add(1)
				q.Release(k)
			}
		}(k, i)
	}
	for _, n := range []int64{1, 0, 4, 2, 8} {
		time.Sleep(2 * time.Millisecond)
		limit.Store(n)
		q.Kick()
	}
	wg.Wait()
	if got := admissions.Load(); got != workers*10 {
		t.Errorf("%d admissions, want %d", got, workers*10)
	}
	r, w := q.Len()
	if diff := cmp.Diff(lenResult{0, 0}, lenResult{r, w}); diff != "" {
		t.Errorf("Len() at the end mismatch (-want +got):\n%s", diff)
	}
}

// seeded returns n waiting Keys across namespaces, their queuedAt, and the same as
// the waiting map that Seed takes. The benchmarks fill their Queue through Seed, in
// one step.
// benchNamespaces is how many namespaces the benchmarks spread their Functions over.
const benchNamespaces = 50

func seeded(n int) ([]Key, []time.Time, map[Key]time.Time) {
	const namespaces = benchNamespaces
	keys := make([]Key, n)
	times := make([]time.Time, n)
	waiting := make(map[Key]time.Time, n)
	for i := 0; i < n; i++ {
		keys[i] = key(fmt.Sprintf("ns%02d", i%namespaces), fmt.Sprintf("fn%05d", i))
		times[i] = base.Add(time.Duration(i) * time.Millisecond)
		waiting[keys[i]] = times[i]
	}
	return keys, times, waiting
}

// BenchmarkQueue_Seed merges n waiting Keys into an empty Queue, as after a restart;
// one op is the whole Seed, which holds the lock throughout.
func BenchmarkQueue_Seed(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("waiting=%d", n), func(b *testing.B) {
			_, _, waiting := seeded(n)
			running := []Key{key("ns-run", "fn1"), key("ns-run", "fn2")}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				q := NewQueue(func() int { return 2 }, func(Key) {})
				q.Seed(running, waiting)
				if r, w := q.Len(); r != 2 || w != n {
					b.Fatalf("Len() = %d, %d", r, w)
				}
			}
		})
	}
}

func BenchmarkQueue_AdmitWaiting(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("waiting=%d/queued", n), func(b *testing.B) {
			// One Admit of an already queued Key: its position, one step per namespace.
			keys, times, waiting := seeded(n)
			q := NewQueue(func() int { return 0 }, func(Key) {})
			q.Seed(nil, waiting)
			q.Admit(keys[0], times[0]) // warm the order
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				j := i % n
				if ok, pos, _ := q.Admit(keys[j], times[j]); ok || pos == 0 {
					b.Fatalf("Admit(%s) = %v, %d", keys[j], ok, pos)
				}
			}
		})
		b.Run(fmt.Sprintf("waiting=%d/new", n), func(b *testing.B) {
			// One Admit of a new Key, inserted in its namespace's list; Forget takes
			// it out again (no slot is free).
			_, _, waiting := seeded(n)
			q := NewQueue(func() int { return 0 }, func(Key) {})
			q.Seed(nil, waiting) // outside the timer
			extra := key("ns-extra", "fn")
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if ok, pos, _ := q.Admit(extra, base.Add(time.Duration(i%n)*time.Millisecond)); ok || pos == 0 {
					b.Fatalf("Admit(%s) = %v, %d", extra, ok, pos)
				}
				q.Forget(extra)
			}
		})
	}
}

func BenchmarkQueue_ReleaseWake(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("waiting=%d", n), func(b *testing.B) {
			// One Release of the running Key, which computes the order and wakes the
			// next. Outside the timer, the woken Key is admitted and the released one
			// queues again at the back.
			var woken []Key
			running := key("ns-run", "fn")
			keys, times, waiting := seeded(n)
			q := NewQueue(func() int { return 1 }, func(k Key) { woken = append(woken, k) })
			q.Seed([]Key{running}, waiting) // running holds the one slot: no wake
			queuedAt := map[Key]time.Time{}
			for i, k := range keys {
				queuedAt[k] = times[i]
			}
			next := base.Add(time.Duration(n) * time.Millisecond)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				woken = woken[:0]
				q.Release(running)
				b.StopTimer()
				if len(woken) != 1 {
					b.Fatalf("Release woke %v, want one Key", woken)
				}
				w := woken[0]
				if ok, _, _ := q.Admit(w, queuedAt[w]); !ok {
					b.Fatalf("woken %s not admitted", w)
				}
				delete(queuedAt, w)
				queuedAt[running] = next
				q.Admit(running, next)
				next = next.Add(time.Millisecond)
				running = w
				b.StartTimer()
			}
		})
	}
}

// BenchmarkQueue_FillByAdmit queues n Functions one Admit at a time, as a func bump
// that makes a whole fleet outdated at once does; one op is the whole fill.
func BenchmarkQueue_FillByAdmit(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("functions=%d", n), func(b *testing.B) {
			keys, times, _ := seeded(n)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				q := NewQueue(func() int { return 2 }, func(Key) {})
				q.Seed(nil, nil)
				for j, k := range keys {
					q.Admit(k, times[j])
				}
				if r, w := q.Len(); r != 2 || w != n-2 {
					b.Fatalf("Len() = %d, %d", r, w)
				}
			}
		})
	}
}

func TestQueue_IsWaiting(t *testing.T) {
	q := NewQueue(func() int { return 1 }, nil)
	q.Seed(nil, nil)
	a, b := key("a", "f1"), key("a", "f2")
	q.Admit(a, base)
	q.Admit(b, base.Add(time.Second))
	if q.IsWaiting(a) || !q.IsWaiting(b) || q.IsWaiting(key("a", "none")) {
		t.Errorf("IsWaiting = %v, %v, want false (running), true (queued)", q.IsWaiting(a), q.IsWaiting(b))
	}
	q.Forget(b)
	if q.IsWaiting(b) {
		t.Error("IsWaiting after Forget = true")
	}
}

// TestQueue_SeedSkipsKeysSettledBeforeIt: the seed data is read before Seed, while
// reconciles already release and forget Keys. A Key released or forgotten in between
// is not brought back by Seed (its slot would never be freed), unless it runs again.
func TestQueue_SeedSkipsKeysSettledBeforeIt(t *testing.T) {
	r1, r2, w1, a1 := key("r", "f1"), key("r", "f2"), key("w", "f1"), key("a", "f1")
	runScenarios(t, []scenario{{
		name:     "a running Key released before Seed holds no slot",
		limit:    2,
		unseeded: true,
		steps: []step{
			admitStep(a1, 1, false, 1, 1),    // unseeded: queued
			releaseStep(r1),                  // its build ended after the data was read
			seedStep([]Key{r1, r2}, nil, a1), // r2 runs; r1's slot is free for a1
			admitStep(a1, 1, true, 0, 0),
			lenStep(2, 0), // r2 and a1 run; r1 does not
			isRunningStep(r1, false),
		},
	}, {
		name:     "a waiting Key forgotten before Seed does not wait again",
		limit:    0,
		unseeded: true,
		steps: []step{
			forgetStep(w1),
			seedStep(nil, map[Key]time.Time{w1: at(1)}),
			isWaitingStep(w1, false),
			lenStep(0, 0),
		},
	}, {
		name:     "a Key released, then adopted as running again, keeps its slot",
		limit:    1,
		unseeded: true,
		steps: []step{
			releaseStep(r1),
			runningStep(r1),
			seedStep([]Key{r1}, nil),
			lenStep(1, 0),
			isRunningStep(r1, true),
		},
	}, {
		name:  "after the first Seed, a later one merges again",
		limit: 2,
		steps: []step{
			releaseStep(r1),
			seedStep([]Key{r1}, nil),
			isRunningStep(r1, true),
		},
	}})
}

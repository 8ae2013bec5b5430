package function

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// burst is a flood of wake-ups, as a webhook receiver hammered with pushes or a
// fleet's repositories all changing at once would cause, over few Functions.
const (
	burst        = 100_000
	burstTargets = 100
)

// TestWakeups_Burst: a burst of wake-ups while nothing takes them (the controller is
// not started yet: this replica does not lead) holds no goroutine and no more than a
// record per Function; each Function is reconciled once the controller starts, and
// a wake-up after that reaches its queue at once.
func TestWakeups_Burst(t *testing.T) {
	w := NewWakeups()
	before := runtime.NumGoroutine()
	for i := range burst {
		w.Enqueue(types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("fn-%d", i%burstTargets)})
	}
	if grown := runtime.NumGoroutine() - before; grown > 0 {
		t.Errorf("%d wake-ups of %d Functions left %d goroutines waiting, want none", burst, burstTargets, grown)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	if err := w.source().Start(ctx, q); err != nil {
		t.Fatal(err)
	}
	want := make([]string, 0, burstTargets)
	for i := range burstTargets {
		want = append(want, fmt.Sprintf("ns/fn-%d", i))
	}
	sort.Strings(want)
	if diff := cmp.Diff(want, drain(t, q, burstTargets)); diff != "" {
		t.Errorf("Functions brought back (-want +got):\n%s", diff)
	}

	// Started: a wake-up reaches the queue, and one of a Function that waits there
	// already does not reconcile it twice.
	w.Enqueue(types.NamespacedName{Namespace: "ns", Name: "late"})
	w.Enqueue(types.NamespacedName{Namespace: "ns", Name: "late"})
	w.EnqueueAll(ctx, []types.NamespacedName{{Namespace: "ns", Name: "late"}, {Namespace: "ns", Name: "other"}})
	if diff := cmp.Diff([]string{"ns/late", "ns/other"}, drain(t, q, 2)); diff != "" {
		t.Errorf("Functions brought back after the start (-want +got):\n%s", diff)
	}
	if n := q.Len(); n != 0 {
		t.Errorf("%d more requests in the queue, want none", n)
	}
}

// drain takes n requests off q, waiting for each (the queue hands them over from
// another goroutine in some implementations), and returns them sorted.
func drain(t *testing.T, q workqueue.TypedRateLimitingInterface[reconcile.Request], n int) []string {
	t.Helper()
	var got []string
	deadline := time.Now().Add(30 * time.Second)
	for len(got) < n {
		if q.Len() == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%d requests after 30s, want %d: %v", len(got), n, got)
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		req, _ := q.Get()
		got = append(got, req.String())
		q.Done(req)
		q.Forget(req)
	}
	sort.Strings(got)
	return got
}

// BenchmarkWakeups_Burst measures a burst of wake-ups of burstTargets Functions while
// the controller is not started: its memory (B/op, per burst), and the goroutines it
// leaves waiting.
func BenchmarkWakeups_Burst(b *testing.B) {
	keys := make([]types.NamespacedName, burstTargets)
	for i := range keys {
		keys[i] = types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("fn-%d", i)}
	}
	b.ReportAllocs()
	var waiting int
	for b.Loop() {
		w := NewWakeups()
		before := runtime.NumGoroutine()
		for i := range burst {
			w.Enqueue(keys[i%burstTargets])
		}
		waiting = runtime.NumGoroutine() - before
		b.StopTimer()
		// What the old Wakeups left blocked on its channel: let it go.
		ctx, cancel := context.WithCancel(context.Background())
		q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
		_ = w.source().Start(ctx, q)
		for runtime.NumGoroutine() > before+10 {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
		q.ShutDown()
		b.StartTimer()
	}
	b.ReportMetric(float64(waiting), "goroutines/burst")
}

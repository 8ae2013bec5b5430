package lanes

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// TestLanes_SlowLaneIsPerTenant: one tenant's image that runs into the timeout on
// a shared registry (a multi-GB image, say) puts that tenant's reads of the
// registry in the slow lane, not everyone's. Counted in lanes let in, not timed.
func TestLanes_SlowLaneIsPerTenant(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	l := &Lanes{Workers: 4, SlowFor: 10 * time.Minute, Clock: clk}
	const shared = "registry ghcr.example"

	huge, ok := l.Enter(shared, "a")
	if !ok {
		t.Fatal("tenant a's first read was refused")
	}
	huge(true) // tenant a's huge image ran into registryTimeout

	// Lanes each tenant gets on the shared registry now, none left yet.
	lanes := func(ns string) (n int, leave []func(bool)) {
		for {
			f, ok := l.Enter(shared, ns)
			if !ok || n > 4 {
				return n, leave
			}
			n++
			leave = append(leave, f)
		}
	}
	nb, leaveB := lanes("b")
	for _, f := range leaveB {
		f(false)
	}
	na, leaveA := lanes("a")
	for _, f := range leaveA {
		f(true) // still timing out
	}
	// The attack: b's reads are not slowed by a's image.
	if nb != 2 {
		t.Errorf("tenant b got %d lanes on the registry after tenant a's timeout, want 2 (half the workers)", nb)
	}
	// Positive control: a's own reads are in the slow lane.
	if na != 1 {
		t.Errorf("tenant a got %d lanes on the registry after its timeout, want 1 (the slow lane)", na)
	}
	// b's reads in time do not take a out of its slow lane.
	if n, leave := lanes("a"); n != 1 {
		t.Errorf("tenant a got %d lanes after b's reads in time, want 1", n)
	} else {
		leave[0](false)
	}
}

// TestLanes_LastWorkerForANewNamespace: two namespaces whose reads hang hold half the
// workers each while alone, but between them all but one: the last goes to a
// namespace that reads nothing yet. Counted in lanes let in, not timed. The positive
// controls: a namespace alone still gets half the workers, and the reserved worker
// is refused to a namespace that already reads.
func TestLanes_LastWorkerForANewNamespace(t *testing.T) {
	l := &Lanes{Workers: 4}
	enter := func(host, ns string) (func(bool), bool) { return l.Enter(host, ns) }
	// a, alone, gets half the workers (the control of the cap).
	held := make([]func(bool), 0, 4)
	for i := range 2 {
		leave, ok := enter("registry-"+string(rune('1'+i)), "a")
		if !ok {
			t.Fatalf("namespace a's read %d refused, want half the workers", i+1)
		}
		held = append(held, leave)
	}
	if _, ok := enter("registry-3", "a"); ok {
		t.Fatal("namespace a got a third worker, want half (2)")
	}
	// b gets one: the fourth is kept for a namespace that reads nothing yet.
	leave, ok := enter("registry-3", "b")
	if !ok {
		t.Fatal("namespace b's first read refused")
	}
	held = append(held, leave)
	if _, ok := enter("registry-4", "b"); ok {
		t.Fatal("namespace b got a second worker beside a's two: none left for another namespace")
	}
	// c, reading nothing yet, gets the last one; then no one gets more.
	leave, ok = enter("git-host", "c")
	if !ok {
		t.Fatal("namespace c's first read refused beside a's and b's hanging ones")
	}
	held = append(held, leave)
	for _, ns := range []string{"a", "b", "c"} {
		if _, ok := enter("registry-5", ns); ok {
			t.Errorf("namespace %s got a fifth read", ns)
		}
	}
	for _, leave := range held {
		leave(true)
	}
	// b alone again gets half.
	for i := range 2 {
		if _, ok := enter("registry-6", "b"); !ok {
			t.Fatalf("namespace b alone: read %d refused, want half the workers", i+1)
		}
	}
}

package lanes

import (
	"testing"
	"time"
)

// TestLanes_SlowLaneIsPerTenant: one tenant's image that runs into the timeout on
// a shared registry (a multi-GB image, say) puts that tenant's reads of the
// registry in the slow lane, not everyone's. Counted in lanes let in, not timed.
func TestLanes_SlowLaneIsPerTenant(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	l := &Lanes{Workers: 4, SlowFor: 10 * time.Minute, Now: func() time.Time { return now }}
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

package lanes

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestLanes(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	l := &Lanes{Workers: 4, SlowFor: time.Minute, Clock: clk}
	const slow, other = "git.slow.example:443", "registry other.example"

	// Half the workers per host.
	leave1, ok1 := l.Enter(slow, "a")
	leave2, ok2 := l.Enter(slow, "a")
	if !ok1 || !ok2 {
		t.Fatalf("the first two operations on a host: %v, %v; want both let in", ok1, ok2)
	}
	if _, ok := l.Enter(slow, "a"); ok {
		t.Fatalf("a third operation on the host was let in: 2 of 4 workers is the most")
	}
	leaveOther, ok := l.Enter(other, "b")
	if !ok {
		t.Fatalf("another host waits for the first: it must not")
	}
	leaveOther(false)

	// A timeout puts the host in the slow lane: one at a time.
	leave1(true)
	leave1(true) // a second call is a no-op
	if !l.Slow(slow, "a") {
		t.Fatalf("the host is not slow after a timeout")
	}
	if _, ok := l.Enter(slow, "a"); ok {
		t.Fatalf("a slow host with one operation under way let another in")
	}
	leave2(true)
	leave3, ok := l.Enter(slow, "a")
	if !ok {
		t.Fatalf("the slow lane is free but the host was refused")
	}
	if _, ok := l.Enter(slow, "a"); ok {
		t.Fatalf("the slow lane let two in")
	}

	// An answer in time ends the slow lane.
	leave3(false)
	if l.Slow(slow, "a") {
		t.Fatalf("the host is still slow after it answered in time")
	}
	a, okA := l.Enter(slow, "a")
	b, okB := l.Enter(slow, "a")
	if !okA || !okB {
		t.Fatalf("after the slow lane: %v, %v; want two let in again", okA, okB)
	}
	a(false)
	b(true)

	// The slow lane ends by itself after SlowFor.
	clk.Step(2 * time.Minute)
	if l.Slow(slow, "a") {
		t.Fatalf("the host is slow past SlowFor")
	}

	// One namespace holds at most half the workers, whatever hosts it names.
	n1, _ := l.Enter("h1", "tenant")
	n2, _ := l.Enter("h2", "tenant")
	if _, ok := l.Enter("h3", "tenant"); ok {
		t.Fatalf("a namespace took a third worker through a third host")
	}
	if leave, ok := l.Enter("h3", "other-tenant"); !ok {
		t.Fatalf("another namespace waits for the first: it must not")
	} else {
		leave(false)
	}
	n1(false)
	n2(false)

	// One worker: one lane per host, and nil Lanes bound nothing.
	single := &Lanes{Workers: 1}
	if leave, ok := single.Enter("h", "a"); !ok {
		t.Fatalf("one worker: refused")
	} else if _, ok := single.Enter("h", "a"); ok {
		t.Fatalf("one worker: two lanes")
	} else {
		leave(false)
	}
	var none *Lanes
	if leave, ok := none.Enter("h", "a"); !ok {
		t.Fatalf("nil Lanes refused")
	} else {
		leave(true)
	}
}

func TestHosts(t *testing.T) {
	tests := []struct{ in, git, registry string }{
		{in: "https://GitHub.com/org/repo.git", git: "github.com:443"},
		{in: "http://127.0.0.1:3000/repo.git", git: "127.0.0.1:3000"},
		{in: "git@github.com:org/repo.git", git: "github.com:22"},
		{in: "ssh://git@[::1]:2222/repo.git", git: "[::1]:2222"},
	}
	for _, tt := range tests {
		if got := GitHost(tt.in); got != tt.git {
			t.Errorf("GitHost(%q) = %q, want %q", tt.in, got, tt.git)
		}
	}
	for in, want := range map[string]string{
		"127.0.0.1:5000/ns/fn@sha256:" + "0000000000000000000000000000000000000000000000000000000000000000": "registry 127.0.0.1:5000",
		"ghcr.io/org/fn:latest": "registry ghcr.io",
		"fn":                    "registry index.docker.io",
		"::not an image::":      "",
	} {
		if got := RegistryHost(in); got != want {
			t.Errorf("RegistryHost(%q) = %q, want %q", in, got, want)
		}
	}
}

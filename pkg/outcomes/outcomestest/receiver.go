// Package outcomestest runs a real CloudEvents receiver (github.com/cloudevents/sdk-go)
// on 127.0.0.1 for the tests of the outcomes the operator sends.
//
// It must not import the Function reconciler; only tests import it.
package outcomestest

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
)

// Receiver is sdk-go's HTTP receiver on a loopback port; it keeps what it receives.
type Receiver struct {
	// URL is where to send: http://127.0.0.1:<port>/.
	URL string

	mu     sync.Mutex
	events []cloudevents.Event
	got    chan struct{}
}

// Start starts a Receiver, stopped when t ends.
func Start(t testing.TB) *Receiver {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p, err := cehttp.New(cehttp.WithListener(l))
	if err != nil {
		t.Fatal(err)
	}
	c, err := cloudevents.NewClient(p)
	if err != nil {
		t.Fatal(err)
	}
	r := &Receiver{URL: "http://" + l.Addr().String() + "/", got: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := c.StartReceiver(ctx, func(e cloudevents.Event) {
			r.mu.Lock()
			r.events = append(r.events, e)
			r.mu.Unlock()
			select {
			case r.got <- struct{}{}:
			default:
			}
		}); err != nil {
			t.Errorf("the CloudEvents receiver: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

// Events returns what was received, in order.
func (r *Receiver) Events() []cloudevents.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]cloudevents.Event(nil), r.events...)
}

// Wait returns the events once n were received, failing t after timeout.
func (r *Receiver) Wait(t testing.TB, n int, timeout time.Duration) []cloudevents.Event {
	t.Helper()
	deadline := time.After(timeout)
	for {
		if es := r.Events(); len(es) >= n {
			return es
		}
		select {
		case <-r.got:
		case <-deadline:
			t.Fatalf("received %d CloudEvents within %s, want %d: %v", len(r.Events()), timeout, n, r.Events())
		}
	}
}

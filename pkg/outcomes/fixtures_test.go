package outcomes

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/netguard"
)

// loopbackGuard is the network guard of the tests: loopback let through, as
// --host-allow-loopback does.
func loopbackGuard(t *testing.T) *netguard.Guard {
	t.Helper()
	p, err := netguard.NewPolicyWithOwn(nil, netguard.Own{AllowLoopback: true}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return netguard.New(p)
}

// shippedGuard is the guard as the operator ships: loopback refused.
func shippedGuard(t *testing.T) *netguard.Guard {
	t.Helper()
	p, err := netguard.NewPolicyWithOwn(nil, netguard.Own{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return netguard.New(p)
}

// events are settings sending every namespace's outcomes to url.
func events(url string, queue int, timeout time.Duration) func() config.Events {
	return func() config.Events {
		return config.Events{Sink: config.EventSink{URL: url}, QueueSize: queue, Timeout: timeout}
	}
}

// newSender returns a Sender with o, its log into logs when not nil.
func newSender(t *testing.T, o Options, logs *[]string) *Sender {
	t.Helper()
	o.Log = logr.Discard()
	if logs != nil {
		o.Log = funcr.New(func(prefix, args string) { *logs = append(*logs, args) }, funcr.Options{Verbosity: 1})
	}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// run starts s until the test ends, and returns a wait for its stop.
func run(t *testing.T, s *Sender) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Start(ctx) }()
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return stop
}

// hangingSink accepts requests and answers none until the test ends.
func hangingSink(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}), ReadHeaderTimeout: time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { close(release); _ = srv.Close() })
	return "http://" + l.Addr().String() + "/"
}

// outcome is a build-started outcome of Function team-a/fn.
func outcome(build string) Outcome {
	const name = "fn"
	return Outcome{Type: TypeBuildStarted, Time: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), Subject: build,
		Data: Data{Namespace: "team-a", Name: name, UID: types.UID("uid-" + name), BuildID: build, Cause: "Middleware", Commit: "0123456789abcdef0123456789abcdef01234567",
			Image: Change{Before: "registry.example.com/team-a/fn@sha256:aaaa"}, Middleware: Change{Before: "v0.21.3", After: "v0.22.0"}}}
}

package netguard

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/proxy"
)

// listener accepts connections on a loopback port and counts them, so a test
// sees whether anything reached it.
func listener(t *testing.T) (netip.AddrPort, *atomic.Int64) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	var accepted atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			_, _ = c.Write([]byte(strings.Repeat("x", 1000)))
			_ = c.Close()
		}
	}()
	return netip.MustParseAddrPort(l.Addr().String()), &accepted
}

func TestGuard_DialContext(t *testing.T) {
	apiServer, apiAccepted := listener(t)
	gitServer, gitAccepted := listener(t)
	g := New(mustPolicy(t, []netip.AddrPort{apiServer}, nil))

	// Positive control: a host beside the API server, on another port.
	c, err := g.DialContext(context.Background(), "tcp", gitServer.String())
	if err != nil {
		t.Fatalf("dialing the git server: %v", err)
	}
	_ = c.Close()

	// The API server, by address and by a name that resolves to it.
	for _, addr := range []string{apiServer.String(), net.JoinHostPort("localhost", itoa(apiServer.Port()))} {
		// tcp4: "localhost" may resolve to ::1 first, which nothing listens on.
		_, err := g.DialContext(context.Background(), "tcp4", addr)
		var d *DeniedError
		if !errors.As(err, &d) {
			t.Fatalf("dialing %s: got %v, want a refusal", addr, err)
		}
		if !strings.Contains(d.Error(), "the Kubernetes API server") {
			t.Errorf("refusal %q does not say why", d)
		}
	}
	waitAccepted(t, gitAccepted, 1)
	if n := apiAccepted.Load(); n != 0 {
		t.Errorf("the API server accepted %d connections, want none: nothing may be sent to a refused address", n)
	}
	if dials, denials := g.Counts(); dials != 3 || denials != 2 {
		t.Errorf("Counts() = %d dials, %d denials; want 3, 2", dials, denials)
	}

	// A policy change holds for the next dial.
	g.SetPolicy(mustPolicy(t, nil, []string{gitServer.String()}))
	if _, err := g.DialContext(context.Background(), "tcp", gitServer.String()); !IsDenied(err) {
		t.Errorf("after the git server was denied: got %v, want a refusal", err)
	}
}

func TestGuard_Transport(t *testing.T) {
	big := strings.Repeat("e", 10<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/error" {
			w.WriteHeader(http.StatusBadGateway)
		}
		_, _ = io.WriteString(w, big)
	}))
	t.Cleanup(srv.Close)
	g := New(mustPolicy(t, nil, nil))
	client := &http.Client{Transport: g.Transport(0)}

	get := func(ctx context.Context, path string) (int, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
		res, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		defer func() { _ = res.Body.Close() }()
		b, err := io.ReadAll(res.Body)
		return len(b), err
	}
	if n, err := get(context.Background(), "/error"); n != DefaultMaxErrorBody || err != nil {
		t.Errorf("a 10 MiB error body: read %d bytes, %v; want %d and no error", n, err, DefaultMaxErrorBody)
	}
	var tl *TooLargeError
	if n, err := get(WithReadLimit(context.Background(), 1<<20), "/ok"); !errors.As(err, &tl) || n != 1<<20 {
		t.Errorf("a 10 MiB body over a 1 MiB limit: read %d bytes, %v; want 1 MiB and a TooLargeError", n, err)
	}
	if n, err := get(WithReadLimit(context.Background(), int64(len(big))), "/ok"); n != len(big) || err != nil {
		t.Errorf("a body of exactly the limit: read %d bytes, %v; want all of it", n, err)
	}
	// The same server denied: no request reaches it.
	u, _ := url.Parse(srv.URL)
	g.SetPolicy(mustPolicy(t, nil, []string{u.Host}))
	if _, err := get(context.Background(), "/ok"); !IsDenied(err) {
		t.Errorf("a denied server: got %v, want a refusal", err)
	}
}

func TestGuard_SSHProxyURL(t *testing.T) {
	srv, accepted := listener(t)
	g := New(mustPolicy(t, nil, []string{srv.String()}))
	u, err := url.Parse(g.SSHProxyURL(10, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	d, err := proxy.FromURL(u, proxy.Direct)
	if err != nil {
		t.Fatal(err)
	}
	cd, ok := d.(proxy.ContextDialer)
	if !ok {
		t.Fatalf("the SSH dialer %T is no ContextDialer: go-git would refuse it", d)
	}
	if _, err := cd.DialContext(context.Background(), "tcp", srv.String()); !IsDenied(err) {
		t.Errorf("dialing a denied SSH server: got %v, want a refusal", err)
	}
	if accepted.Load() != 0 {
		t.Errorf("the denied server accepted a connection")
	}
	// Positive control, with the read limit of the URL.
	g.SetPolicy(mustPolicy(t, nil, nil))
	c, err := cd.DialContext(context.Background(), "tcp", srv.String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	if n, err := io.Copy(io.Discard, c); n != 10 || err == nil {
		t.Errorf("read %d bytes, %v; want 10 and a TooLargeError", n, err)
	}
}

func mustPolicy(t *testing.T, api []netip.AddrPort, deny []string) *Policy {
	t.Helper()
	p, err := NewPolicy(api, deny, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func waitAccepted(t *testing.T, n *atomic.Int64, want int64) {
	t.Helper()
	for i := 0; i < 200 && n.Load() < want; i++ {
		<-timeAfter()
	}
	if got := n.Load(); got != want {
		t.Fatalf("accepted %d connections, want %d", got, want)
	}
}

func itoa(p uint16) string { return strconv.Itoa(int(p)) }

func timeAfter() <-chan time.Time { return time.After(10 * time.Millisecond) }

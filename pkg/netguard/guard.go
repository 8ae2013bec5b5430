package netguard

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// Guard dials for the operator's git and registry clients. It checks a host's
// name before resolving it and each resolved address right before the connect
// system call, so a name that resolves (or re-resolves) to a refused address does
// not pass, and nothing is sent to a refused one.
type Guard struct {
	policy atomic.Pointer[Policy]
	// dials and denials count connections attempted and refused, for the tests and
	// metrics.
	dials, denials atomic.Int64

	// proxy is where HTTP requests go (SetProxy); nil: directly.
	proxy atomic.Pointer[proxyState]
	// resolver resolves names for the dialer; nil: the default one.
	resolver *net.Resolver

	mu         sync.Mutex
	transports []*http.Transport // closed to idle connections when the policy changes
	// caTransports keeps the transports of TransportWithCA, by bundle digest,
	// maxCATransports at most (made at the first); mu guards it with transports.
	caTransports *simplelru.LRU[string, *http.Transport]
}

// New returns a Guard enforcing p.
func New(p *Policy) *Guard {
	g := &Guard{}
	g.SetPolicy(p)
	return g
}

// SetPolicy replaces the policy. The idle connections of the Guard's transports
// are closed, so the next request connects, and is checked, again; a request
// under way finishes on its connection.
func (g *Guard) SetPolicy(p *Policy) {
	g.policy.Store(p)
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, t := range g.transports {
		t.CloseIdleConnections()
	}
}

// Policy returns the policy in force.
func (g *Guard) Policy() *Policy { return g.policy.Load() }

// Counts returns how many connections were attempted and how many were refused.
func (g *Guard) Counts() (dials, denials int64) { return g.dials.Load(), g.denials.Load() }

// DialContext connects to address ("host:port") when the policy allows it. The
// proxy a request of the Guard's transports goes through (SetProxy) is let
// through: its target was checked before (see SetProxy).
func (g *Guard) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	g.dials.Add(1)
	if proxyDial(ctx, address) {
		d := net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Resolver: g.resolver}
		return d.DialContext(ctx, network, address)
	}
	p := g.policy.Load()
	host, portText, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("dialing %q: %w", address, err)
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("dialing %q: port %q: %w", address, portText, err)
	}
	if err := p.checkName(host, uint16(port)); err != nil {
		g.denials.Add(1)
		return nil, err
	}
	d := net.Dialer{
		Timeout:   30 * time.Second,
		KeepAlive: 30 * time.Second,
		Resolver:  g.resolver,
		Control: func(_, resolved string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(resolved)
			if err != nil {
				return fmt.Errorf("%s: cannot check resolved address %q: %w", Marker, resolved, err)
			}
			if err := p.checkAddr(host, ap); err != nil {
				g.denials.Add(1)
				return err
			}
			return nil
		},
	}
	return d.DialContext(ctx, network, address)
}

type readLimitKey struct{}

// WithReadLimit caps what each response body read with ctx (see Transport) may
// carry: past n bytes a read fails with a *TooLargeError.
func WithReadLimit(ctx context.Context, n int64) context.Context {
	return WithReadLimitFunc(ctx, func(*http.Request) int64 { return n })
}

// WithReadLimitFunc caps each response body read with ctx at what limit returns
// for its request (0: no cap): a registry's blobs may be large where its
// manifests and token answers may not.
func WithReadLimitFunc(ctx context.Context, limit func(*http.Request) int64) context.Context {
	return context.WithValue(ctx, readLimitKey{}, limit)
}

func readLimit(req *http.Request) int64 {
	if f, ok := req.Context().Value(readLimitKey{}).(func(*http.Request) int64); ok {
		return f(req)
	}
	return 0
}

// TooLargeError is a read past the limit set with WithReadLimit.
type TooLargeError struct{ Limit int64 }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: the server sent more than %d bytes", TooLargeMarker, e.Limit)
}

// TooLargeMarker starts every TooLargeError message.
const TooLargeMarker = "response too large"

// limitReader fails reads past its limit.
type limitReader struct {
	r           io.Reader
	left, limit int64
}

func newLimitReader(r io.Reader, limit int64) *limitReader {
	return &limitReader{r: r, left: limit, limit: limit}
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		// One more byte tells a stream of exactly the limit from a longer one.
		var one [1]byte
		if n, _ := l.r.Read(one[:]); n == 0 {
			return 0, io.EOF
		}
		return 0, &TooLargeError{Limit: l.limit}
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

// limitedConn is a connection whose reads fail past a limit.
type limitedConn struct {
	net.Conn
	r *limitReader
}

func (c *limitedConn) Read(b []byte) (int, error) { return c.r.Read(b) }

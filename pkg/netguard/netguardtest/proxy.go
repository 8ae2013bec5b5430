package netguardtest

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
)

// Proxy is an HTTP CONNECT proxy on 127.0.0.1 that tunnels every CONNECT,
// whatever host it names, to one loopback address, and counts them.
type Proxy struct {
	// URL is the proxy's URL, for HTTPS_PROXY ("http://127.0.0.1:port").
	URL string

	upstream string
	connects atomic.Int64

	mu      sync.Mutex
	targets []string
	conns   []net.Conn
}

// StartConnectProxy serves until the test ends. upstream must be a loopback
// address ("127.0.0.1:port", "[::1]:port"): a test never reaches further.
func StartConnectProxy(t testing.TB, upstream string) *Proxy {
	t.Helper()
	ap, err := netip.ParseAddrPort(upstream)
	if err != nil || !ap.Addr().IsLoopback() {
		t.Fatalf("netguardtest: upstream %q is not a loopback address:port", upstream)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("netguardtest: listening: %v", err)
	}
	p := &Proxy{URL: "http://" + l.Addr().String(), upstream: upstream}
	t.Cleanup(func() {
		_ = l.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range p.conns {
			_ = c.Close()
		}
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			p.track(c)
			go p.serve(c)
		}
	}()
	return p
}

// Connects returns how many CONNECT requests the proxy received.
func (p *Proxy) Connects() int64 { return p.connects.Load() }

// Targets returns the host:port of every CONNECT, in order.
func (p *Proxy) Targets() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.targets...)
}

func (p *Proxy) track(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conns = append(p.conns, c)
}

func (p *Proxy) serve(c net.Conn) {
	defer func() { _ = c.Close() }()
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	if req.Method != http.MethodConnect {
		_, _ = io.WriteString(c, "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
		return
	}
	p.connects.Add(1)
	p.mu.Lock()
	p.targets = append(p.targets, req.Host)
	p.mu.Unlock()
	up, err := net.Dial("tcp", p.upstream)
	if err != nil {
		_, _ = io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
		return
	}
	p.track(up)
	defer func() { _ = up.Close() }()
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, br); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
}

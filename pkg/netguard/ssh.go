package netguard

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"sync"
	"time"

	"golang.org/x/net/proxy"
)

// SSHScheme is the pseudo proxy scheme that routes go-git's SSH dials through a
// Guard: go-git dials SSH itself, and its only hook is a proxy URL, which
// golang.org/x/net/proxy resolves through registered dialer types.
const SSHScheme = "func-operator-guard"

var (
	sshOnce  sync.Once
	sshGuard *Guard
	sshMu    sync.RWMutex
)

// SSHProxyURL registers g as the dialer of go-git's SSH transport and returns the
// proxy URL to set in go-git's ProxyOptions of an SSH operation; readLimit caps
// what the connection may read (0: no cap), and timeout how long it may last (0:
// no bound). go-git's SSH transport dials and shakes hands without the
// operation's context: the deadline is what ends a server that says nothing.
func (g *Guard) SSHProxyURL(readLimit int64, timeout time.Duration) string {
	sshMu.Lock()
	sshGuard = g
	sshMu.Unlock()
	sshOnce.Do(func() {
		proxy.RegisterDialerType(SSHScheme, func(u *url.URL, _ proxy.Dialer) (proxy.Dialer, error) {
			sshMu.RLock()
			g := sshGuard
			sshMu.RUnlock()
			var n int64
			if v := u.Query().Get("max"); v != "" {
				var err error
				if n, err = strconv.ParseInt(v, 10, 64); err != nil {
					return nil, fmt.Errorf("proxy URL %s: max: %w", u.Redacted(), err)
				}
			}
			var d time.Duration
			if v := u.Query().Get("timeout"); v != "" {
				var err error
				if d, err = time.ParseDuration(v); err != nil {
					return nil, fmt.Errorf("proxy URL %s: timeout: %w", u.Redacted(), err)
				}
			}
			return sshDialer{g: g, limit: n, timeout: d}, nil
		})
	})
	return fmt.Sprintf("%s://guard/?max=%d&timeout=%s", SSHScheme, readLimit, timeout)
}

// sshDialer is a proxy.ContextDialer over a Guard.
type sshDialer struct {
	g       *Guard
	limit   int64
	timeout time.Duration
}

func (d sshDialer) Dial(network, address string) (net.Conn, error) {
	return d.DialContext(context.Background(), network, address)
}

// DialContext dials through the Guard; the connection's reads are capped at the
// limit of the proxy URL and it ends at its timeout, the whole SSH session being
// one operation.
func (d sshDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	c, err := d.g.DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	if d.timeout > 0 {
		if err := c.SetDeadline(time.Now().Add(d.timeout)); err != nil {
			_ = c.Close()
			return nil, err
		}
	}
	if d.limit <= 0 {
		return c, nil
	}
	return &limitedConn{Conn: c, r: newLimitReader(c, d.limit)}, nil
}

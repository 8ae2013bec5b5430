package netguard

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http/httpproxy"
)

// ProxyFromEnvironment reads HTTPS_PROXY, HTTP_PROXY and NO_PROXY (and their
// lower-case forms) as http.ProxyFromEnvironment does, for SetProxy. Requests to
// localhost and loopback addresses are never proxied.
func ProxyFromEnvironment() *httpproxy.Config { return httpproxy.FromEnvironment() }

// proxyState is the proxy configuration in force.
type proxyState struct {
	fn func(*url.URL) (*url.URL, error)
}

// SetProxy makes the Guard's HTTP transports send requests through the proxies of
// cfg (nil: none, the default), with NO_PROXY semantics exactly as net/http's. SSH
// is never proxied.
//
// Behind a proxy the operator connects to the proxy only, and the proxy resolves
// and connects to the target. Before a request is handed to the proxy, the policy
// checks its target host by name (built-in and deny rules, and allow rules by
// name), and by address when the host is an address literal; a name is also
// resolved by the operator, and refused when any address it resolves to is refused
// by the built-in or deny rules (a name pointing at cloud metadata does not pass).
// A name the operator cannot resolve is left to the proxy, which may resolve what
// the pod cannot. The proxy's own resolver may still answer otherwise (split
// horizon, DNS rebinding between the two lookups), and allow ranges cannot apply
// to a name the proxy resolves: the proxy must enforce its own egress rules (cloud
// metadata, the cluster's internal ranges). The proxy itself, as configured, is
// always allowed. A request NO_PROXY exempts is dialed directly and checked as
// always.
func (g *Guard) SetProxy(cfg *httpproxy.Config) {
	var st *proxyState
	if cfg != nil && (cfg.HTTPProxy != "" || cfg.HTTPSProxy != "") {
		st = &proxyState{fn: cfg.ProxyFunc()}
	}
	g.proxy.Store(st)
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, t := range g.transports {
		t.CloseIdleConnections()
	}
}

// viaProxy marks a request's context with the proxy the Guard chose for it; the
// Guard's dialer lets the connection to that proxy through.
type viaProxy struct {
	url  *url.URL
	addr string // host:port, as net/http dials it
}

type viaProxyKey struct{}

// proxyOf is the Proxy function of the Guard's *http.Transport: the proxy route
// chose for the request.
func proxyOf(req *http.Request) (*url.URL, error) {
	if v, ok := req.Context().Value(viaProxyKey{}).(*viaProxy); ok {
		return v.url, nil
	}
	return nil, nil
}

// proxyDial reports whether address is the proxy the request of ctx goes through.
func proxyDial(ctx context.Context, address string) bool {
	v, ok := ctx.Value(viaProxyKey{}).(*viaProxy)
	return ok && strings.EqualFold(v.addr, address)
}

// route decides whether req goes through a proxy. When it does, the request's
// target must pass the policy first: nothing is sent, to the proxy or anywhere,
// for a refused one.
func (g *Guard) route(req *http.Request) (*http.Request, error) {
	st := g.proxy.Load()
	if st == nil {
		return req, nil
	}
	proxyURL, err := st.fn(req.URL)
	if err != nil {
		return nil, fmt.Errorf("choosing a proxy for %s: %w", req.URL.Redacted(), err)
	}
	if proxyURL == nil {
		return req, nil // NO_PROXY, or loopback: dialed, and checked, directly
	}
	host := req.URL.Hostname()
	port, err := targetPort(req.URL)
	if err != nil {
		return nil, err
	}
	p := g.policy.Load()
	err = p.checkTarget(host, port)
	if err == nil {
		err = g.checkResolved(req.Context(), p, host, port)
	}
	if err != nil {
		g.dials.Add(1) // refused before any connection, counted as one
		g.denials.Add(1)
		return nil, err
	}
	v := &viaProxy{url: proxyURL, addr: proxyAddr(proxyURL)}
	return req.WithContext(context.WithValue(req.Context(), viaProxyKey{}, v)), nil
}

// resolveTimeout bounds the operator's own lookup of a name it hands to a proxy.
const resolveTimeout = 5 * time.Second

// checkResolved resolves host, a name about to be handed to the proxy, and refuses
// it when an address it resolves to is refused by the built-in or deny rules. An
// address literal was checked as such; a name that does not resolve here is left
// to the proxy.
func (g *Guard) checkResolved(ctx context.Context, p *Policy, host string, port uint16) error {
	if p == nil {
		return nil
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return nil
	}
	if _, ok := legacyIPv4(host); ok {
		return nil
	}
	r := g.resolver
	if r == nil {
		r = net.DefaultResolver
	}
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil // the proxy resolves what the pod cannot
	}
	for _, a := range addrs {
		if err := p.checkDenied(host, netip.AddrPortFrom(a, port)); err != nil {
			return err
		}
	}
	return nil
}

func targetPort(u *url.URL) (uint16, error) {
	p := u.Port()
	if p == "" {
		p = schemePort(u.Scheme)
	}
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return 0, fmt.Errorf("the port of %s: %w", u.Redacted(), err)
	}
	return uint16(n), nil
}

// proxyAddr is the address net/http dials for a proxy URL.
func proxyAddr(u *url.URL) string {
	p := u.Port()
	if p == "" {
		p = schemePort(u.Scheme)
	}
	return net.JoinHostPort(u.Hostname(), p)
}

func schemePort(scheme string) string {
	switch strings.ToLower(scheme) {
	case "http":
		return "80"
	case "https":
		return "443"
	case "socks5", "socks5h":
		return "1080"
	}
	return ""
}

// checkTarget refuses host:port that a proxy would connect to for the operator:
// the proxy resolves names, so a name is checked by name only (built-in and deny
// rules, then the allow rules' names), and an address literal by address. A name
// that resolvers read as an IPv4 address ("2852039166", "0xa9.254.169.254",
// "169.254.43518") is checked as that address.
func (p *Policy) checkTarget(host string, port uint16) error {
	if p == nil {
		return nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return p.checkAddr(host, netip.AddrPortFrom(a, port))
	}
	if a, ok := legacyIPv4(host); ok {
		return p.checkAddr(host, netip.AddrPortFrom(a, port))
	}
	if err := p.checkName(host, port); err != nil {
		return err
	}
	if len(p.allow) == 0 {
		return nil
	}
	for _, r := range p.allow {
		if r.matchesName(host, port) {
			return nil
		}
	}
	return &DeniedError{Host: host, Rule: ""}
}

// legacyIPv4 parses host as inet_aton does, which many resolvers (and so proxies)
// use: one to four parts, each decimal, octal (leading 0) or hexadecimal (0x), the
// last filling the remaining bytes.
func legacyIPv4(host string) (netip.Addr, bool) {
	host = strings.TrimSuffix(host, ".")
	parts := strings.Split(host, ".")
	if len(parts) == 0 || len(parts) > 4 {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for i, s := range parts {
		base, digits := 10, s
		switch {
		case len(s) > 1 && (s[:2] == "0x" || s[:2] == "0X"):
			base, digits = 16, s[2:]
			if digits == "" {
				digits = "0"
			}
		case len(s) > 1 && s[0] == '0':
			base, digits = 8, s[1:]
		}
		if digits == "" {
			return netip.Addr{}, false
		}
		v, err := strconv.ParseUint(digits, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	var n uint64
	last := len(vals) - 1
	for i, v := range vals[:last] {
		if v > 0xff {
			return netip.Addr{}, false
		}
		n |= v << (24 - 8*i)
	}
	if vals[last] >= 1<<(8*(4-last)) {
		return netip.Addr{}, false
	}
	n |= vals[last]
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}

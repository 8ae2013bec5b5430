package netguard

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// rule matches a host name (exact, or "*.suffix" for any name under suffix), or an
// address range, optionally on one port only (0: any port).
type rule struct {
	name   string       // lower case; "*.example.com" matches below example.com
	prefix netip.Prefix // valid when the rule is an address range
	port   uint16
	text   string // as written, or why it is built in
}

func (r rule) matchesName(host string, port uint16) bool {
	if r.name == "" || (r.port != 0 && r.port != port) {
		return false
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if suffix, ok := strings.CutPrefix(r.name, "*."); ok {
		return strings.HasSuffix(host, "."+suffix)
	}
	return host == r.name
}

func (r rule) matchesAddr(a netip.AddrPort) bool {
	if !r.prefix.IsValid() || (r.port != 0 && r.port != a.Port()) {
		return false
	}
	for _, addr := range forms(a.Addr()) {
		if r.prefix.Contains(addr) {
			return true
		}
	}
	return false
}

// forms returns a without its zone and unmapped, and the IPv4 address an IPv6
// address carries, if any: IPv4-mapped and -compatible, NAT64 (64:ff9b::/96) and
// 6to4 (2002::/16) addresses all reach an IPv4 host, which the rules must see.
func forms(a netip.Addr) []netip.Addr {
	a = a.WithZone("").Unmap()
	out := make([]netip.Addr, 1, 2)
	out[0] = a
	if !a.Is6() {
		return out
	}
	b := a.As16()
	var v4 [4]byte
	switch {
	case nat64.Contains(a), ipv4Compatible.Contains(a) && !a.IsUnspecified() && !a.IsLoopback():
		copy(v4[:], b[12:])
	case sixToFour.Contains(a):
		copy(v4[:], b[2:6])
	default:
		return out
	}
	return append(out, netip.AddrFrom4(v4))
}

var (
	nat64          = netip.MustParsePrefix("64:ff9b::/96")
	ipv4Compatible = netip.MustParsePrefix("::/96")
	sixToFour      = netip.MustParsePrefix("2002::/16")
)

// Policy says which hosts and addresses may be connected to. Deny rules, built-in
// and configured, win over allow rules; when there are allow rules, a host must
// match one, by name or by resolved address.
type Policy struct {
	builtin []rule
	deny    []rule
	allow   []rule
}

// Builtin are the ranges refused by default, whatever the configuration says: the
// ones no Function has a reason to reach and an attacker has every reason to.
var Builtin = []string{
	"169.254.0.0/16",     // IPv4 link-local: every cloud's instance metadata (169.254.169.254) and credentials
	"fe80::/10",          // IPv6 link-local
	"fd00:ec2::254/128",  // AWS instance metadata over IPv6
	"100.100.100.200/32", // Alibaba Cloud instance metadata
	"0.0.0.0/32",         // "this host": connecting to it reaches the operator's own loopback services
	"::/128",
	"metadata.google.internal", // GCP metadata by name
}

// Loopback are the addresses of the operator's own pod: its listeners, the func
// library's API proxy, and whatever runs beside it (a sidecar's admin port). Refused
// unless Own.AllowLoopback.
var Loopback = []string{"127.0.0.0/8", "::1/128"}

// Own is what the operator refuses of its own, whatever the configuration says.
type Own struct {
	// Listeners are the operator's own listeners (metrics, probes, push receiver,
	// profiles, the func library's API proxy), each refused on its port, on every
	// address of the operator's host, even with AllowLoopback.
	Listeners []netip.AddrPort
	// AllowLoopback lets Loopback through: for git and registry servers on the
	// operator's own host, which only tests and a developer's machine have.
	AllowLoopback bool
}

// NewPolicy returns the policy made of the built-in ranges, the API server's own
// addresses (host:port, each refused on its port only), and the configured deny
// and allow entries (see ParseEntry). It lets loopback through, as the git and
// registry clients' tests need: the operator's policy is NewPolicyWithOwn's.
func NewPolicy(apiServers []netip.AddrPort, deny, allow []string) (*Policy, error) {
	return NewPolicyWithOwn(apiServers, Own{AllowLoopback: true}, deny, allow)
}

// NewPolicyWithOwn is NewPolicy that also refuses own's listeners and, unless
// own.AllowLoopback, loopback.
func NewPolicyWithOwn(apiServers []netip.AddrPort, own Own, deny, allow []string) (*Policy, error) {
	p := &Policy{}
	for _, ap := range own.Listeners {
		a := ap.Addr().WithZone("").Unmap()
		prefix := netip.PrefixFrom(a, a.BitLen())
		if a.Is4() && a.IsLoopback() {
			// Every address of 127.0.0.0/8 reaches a listener of 127.0.0.1 or of all
			// addresses (Linux routes the whole range to lo).
			prefix = netip.MustParsePrefix("127.0.0.0/8")
		}
		p.builtin = append(p.builtin, rule{prefix: prefix, port: ap.Port(),
			text: "the operator's own listener " + netip.AddrPortFrom(a, ap.Port()).String()})
	}
	// Before the ranges: a refusal names the API server rather than loopback.
	for _, ap := range apiServers {
		a := ap.Addr().Unmap()
		p.builtin = append(p.builtin, rule{prefix: netip.PrefixFrom(a, a.BitLen()), port: ap.Port(),
			text: "the Kubernetes API server " + netip.AddrPortFrom(a, ap.Port()).String()})
	}
	builtin := Builtin
	if !own.AllowLoopback {
		builtin = append(slices.Clip(Builtin), Loopback...)
	}
	for _, e := range builtin {
		r, err := ParseEntry(e)
		if err != nil {
			return nil, fmt.Errorf("built-in entry %q: %w", e, err)
		}
		r.text = "built-in " + e
		p.builtin = append(p.builtin, r)
	}
	var errs []error
	for _, e := range deny {
		r, err := ParseEntry(e)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p.deny = append(p.deny, r)
	}
	for _, e := range allow {
		r, err := ParseEntry(e)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p.allow = append(p.allow, r)
	}
	return p, errors.Join(errs...)
}

// ParseEntry reads one entry of an allow or deny list: a host name
// (git.example.com), any name below a domain (*.example.com), an address
// (10.1.2.3, ::1), a range (10.0.0.0/8, fd00::/8), or an address with a port
// (10.1.2.3:6443, [::1]:6443).
func ParseEntry(s string) (rule, error) {
	s = strings.TrimSpace(s)
	r := rule{text: s}
	switch {
	case s == "":
		return r, errors.New("empty entry")
	case strings.Contains(s, "/"):
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return r, fmt.Errorf("%q is not an address range such as 10.0.0.0/8", s)
		}
		r.prefix = p.Masked()
		if a := p.Addr(); a.Is4In6() {
			r.prefix = netip.PrefixFrom(a.Unmap(), p.Bits()-96).Masked()
		}
		return r, nil
	}
	if a, err := netip.ParseAddr(s); err == nil {
		a = a.WithZone("").Unmap()
		r.prefix = netip.PrefixFrom(a, a.BitLen())
		return r, nil
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		a := ap.Addr().WithZone("").Unmap()
		r.prefix, r.port = netip.PrefixFrom(a, a.BitLen()), ap.Port()
		return r, nil
	}
	name := strings.TrimSuffix(strings.ToLower(s), ".")
	bare := strings.TrimPrefix(name, "*.")
	if strings.ContainsAny(bare, ":*[] ") || bare == "" {
		return r, fmt.Errorf("%q is neither a host name, *.domain, an address, an address:port nor a range", s)
	}
	r.name = name
	return r, nil
}

// DeniedError is a connection the policy refused; nothing was sent.
type DeniedError struct {
	Host string // as the Function names it
	Addr string // the resolved address, when the refusal is by address
	Rule string // the rule that refused it, or "" when no allow rule matched
}

func (e *DeniedError) Error() string {
	target := e.Host
	if e.Addr != "" && e.Addr != e.Host {
		target = fmt.Sprintf("%s (%s)", e.Host, e.Addr)
	}
	if e.Rule == "" {
		return fmt.Sprintf("%s: %s is not in the operator's allowed hosts", Marker, target)
	}
	return fmt.Sprintf("%s: %s is refused by the operator's network policy (%s)", Marker, target, e.Rule)
}

// Marker starts every DeniedError message, so that a refusal can be told even from
// a library that kept only the text of the error.
const Marker = "host not allowed"

// DeniedText is the refusal itself, whatever a library wrapped around it (some
// keep only the text of an error), cut as ServerText.
func DeniedText(err error) string {
	var d *DeniedError
	if errors.As(err, &d) {
		return d.Error()
	}
	s := err.Error()
	if i := strings.Index(s, Marker+": "); i >= 0 {
		s = s[i:]
	}
	return ServerText(s)
}

// IsDenied is true when err is, wraps, or quotes a refusal by the policy.
func IsDenied(err error) bool {
	var d *DeniedError
	return err != nil && (errors.As(err, &d) || strings.Contains(err.Error(), Marker+": "))
}

// checkName refuses host (port) by name: before it is resolved.
func (p *Policy) checkName(host string, port uint16) error {
	if p == nil {
		return nil
	}
	for _, rs := range [][]rule{p.builtin, p.deny} {
		for _, r := range rs {
			if r.matchesName(host, port) {
				return &DeniedError{Host: host, Rule: r.text}
			}
		}
	}
	return nil
}

// checkAddr refuses the resolved address a of host, or lets it through.
func (p *Policy) checkAddr(host string, a netip.AddrPort) error {
	if p == nil {
		return nil
	}
	a = netip.AddrPortFrom(a.Addr().WithZone("").Unmap(), a.Port())
	if err := p.checkDenied(host, a); err != nil {
		return err
	}
	if len(p.allow) == 0 {
		return nil
	}
	for _, r := range p.allow {
		if r.matchesName(host, a.Port()) || r.matchesAddr(a) {
			return nil
		}
	}
	return &DeniedError{Host: host, Addr: a.String()}
}

// checkDenied refuses address a of host when a built-in or deny rule matches it.
func (p *Policy) checkDenied(host string, a netip.AddrPort) error {
	a = netip.AddrPortFrom(a.Addr().WithZone("").Unmap(), a.Port())
	for _, rs := range [][]rule{p.builtin, p.deny} {
		for _, r := range rs {
			if r.matchesAddr(a) {
				return &DeniedError{Host: host, Addr: a.String(), Rule: r.text}
			}
		}
	}
	return nil
}

// ResolveAPIServer returns the addresses the operator's Kubernetes client reaches
// the API server at, from its host URL ("https://host:port"), plus the in-cluster
// Service address (KUBERNETES_SERVICE_HOST and _PORT) when set.
func ResolveAPIServer(lookup func(host string) ([]netip.Addr, error), hostURL, serviceHost, servicePort string) ([]netip.AddrPort, error) {
	var out []netip.AddrPort
	add := func(host, port string) error {
		p, err := strconv.ParseUint(port, 10, 16)
		if err != nil {
			return fmt.Errorf("port %q of the API server: %w", port, err)
		}
		if a, err := netip.ParseAddr(host); err == nil {
			out = append(out, netip.AddrPortFrom(a.Unmap(), uint16(p)))
			return nil
		}
		addrs, err := lookup(host)
		if err != nil {
			return fmt.Errorf("resolving the API server %s: %w", host, err)
		}
		for _, a := range addrs {
			out = append(out, netip.AddrPortFrom(a.Unmap(), uint16(p)))
		}
		return nil
	}
	host, port, err := hostPort(hostURL)
	if err != nil {
		return nil, err
	}
	if err := add(host, port); err != nil {
		return nil, err
	}
	if serviceHost != "" && servicePort != "" {
		if err := add(serviceHost, servicePort); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// hostPort splits "https://host:port/path" (or "host:port"), defaulting the port
// to 443 for https and 80 for http.
func hostPort(hostURL string) (string, string, error) {
	rest := hostURL
	port := "443"
	if s, ok := strings.CutPrefix(rest, "https://"); ok {
		rest = s
	} else if s, ok := strings.CutPrefix(rest, "http://"); ok {
		rest, port = s, "80"
	}
	rest, _, _ = strings.Cut(rest, "/")
	if h, p, err := net.SplitHostPort(rest); err == nil {
		return h, p, nil
	}
	if rest == "" {
		return "", "", fmt.Errorf("API server address %q has no host", hostURL)
	}
	return strings.Trim(rest, "[]"), port, nil
}

package netguard

import (
	"errors"
	"net/netip"
	"testing"
)

func TestPolicy_Check(t *testing.T) {
	api := []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:6443"), netip.MustParseAddrPort("10.96.0.1:443")}
	tests := []struct {
		name        string
		deny, allow []string
		host        string
		addr        string // the resolved address; "" checks the name only
		wantRule    string // "" means allowed; "-" means refused by the allow list
	}{
		{name: "a public host", host: "git.example.com", addr: "203.0.113.7:443"},
		{name: "cloud metadata", host: "169.254.169.254", addr: "169.254.169.254:80", wantRule: "built-in 169.254.0.0/16"},
		{name: "a name that resolves to metadata", host: "innocent.example", addr: "169.254.169.254:80", wantRule: "built-in 169.254.0.0/16"},
		{name: "metadata as an IPv4-mapped IPv6 address", host: "x.example", addr: "[::ffff:169.254.169.254]:80", wantRule: "built-in 169.254.0.0/16"},
		{name: "IPv6 link-local", host: "x.example", addr: "[fe80::1]:22", wantRule: "built-in fe80::/10"},
		{name: "AWS IPv6 metadata", host: "x.example", addr: "[fd00:ec2::254]:80", wantRule: "built-in fd00:ec2::254/128"},
		{name: "GCP metadata by name", host: "Metadata.Google.Internal.", wantRule: "built-in metadata.google.internal"},
		{name: "the unspecified address", host: "0.0.0.0", addr: "0.0.0.0:6443", wantRule: "built-in 0.0.0.0/32"},
		{name: "the API server's address and port", host: "127.0.0.1", addr: "127.0.0.1:6443", wantRule: "the Kubernetes API server 127.0.0.1:6443"},
		{name: "the API server's address, another port (a git server beside it)", host: "127.0.0.1", addr: "127.0.0.1:3000"},
		{name: "the API server's Service address", host: "kubernetes.default.svc", addr: "10.96.0.1:443", wantRule: "the Kubernetes API server 10.96.0.1:443"},
		{name: "a denied range", deny: []string{"10.0.0.0/8"}, host: "git.internal", addr: "10.1.2.3:443", wantRule: "10.0.0.0/8"},
		{name: "a denied name", deny: []string{"*.corp.example"}, host: "git.corp.example", wantRule: "*.corp.example"},
		{name: "a denied name does not match its parent", deny: []string{"*.corp.example"}, host: "corp.example", addr: "203.0.113.7:443"},
		{name: "a denied address:port", deny: []string{"[::1]:3000"}, host: "::1", addr: "[::1]:3000", wantRule: "[::1]:3000"},
		{name: "allowed by name", allow: []string{"github.com"}, host: "github.com", addr: "140.82.112.3:443"},
		{name: "not in the allow list", allow: []string{"github.com"}, host: "gitlab.com", addr: "172.65.251.78:443", wantRule: "-"},
		{name: "allowed by range", allow: []string{"192.0.2.0/24"}, host: "git.lan", addr: "192.0.2.9:22"},
		{name: "allow does not open metadata", allow: []string{"169.254.0.0/16"}, host: "169.254.169.254", addr: "169.254.169.254:80", wantRule: "built-in 169.254.0.0/16"},
		{name: "deny wins over allow", allow: []string{"*.example.com"}, deny: []string{"evil.example.com"}, host: "evil.example.com", wantRule: "evil.example.com"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewPolicy(api, tt.deny, tt.allow)
			if err != nil {
				t.Fatal(err)
			}
			var port uint16 = 443
			if tt.addr != "" {
				port = netip.MustParseAddrPort(tt.addr).Port()
			}
			err = p.checkName(tt.host, port)
			if err == nil && tt.addr != "" {
				err = p.checkAddr(tt.host, netip.MustParseAddrPort(tt.addr))
			}
			var d *DeniedError
			switch {
			case tt.wantRule == "" && err != nil:
				t.Fatalf("refused, want allowed: %v", err)
			case tt.wantRule == "":
				return
			case !errors.As(err, &d):
				t.Fatalf("got %v, want a refusal by %q", err, tt.wantRule)
			case tt.wantRule == "-" && d.Rule != "":
				t.Errorf("refused by rule %q, want by the allow list", d.Rule)
			case tt.wantRule != "-" && d.Rule != tt.wantRule:
				t.Errorf("refused by rule %q, want %q", d.Rule, tt.wantRule)
			}
			if !IsDenied(err) || !IsDenied(errors.New("wrapped as text: "+err.Error())) {
				t.Errorf("IsDenied(%v) is false", err)
			}
		})
	}
}

func TestParseEntry(t *testing.T) {
	good := []string{"github.com", "*.example.com", "10.0.0.0/8", "::1", "10.1.2.3:6443", "[::1]:6443", "fd00::/8", "::ffff:10.0.0.0/104"}
	for _, e := range good {
		if _, err := ParseEntry(e); err != nil {
			t.Errorf("ParseEntry(%q): %v", e, err)
		}
	}
	bad := []string{"", "10.0.0.0/33", "*", "a b", "exa*mple.com", "[::1]", "host:port"}
	for _, e := range bad {
		if _, err := ParseEntry(e); err == nil {
			t.Errorf("ParseEntry(%q) = nil error, want one", e)
		}
	}
	// A mapped range is the IPv4 range it maps.
	r, _ := ParseEntry("::ffff:10.0.0.0/104")
	if !r.matchesAddr(netip.MustParseAddrPort("10.9.9.9:1")) {
		t.Errorf("::ffff:10.0.0.0/104 does not match 10.9.9.9")
	}
}

func TestResolveAPIServer(t *testing.T) {
	lookup := func(host string) ([]netip.Addr, error) {
		if host == "api.cluster.example" {
			return []netip.Addr{netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("2001:db8::10")}, nil
		}
		return nil, errors.New("no such host")
	}
	got, err := ResolveAPIServer(lookup, "https://api.cluster.example:6443", "10.96.0.1", "443")
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.AddrPort{netip.MustParseAddrPort("192.0.2.10:6443"), netip.MustParseAddrPort("[2001:db8::10]:6443"), netip.MustParseAddrPort("10.96.0.1:443")}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("address %d: got %v, want %v", i, got[i], want[i])
		}
	}
	if got, err := ResolveAPIServer(lookup, "https://127.0.0.1", "", ""); err != nil || len(got) != 1 || got[0] != netip.MustParseAddrPort("127.0.0.1:443") {
		t.Errorf("https://127.0.0.1: got %v, %v; want 127.0.0.1:443", got, err)
	}
	if _, err := ResolveAPIServer(lookup, "https://unknown.example", "", ""); err == nil {
		t.Errorf("an unresolvable API server: no error")
	}
}

func TestPolicy_AddressForms(t *testing.T) {
	own := []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:8081")}
	p, err := NewPolicyWithOwn(nil, Own{Listeners: own, AllowLoopback: true}, []string{"10.0.0.0/8", "fd00::1%eth0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	refused := []string{
		"[fe80::1%eth0]:8443",     // a zone does not hide link-local
		"[64:ff9b::a9fe:a9fe]:80", // NAT64 of 169.254.169.254
		"[2002:a9fe:a9fe::1]:80",  // 6to4 of 169.254.169.254
		"[::a9fe:a9fe]:80",        // IPv4-compatible 169.254.169.254
		"[::ffff:10.1.2.3]:443",   // mapped, against a configured range
		"[64:ff9b::a01:203]:443",  // NAT64 of 10.1.2.3
		"[fd00::1%eth1]:22",       // a configured address whatever its zone
		"127.0.0.1:8081",          // the operator's own probe listener
	}
	for _, a := range refused {
		if err := p.checkAddr("x", netip.MustParseAddrPort(a)); !IsDenied(err) {
			t.Errorf("%s: got %v, want a refusal", a, err)
		}
	}
	allowed := []string{"[2001:db8::1]:443", "[64:ff9b::c000:207]:443", "127.0.0.1:8082", "[::1]:3000"}
	for _, a := range allowed {
		if err := p.checkAddr("x", netip.MustParseAddrPort(a)); err != nil {
			t.Errorf("%s: refused: %v", a, err)
		}
	}
}

// TestPolicy_Loopback: the operator's policy refuses loopback in every form that
// reaches it, and its own listeners even where loopback is let through (as the tests
// let it). Positive control: the same addresses pass with AllowLoopback, but for the
// listener, and an address beside loopback passes either way.
func TestPolicy_Loopback(t *testing.T) {
	own := []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:40000"), netip.MustParseAddrPort("[::1]:8443")}
	tests := []struct {
		addr               string
		refused, refusedIf bool // refused: whatever AllowLoopback; refusedIf: unless it
		wantRule           string
	}{
		{addr: "127.0.0.1:3000", refusedIf: true, wantRule: "built-in 127.0.0.0/8"},
		{addr: "127.1.2.3:3000", refusedIf: true, wantRule: "built-in 127.0.0.0/8"},
		{addr: "[::1]:3000", refusedIf: true, wantRule: "built-in ::1/128"},
		{addr: "[::ffff:127.0.0.1]:3000", refusedIf: true, wantRule: "built-in 127.0.0.0/8"}, // mapped
		{addr: "[::7f00:1]:3000", refusedIf: true, wantRule: "built-in 127.0.0.0/8"},         // IPv4-compatible
		{addr: "127.0.0.1:40000", refused: true, wantRule: "the operator's own listener 127.0.0.1:40000"},
		{addr: "[::ffff:127.0.0.1]:40000", refused: true, wantRule: "the operator's own listener 127.0.0.1:40000"},
		{addr: "[::1]:8443", refused: true, wantRule: "the operator's own listener [::1]:8443"},
		// Another address of 127.0.0.0/8 reaches the same listener on Linux.
		{addr: "127.0.0.2:40000", refused: true, wantRule: "the operator's own listener 127.0.0.1:40000"},
		{addr: "127.9.9.9:40000", refused: true, wantRule: "the operator's own listener 127.0.0.1:40000"},
		{addr: "127.0.0.2:40001", refusedIf: true, wantRule: "built-in 127.0.0.0/8"}, // another port
		{addr: "128.0.0.1:3000"},
		{addr: "[::2]:3000"},
	}
	for _, allowLoopback := range []bool{false, true} {
		p, err := NewPolicyWithOwn(nil, Own{Listeners: own, AllowLoopback: allowLoopback}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tt := range tests {
			err := p.checkAddr("x", netip.MustParseAddrPort(tt.addr))
			want := tt.refused || (tt.refusedIf && !allowLoopback)
			var d *DeniedError
			switch {
			case !want && err != nil:
				t.Errorf("AllowLoopback %t, %s: refused: %v", allowLoopback, tt.addr, err)
			case want && !errors.As(err, &d):
				t.Errorf("AllowLoopback %t, %s: got %v, want a refusal", allowLoopback, tt.addr, err)
			case want && d.Rule != tt.wantRule:
				t.Errorf("AllowLoopback %t, %s: refused by %q, want %q", allowLoopback, tt.addr, d.Rule, tt.wantRule)
			}
		}
	}
	// NewPolicy, the git and registry clients' tests' policy, lets loopback through.
	p, err := NewPolicy(nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.checkAddr("x", netip.MustParseAddrPort("127.0.0.1:3000")); err != nil {
		t.Errorf("NewPolicy refuses loopback: %v", err)
	}
}

package netguard

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/dns/dnsmessage"
	"golang.org/x/net/http/httpproxy"

	"github.com/fnops/func-operator/pkg/netguard/netguardtest"
)

func TestGuard_Proxy(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "hello from "+r.Host)
	}))
	t.Cleanup(srv.Close)
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	upstream := strings.TrimPrefix(srv.URL, "https://")

	tests := []struct {
		name        string
		deny, allow []string
		noProxy     string
		target      string // host; the test server's certificate is valid for example.com and *.example.com
		wantConnect int64
		wantRule    string // "" for success; "-" for a refusal by the allow list
	}{
		{name: "through the proxy", target: "example.com", wantConnect: 1},
		{name: "allowed by name, the proxy not in the allow list", allow: []string{"*.example.com"}, target: "git.example.com", wantConnect: 1},
		{name: "the proxy in a denied range is still the proxy", deny: []string{"127.0.0.1/32"}, target: "other.example.com", wantConnect: 1},
		{name: "a name that resolves to metadata", target: "meta.example.com", wantRule: "built-in 169.254.0.0/16"},
		{name: "a name that resolves to a denied address", deny: []string{"127.0.0.2/32"}, target: "other.example.com", wantRule: "127.0.0.2/32"},
		{name: "a name the pod cannot resolve is left to the proxy", target: "proxy-only.example.com", wantConnect: 1},
		{name: "NO_PROXY: dialed directly, and checked", noProxy: "example.com", target: "example.com"},
		{name: "NO_PROXY'd and denied: refused at the dial", noProxy: ".example.com", deny: []string{"127.0.0.1"}, target: "git.example.com", wantRule: "127.0.0.1"},
		{name: "a denied name", deny: []string{"*.example.com"}, target: "git.example.com", wantRule: "*.example.com"},
		{name: "not in the allow list", allow: []string{"github.com"}, target: "example.com", wantRule: "-"},
		{name: "an allow list of ranges cannot match a name the proxy resolves", allow: []string{"127.0.0.0/8"}, target: "example.com", wantRule: "-"},
		{name: "metadata by name", target: "metadata.google.internal", wantRule: "built-in metadata.google.internal"},
		{name: "metadata by address", target: "169.254.169.254", wantRule: "built-in 169.254.0.0/16"},
		{name: "metadata by an address a resolver reads", target: "2852039166", wantRule: "built-in 169.254.0.0/16"},
		{name: "metadata in hexadecimal and octal", target: "0xa9.0376.169.254", wantRule: "built-in 169.254.0.0/16"},
		{name: "IPv6 link-local", target: "[fe80::1]", wantRule: "built-in fe80::/10"},
		{name: "a denied address", deny: []string{"192.0.2.0/24"}, target: "192.0.2.10", wantRule: "192.0.2.0/24"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			proxy := netguardtest.StartConnectProxy(t, upstream)
			p, err := NewPolicy(nil, tt.deny, tt.allow)
			if err != nil {
				t.Fatal(err)
			}
			g := New(p)
			// The test's DNS server is fake: names resolve to loopback addresses, one to
			// the metadata address (never dialed: the proxy dials the test server only),
			// and proxy-only.example.com to nothing.
			g.resolver = fakeResolver(map[string]netip.Addr{"example.com.": netip.MustParseAddr("127.0.0.1"),
				"git.example.com.": netip.MustParseAddr("127.0.0.1"), "other.example.com.": netip.MustParseAddr("127.0.0.2"),
				"meta.example.com.": netip.MustParseAddr("169.254.169.254")})
			g.SetProxy(&httpproxy.Config{HTTPSProxy: proxy.URL, NoProxy: tt.noProxy})
			rt, err := g.TransportWithCA(0, serverCA(srv))
			if err != nil {
				t.Fatal(err)
			}
			target := "https://" + tt.target + ":" + port + "/"
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
			res, err := (&http.Client{Transport: rt}).Do(req)
			if err == nil {
				body, _ := io.ReadAll(res.Body)
				_ = res.Body.Close()
				if !strings.HasPrefix(string(body), "hello from ") {
					t.Errorf("body %q", body)
				}
			}
			var d *DeniedError
			switch {
			case tt.wantRule == "" && err != nil:
				t.Fatalf("GET %s: %v", target, err)
			case tt.wantRule != "" && !errors.As(err, &d):
				t.Fatalf("GET %s: got %v, want a refusal", target, err)
			case tt.wantRule == "-" && d.Rule != "":
				t.Errorf("refused by %q, want by the allow list", d.Rule)
			case tt.wantRule != "" && tt.wantRule != "-" && d.Rule != tt.wantRule:
				t.Errorf("refused by %q, want %q", d.Rule, tt.wantRule)
			}
			if diff := cmp.Diff(tt.wantConnect, proxy.Connects()); diff != "" {
				t.Errorf("CONNECTs the proxy received (-want +got):\n%s", diff)
			}
			if tt.wantConnect > 0 {
				if diff := cmp.Diff([]string{tt.target + ":" + port}, proxy.Targets()); diff != "" {
					t.Errorf("CONNECT targets (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestProxyFromEnvironment(t *testing.T) {
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:3128")
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:3129")
	t.Setenv("NO_PROXY", "internal.example,.corp.example")
	t.Setenv("REQUEST_METHOD", "")
	fn := ProxyFromEnvironment().ProxyFunc()
	tests := []struct{ target, want string }{
		{"https://git.example.com/r.git", "http://127.0.0.1:3128"},
		{"http://git.example.com/r.git", "http://127.0.0.1:3129"},
		{"https://internal.example/r.git", ""},
		{"https://git.corp.example/r.git", ""},
		{"https://localhost/r.git", ""},
		{"https://127.0.0.1:8443/r.git", ""},
	}
	for _, tt := range tests {
		u, _ := url.Parse(tt.target)
		p, err := fn(u)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if p != nil {
			got = p.String()
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("proxy of %s (-want +got):\n%s", tt.target, diff)
		}
	}
}

func TestLegacyIPv4(t *testing.T) {
	tests := []struct {
		host string
		want string // "" when not an address
	}{
		{"2852039166", "169.254.169.254"},
		{"0xa9fea9fe", "169.254.169.254"},
		{"169.254.43518", "169.254.169.254"},
		{"169.16689662", "169.254.169.254"},
		{"0251.0376.0251.0376", "169.254.169.254"},
		{"127.1", "127.0.0.1"},
		{"0x7f.1.", "127.0.0.1"},
		{"example.com", ""},
		{"1.2.3.4.5", ""},
		{"256.1.1.1", ""},
		{"1.2.3.256", ""},
		{"4294967296", ""},
		{"08.1.1.1", ""},
		{"", ""},
		{"1..2", ""},
	}
	for _, tt := range tests {
		a, ok := legacyIPv4(tt.host)
		got := ""
		if ok {
			got = a.String()
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("legacyIPv4(%q) (-want +got):\n%s", tt.host, diff)
		}
	}
}

// fakeResolver answers A queries for names (fully qualified) from the map, and
// nothing else, over an in-memory DNS "server": no query leaves the process.
func fakeResolver(names map[string]netip.Addr) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		c1, c2 := net.Pipe()
		go serveFakeDNS(c2, names)
		return c1, nil
	}}
}

// serveFakeDNS answers the queries of a stream connection (2-byte length framing).
func serveFakeDNS(c net.Conn, names map[string]netip.Addr) {
	defer func() { _ = c.Close() }()
	for {
		var n uint16
		if err := binary.Read(c, binary.BigEndian, &n); err != nil {
			return
		}
		msg := make([]byte, n)
		if _, err := io.ReadFull(c, msg); err != nil {
			return
		}
		var p dnsmessage.Parser
		h, err := p.Start(msg)
		if err != nil {
			return
		}
		q, err := p.Question()
		if err != nil {
			return
		}
		a, known := names[strings.ToLower(q.Name.String())]
		rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionAvailable: true}
		if !known {
			rh.RCode = dnsmessage.RCodeNameError
		}
		b := dnsmessage.NewBuilder(nil, rh)
		_ = b.StartQuestions()
		_ = b.Question(q)
		_ = b.StartAnswers()
		if known && q.Type == dnsmessage.TypeA {
			_ = b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 60},
				dnsmessage.AResource{A: a.As4()})
		}
		out, err := b.Finish()
		if err != nil {
			return
		}
		var framed bytes.Buffer
		_ = binary.Write(&framed, binary.BigEndian, uint16(len(out)))
		framed.Write(out)
		if _, err := c.Write(framed.Bytes()); err != nil {
			return
		}
	}
}

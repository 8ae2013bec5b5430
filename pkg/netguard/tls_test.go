package netguard

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// serverCA is the PEM of a TLS test server's certificate, which is its own CA.
func serverCA(srv *httptest.Server) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

func TestParseCABundle(t *testing.T) {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	ca := serverCA(srv)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
	badDER := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("not-a-certificate-secret-bytes")})

	tests := []struct {
		name    string
		bundle  []byte
		want    int    // certificates
		wantErr string // substring; "" for success
	}{
		{name: "one certificate", bundle: ca, want: 1},
		{name: "two certificates, with comments around", bundle: append(append([]byte("# corporate roots\n"), ca...), append([]byte("intermediate:\n"), ca...)...), want: 2},
		{name: "empty", bundle: nil, wantErr: "holds no PEM certificate"},
		{name: "not PEM", bundle: []byte("hunter2-not-a-pem"), wantErr: "holds no PEM certificate"},
		{name: "a private key", bundle: keyPEM, wantErr: "PEM block 1 is a private key, not a CERTIFICATE"},
		{name: "a certificate, then a private key", bundle: append(append([]byte(nil), ca...), keyPEM...), wantErr: "PEM block 2 is a private key"},
		{name: "a CERTIFICATE block that is not one", bundle: badDER, wantErr: "PEM block 1 is not a valid X.509 certificate"},
		{name: "a truncated second block", bundle: append(append([]byte(nil), ca...), ca[:len(ca)/2]...), wantErr: "PEM block 2 is malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			certs, err := ParseCABundle(tt.bundle)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && !strings.Contains(got, tt.wantErr) {
				t.Fatalf("ParseCABundle: error %q, want one containing %q", got, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, len(certs)); diff != "" {
				t.Errorf("certificates (-want +got):\n%s", diff)
			}
			for _, secret := range []string{"hunter2", "secret-bytes", "PRIVATE KEY-----", string(der[:8])} {
				if strings.Contains(got, secret) {
					t.Errorf("the error quotes the bundle: %q", got)
				}
			}
		})
	}
}

func TestGuard_TransportWithCA(t *testing.T) {
	big := strings.Repeat("b", 2<<20)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/error" {
			w.WriteHeader(http.StatusBadGateway)
		}
		_, _ = io.WriteString(w, big)
	}))
	t.Cleanup(srv.Close)
	g := New(mustPolicy(t, nil, nil))
	get := func(rt http.RoundTripper, ctx context.Context, path string) (int, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
		res, err := (&http.Client{Transport: rt}).Do(req)
		if err != nil {
			return 0, err
		}
		defer func() { _ = res.Body.Close() }()
		b, err := io.ReadAll(res.Body)
		return len(b), err
	}

	// Negative control: the system roots do not know the test server's CA.
	_, err := get(g.Transport(0), context.Background(), "/ok")
	if why, ok := UntrustedCertificate(err); !ok || !strings.Contains(why, "authority") {
		t.Fatalf("without the CA: got %v (%q), want an untrusted certificate", err, why)
	}

	withCA, err := g.TransportWithCA(0, serverCA(srv))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		ctx     context.Context
		path    string
		want    int
		wantErr bool // a TooLargeError
	}{
		{name: "a body", ctx: context.Background(), path: "/ok", want: len(big)},
		{name: "over the read limit", ctx: WithReadLimit(context.Background(), 1<<20), path: "/ok", want: 1 << 20, wantErr: true},
		{name: "an error body is cut", ctx: context.Background(), path: "/error", want: DefaultMaxErrorBody},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := get(withCA, tt.ctx, tt.path)
			var tl *TooLargeError
			if tt.wantErr != errors.As(err, &tl) || (!tt.wantErr && err != nil) {
				t.Fatalf("got %v, want a TooLargeError: %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, n); diff != "" {
				t.Errorf("bytes read (-want +got):\n%s", diff)
			}
		})
	}

	// The same bundle shares one transport; the policy still holds on it.
	if _, err := g.TransportWithCA(0, bytes.Clone(serverCA(srv))); err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	kept := g.caTransports.Len()
	g.mu.Unlock()
	if diff := cmp.Diff(1, kept); diff != "" {
		t.Errorf("transports kept for one bundle (-want +got):\n%s", diff)
	}
	g.SetPolicy(mustPolicy(t, nil, []string{strings.TrimPrefix(srv.URL, "https://")}))
	if _, err := get(withCA, context.Background(), "/ok"); !IsDenied(err) {
		t.Errorf("a denied server through the CA's transport: got %v, want a refusal", err)
	}
	if _, err := g.TransportWithCA(0, []byte("not PEM")); err == nil {
		t.Errorf("TransportWithCA took a bundle that is not PEM")
	}
}

func TestGuard_TransportWithCA_Eviction(t *testing.T) {
	g := New(mustPolicy(t, nil, nil))
	var first []byte
	for i := 0; i < maxCATransports+3; i++ {
		srv := httptest.NewUnstartedServer(http.NotFoundHandler())
		srv.StartTLS()
		ca := serverCA(srv)
		srv.Close()
		// Every httptest server has the same certificate: make each bundle distinct.
		ca = append([]byte(strings.Repeat("#\n", i)), ca...)
		if first == nil {
			first = ca
		}
		if _, err := g.TransportWithCA(0, ca); err != nil {
			t.Fatal(err)
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if diff := cmp.Diff(maxCATransports, g.caTransports.Len()); diff != "" {
		t.Errorf("transports kept (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(maxCATransports, len(g.transports)); diff != "" {
		t.Errorf("transports SetPolicy closes (-want +got):\n%s", diff)
	}
}

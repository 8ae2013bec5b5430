package registry

import (
	"encoding/pem"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"golang.org/x/net/http/httpproxy"

	"github.com/fnops/func-operator/pkg/netguard"
	"github.com/fnops/func-operator/pkg/netguard/netguardtest"
)

// tlsRegistry serves go-containerregistry's registry over TLS on 127.0.0.1, with
// its own certificate as CA; it returns the host and the CA's PEM.
func tlsRegistry(t *testing.T) (host string, ca []byte) {
	t.Helper()
	srv := httptest.NewTLSServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "https://"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

func TestInspect_CABundle(t *testing.T) {
	host, ca := tlsRegistry(t)
	img := image(t, "amd64", map[string]string{LabelMiddlewareVersion: "v0.23.0"}, baseLayer(t))
	ref := host + "/fn/ca:v1"
	pushRef := mustRef(t, ref)
	// Pushed through a transport that trusts the CA; the Inspector learns it from
	// the Secret.
	guard := netguard.New(mustPolicy(t))
	caRT, err := guard.TransportWithCA(0, ca)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(pushRef, img, remote.WithTransport(caRT)); err != nil {
		t.Fatalf("pushing: %v", err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	want := Middleware{Digest: d.String(), Version: "v0.23.0", Source: SourceLabel}
	cfg := []byte(`{"auths":{}}`)

	withCA, err := KeychainWithCA(cfg, ca)
	if err != nil {
		t.Fatal(err)
	}
	withoutCA, err := Keychain(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		kc        authn.Keychain
		noGuard   bool
		want      Middleware
		untrusted bool // an *UnreachableError on the certificate
		wantErr   string
	}{
		{name: "ca.crt in the registry Secret", kc: withCA, want: want},
		{name: "no ca.crt", kc: withoutCA, untrusted: true},
		{name: "no keychain", kc: nil, untrusted: true},
		{name: "ca.crt, and no Guard to make its transport", kc: withCA, noGuard: true, wantErr: "Inspector.Guard is not set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A fresh Inspector: nothing cached.
			i := NewInspector(10, remote.WithTransport(guard.Transport(0)))
			if !tt.noGuard {
				i.Guard = guard
			}
			got, err := i.Inspect(testCtx(t), ref, tt.kc)
			var ue *UnreachableError
			switch {
			case tt.untrusted:
				if !errors.As(err, &ue) || !strings.Contains(err.Error(), "authority the operator does not trust") || !strings.Contains(err.Error(), KeyCACert) {
					t.Fatalf("got %v, want an *UnreachableError saying the certificate is untrusted and naming %s", err, KeyCACert)
				}
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want an error saying %q", err, tt.wantErr)
				}
			case err != nil:
				t.Fatalf("Inspect: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Inspect (-want +got):\n%s", diff)
			}
		})
	}

	// One Inspector, two tenants: the transport (and puller) of one CA is not
	// another's. The tag resolves anew for the tenant without the CA, and fails.
	i := NewInspector(10, remote.WithTransport(guard.Transport(0)))
	i.Guard = guard
	if diff := cmp.Diff(want, mustInspect(t, i, ref, withCA)); diff != "" {
		t.Fatalf("with the CA (-want +got):\n%s", diff)
	}
	if _, err := i.Inspect(testCtx(t), ref, withoutCA); err == nil {
		t.Errorf("without the CA, after an inspection with it: no error, want an untrusted certificate")
	}
}

func TestKeychainWithCA(t *testing.T) {
	_, ca := tlsRegistry(t)
	const password = "s3cret-Passw0rd-abcdef"
	cfg := dockerConfig("registry.example.com", "u", password)
	tests := []struct {
		name    string
		ca      []byte
		wantCA  bool
		wantErr string
	}{
		{name: "no ca.crt", ca: nil},
		{name: "a CA", ca: ca, wantCA: true},
		{name: "empty", ca: []byte(" \n"), wantErr: `key "ca.crt" is empty`},
		{name: "not PEM", ca: []byte("garbage-" + password), wantErr: `key "ca.crt" must hold the PEM certificates of the CAs to trust: it holds no PEM certificate`},
		{name: "a key", ca: pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: []byte("k3y-bytes")}), wantErr: "PEM block 1 is a private key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kc, err := KeychainWithCA(cfg, tt.ca)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if tt.wantErr == "" && err != nil || !strings.Contains(got, tt.wantErr) {
				t.Fatalf("error %q, want one containing %q", got, tt.wantErr)
			}
			for _, s := range []string{password, "k3y-bytes", "garbage"} {
				if strings.Contains(got, s) {
					t.Errorf("the error quotes the Secret: %q", got)
				}
			}
			if err != nil {
				return
			}
			if diff := cmp.Diff(tt.wantCA, caBundle(kc) != nil); diff != "" {
				t.Errorf("carries a CA (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTooLargeKey_PerCA: an image found too large through one CA's server is not
// too large for a caller trusting another (the server one tenant's CA vouches for
// may serve a bomb under the digests of someone else's image).
func TestTooLargeKey_PerCA(t *testing.T) {
	if caKey(nil) == caKey([]byte("x")) || caKey([]byte("x")) == caKey([]byte("y")) {
		t.Errorf("caKey does not tell bundles apart: %q %q %q", caKey(nil), caKey([]byte("x")), caKey([]byte("y")))
	}
}

// TestInspect_Proxy reads an image through HTTPS_PROXY: the registry is named
// example.com (its certificate is valid for it), which the proxy, and only it,
// takes to the registry on 127.0.0.1.
func TestInspect_Proxy(t *testing.T) {
	loopback, ca := tlsRegistry(t)
	port := loopback[strings.LastIndex(loopback, ":")+1:]
	img := image(t, "amd64", map[string]string{LabelMiddlewareVersion: "v0.24.0"}, baseLayer(t))
	guard := netguard.New(mustPolicy(t))
	caRT, err := guard.TransportWithCA(0, ca)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(mustRef(t, loopback+"/fn/proxied:v1"), img, remote.WithTransport(caRT)); err != nil {
		t.Fatalf("pushing: %v", err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	kc, err := KeychainWithCA([]byte(`{"auths":{}}`), ca)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		deny        []string
		want        Middleware
		wantConnect bool
	}{
		{name: "through the proxy", want: Middleware{Digest: d.String(), Version: "v0.24.0", Source: SourceLabel}, wantConnect: true},
		{name: "a denied registry is refused before the proxy sees it", deny: []string{"example.com"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			proxy := netguardtest.StartConnectProxy(t, loopback)
			g := netguard.New(mustPolicy(t, tt.deny...))
			g.SetProxy(&httpproxy.Config{HTTPSProxy: proxy.URL})
			i := NewInspector(10, remote.WithTransport(g.Transport(0)))
			i.Guard = g
			got, err := i.Inspect(testCtx(t), "example.com:"+port+"/fn/proxied:v1", kc)
			var ie *InspectError
			if tt.deny != nil && (!errors.As(err, &ie) || ie.Reason != ReasonHostNotAllowed) {
				t.Fatalf("got %v, want an InspectError %s", err, ReasonHostNotAllowed)
			}
			if tt.deny == nil && err != nil {
				t.Fatalf("Inspect: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Inspect (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantConnect, proxy.Connects() > 0); diff != "" {
				t.Errorf("went through the proxy (-want +got):\n%s", diff)
			}
		})
	}
}

func mustRef(t *testing.T, s string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

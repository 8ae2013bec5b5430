package rebase

import (
	"context"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/fnops/func-operator/pkg/netguard"
)

func newGuard(t *testing.T, deny ...string) *netguard.Guard {
	t.Helper()
	p, err := netguard.NewPolicy(nil, deny, nil)
	if err != nil {
		t.Fatal(err)
	}
	return netguard.New(p)
}

// TestRebaseThroughGuard: every request goes through the Rebaser's transport,
// under its policy and read limits. The control is the same guard allowing the
// registry, with the default limits.
func TestRebaseThroughGuard(t *testing.T) {
	for _, tc := range []struct {
		name      string
		deny      []string
		maxMemory int64
		want      Reason // "": success
	}{
		{name: "allowed"},
		{name: "registry denied by the policy", deny: []string{"127.0.0.1"}, want: Unreachable},
		{name: "manifests over the read limit", maxMemory: 256, want: Failed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newScene(t, sceneSpec{})
			m0, b0, _ := pushed(t, s.reg, "app", nil)
			g := newGuard(t, tc.deny...)
			r := rebaser()
			r.Transport, r.MaxMemory = g.Transport(0), tc.maxMemory

			res, err := r.Rebase(context.Background(), s.request())
			dials, denials := g.Counts()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Rebase: %v", err)
				}
				checkRebased(t, s, pull(t, res.Image))
				if dials == 0 {
					t.Errorf("no connection went through the guard")
				}
				return
			}
			e := checkError(t, err, tc.want)
			t.Logf("%s: %v", e.Reason, e)
			if len(tc.deny) > 0 && (!netguard.IsDenied(err) || denials == 0) {
				t.Errorf("not a refusal of the policy (%d denials): %v", denials, err)
			}
			if tc.maxMemory > 0 && !netguard.IsTooLarge(err) {
				t.Errorf("not a read over the limit: %v", err)
			}
			if m, b, _ := pushed(t, s.reg, "app", nil); m != m0 || b != b0 {
				t.Errorf("pushed: %d manifests, %d blobs (before: %d, %d)", m, b, m0, b0)
			}
		})
	}
}

// TestRebaseCABundle: a registry whose certificate a private CA signed is
// reached with the Request's CA bundle, through the Guard's transport for it.
func TestRebaseCABundle(t *testing.T) {
	srv := httptest.NewTLSServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "https://")
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	g := newGuard(t)
	caRT, err := g.TransportWithCA(0, ca)
	if err != nil {
		t.Fatal(err)
	}
	s := newSceneAt(t, host, sceneSpec{}, remote.WithTransport(caRT))

	for _, tc := range []struct {
		name    string
		ca      []byte
		noGuard bool
		want    Reason // "": success
	}{
		{name: "CA bundle given", ca: ca},
		{name: "no CA bundle", want: Unreachable},
		{name: "CA bundle, no Guard", ca: ca, noGuard: true, want: Failed},
		{name: "not a CA bundle", ca: []byte("not PEM"), want: InvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rebaser()
			r.Transport = g.Transport(0)
			if !tc.noGuard {
				r.Guard = g
			}
			req := s.request()
			req.CA = tc.ca
			res, err := r.Rebase(context.Background(), req)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Rebase: %v", err)
				}
				checkRebased(t, s, pull(t, res.Image, remote.WithTransport(caRT)))
				return
			}
			e := checkError(t, err, tc.want)
			t.Logf("%s: %v", e.Reason, e)
			if _, untrusted := netguard.UntrustedCertificate(err); tc.ca == nil && !untrusted {
				t.Errorf("not an untrusted certificate: %v", err)
			}
		})
	}
}

// TestRebaseCancelled: a cancelled context stops the rebase (Unreachable,
// wrapping context.Canceled); the control is the same rebase with a live one.
func TestRebaseCancelled(t *testing.T) {
	s := newScene(t, sceneSpec{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := rebaser().Rebase(ctx, s.request())
	_ = checkError(t, err, Unreachable)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("not a cancellation: %v", err)
	}
	if _, err := rebaser().Rebase(context.Background(), s.request()); err != nil {
		t.Fatalf("control: Rebase: %v", err)
	}
}

// redirectingRegistry serves a registry whose blob GETs are redirected to
// /cdn/..., as registries backed by object storage do; it counts them.
func redirectingRegistry(t *testing.T) (host string, redirected *atomic.Int64) {
	t.Helper()
	inner := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	redirected = &atomic.Int64{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case r.Method == http.MethodGet && strings.HasPrefix(p, "/v2/") && strings.Contains(p, "/blobs/sha256:"):
			// /v2/<repo>/blobs/<digest> -> /cdn/<repo>/<digest>: no "/blobs/" in it.
			http.Redirect(w, r, "/cdn/"+strings.Replace(strings.TrimPrefix(p, "/v2/"), "/blobs/", "/", 1), http.StatusTemporaryRedirect)
		case strings.HasPrefix(p, "/cdn/"):
			redirected.Add(1)
			rest := strings.TrimPrefix(p, "/cdn/")
			i := strings.LastIndex(rest, "/")
			r = r.Clone(r.Context())
			r.URL.Path = "/v2/" + rest[:i] + "/blobs" + rest[i:]
			inner.ServeHTTP(w, r)
		default:
			inner.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), redirected
}

// TestRebaseBlobRedirects copies layers from a registry that redirects blob
// reads to another path to a target in another registry: the redirected reads
// are blob reads, under MaxBytes, not MaxMemory.
func TestRebaseBlobRedirects(t *testing.T) {
	host, redirected := redirectingRegistry(t)
	s := newSceneAt(t, host, sceneSpec{run: runSpec{layers: []int64{64 << 10, 1024, 512}}})
	for _, tc := range []struct {
		name                string
		maxMemory, maxBytes int64
		want                Reason // "": success
	}{
		{name: "layers over MaxMemory, under MaxBytes", maxMemory: 16 << 10},
		{name: "layers over MaxBytes", maxBytes: 16 << 10, want: Failed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := newSceneRegistry(t)
			r := rebaser()
			r.Transport = newGuard(t).Transport(0) // the guard enforces the limits
			r.MaxMemory, r.MaxBytes = tc.maxMemory, tc.maxBytes
			req := s.request()
			req.Target = target.Host + "/app"
			before := redirected.Load()

			res, err := r.Rebase(context.Background(), req)
			if redirected.Load() == before {
				t.Errorf("no blob read was redirected")
			}
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Rebase: %v", err)
				}
				checkRebased(t, s, pull(t, res.Image))
				return
			}
			_ = checkError(t, err, tc.want)
			if !netguard.IsTooLarge(err) {
				t.Errorf("not a read over the limit: %v", err)
			}
		})
	}
}

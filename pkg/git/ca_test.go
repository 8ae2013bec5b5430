package git

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	mrand "math/rand"
	"strings"
	"testing"
	"time"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fnops/func-operator/pkg/netguard"
	"github.com/fnops/func-operator/test/gitserver"
)

// installTestGuard installs a Guard with policy deny in go-git for the test.
func installTestGuard(t *testing.T, deny ...string) *netguard.Guard {
	t.Helper()
	p, err := netguard.NewPolicy(nil, deny, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := netguard.New(p)
	InstallGuard(g)
	t.Cleanup(func() {
		client.InstallProtocol("http", githttp.DefaultClient)
		client.InstallProtocol("https", githttp.DefaultClient)
	})
	return g
}

// secretAuth reads an Auth from a Secret with data, failing the test on an error.
func secretAuth(t *testing.T, url string, data map[string][]byte) *Auth {
	t.Helper()
	a, err := AuthFromSecret(url, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "repo-creds"}, Data: data})
	if err != nil {
		t.Fatalf("AuthFromSecret(%s): %v", url, err)
	}
	return a
}

// listRefs lists url as the Fetcher does, with the auth's CA bundle.
func listRefs(ctx context.Context, url string, auth *Auth) (int, error) {
	remote := gogit.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{url}})
	refs, err := remote.ListContext(ctx, &gogit.ListOptions{Auth: auth.Method, CABundle: auth.CABundle})
	return len(refs), err
}

// otherCA is the PEM of a self-signed CA that signed nothing the tests serve.
func otherCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "another CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestInstallGuard_CABundle(t *testing.T) {
	const token = "ghp_CaT0ken-0123456789abcdef"
	root := gitserver.NewRepoRoot(t)
	srv := gitserver.StartHTTPS(t, root)
	gitserver.CreateRepo(t, root, "private").Commit(t, "main", map[string]string{"func.yaml": "name: fn\n"}, "init")
	gitserver.CreateRepo(t, root, "public").Commit(t, "main", map[string]string{"func.yaml": "name: fn\n"}, "init")
	srv.RequireToken("private", token)
	installTestGuard(t)
	ca := srv.CertificatePEM()

	tests := []struct {
		name      string
		repo      string
		data      map[string][]byte
		untrusted bool // the listing fails on the server's certificate
	}{
		{name: "ca.crt and a token", repo: "private", data: map[string][]byte{KeyToken: []byte(token), KeyCACert: ca}},
		{name: "ca.crt only: a public repository on a private CA", repo: "public", data: map[string][]byte{KeyCACert: ca}},
		{name: "a token without ca.crt", repo: "private", data: map[string][]byte{KeyToken: []byte(token)}, untrusted: true},
		{name: "the ca.crt of another CA", repo: "public", data: map[string][]byte{KeyCACert: otherCA(t)}, untrusted: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := srv.URL(tt.repo)
			auth := secretAuth(t, url, tt.data)
			before := srv.RefAdvertisements(tt.repo)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			n, err := listRefs(ctx, url, auth)
			why, untrusted := netguard.UntrustedCertificate(err)
			if diff := cmp.Diff(tt.untrusted, untrusted); diff != "" {
				t.Fatalf("listing failed on the certificate (-want +got):\n%s\nerror: %v", diff, err)
			}
			served := srv.RefAdvertisements(tt.repo) - before
			if tt.untrusted {
				if !strings.Contains(why, "authority") {
					t.Errorf("why = %q, want an unknown authority", why)
				}
				if served != 0 {
					t.Errorf("the server served %d ref advertisements over an untrusted connection", served)
				}
				if strings.Contains(err.Error(), token) {
					t.Errorf("the error quotes the token: %v", err)
				}
				return
			}
			if err != nil || n == 0 || served != 1 {
				t.Fatalf("listing: %d refs, %v, %d ref advertisements served; want some refs, no error, one", n, err, served)
			}
		})
	}
}

// TestInstallGuard_CABundleReadLimit: the CA's transport keeps the Guard's body
// limits (go-git would clone an *http.Transport for a CA bundle, without them).
func TestInstallGuard_CABundleReadLimit(t *testing.T) {
	root := gitserver.NewRepoRoot(t)
	srv := gitserver.StartHTTPS(t, root)
	noise := make([]byte, 2<<20)
	_, _ = mrand.New(mrand.NewSource(5)).Read(noise)
	gitserver.CreateRepo(t, root, "big").Commit(t, "main", map[string]string{"func.yaml": "name: fn\n", "noise.txt": string(noise)}, "init")
	installTestGuard(t)
	url := srv.URL("big")
	auth := secretAuth(t, url, map[string][]byte{KeyCACert: srv.CertificatePEM()})

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := gogit.CloneContext(netguard.WithReadLimit(ctx, 256<<10), memory.NewStorage(), nil, &gogit.CloneOptions{
		URL: url, Auth: auth.Method, CABundle: auth.CABundle, Depth: 1, SingleBranch: true, Tags: gogit.NoTags,
	})
	if !netguard.IsTooLarge(err) {
		t.Fatalf("cloning 2 MiB under a 256 KiB read limit: got %v, want a read past the limit", err)
	}
	// Positive control: no limit.
	if _, err := gogit.CloneContext(ctx, memory.NewStorage(), nil, &gogit.CloneOptions{
		URL: url, Auth: auth.Method, CABundle: auth.CABundle, Depth: 1, SingleBranch: true, Tags: gogit.NoTags,
	}); err != nil {
		t.Fatalf("cloning without a limit: %v", err)
	}
}

func TestInstallGuard_RefusesInsecureOptions(t *testing.T) {
	installTestGuard(t)
	tests := []struct {
		name string
		opts gogit.ListOptions
		want string
	}{
		{name: "skipping TLS verification", opts: gogit.ListOptions{InsecureSkipTLS: true}, want: "never skips the verification"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			remote := gogit.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{"https://127.0.0.1:1/r.git"}})
			_, err := remote.ListContext(context.Background(), &tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error saying %q", err, tt.want)
			}
			if errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("dialed: %v", err)
			}
		})
	}
}

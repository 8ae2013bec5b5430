// Package registrytest runs a real OCI registry (go-containerregistry's) on 127.0.0.1 for tests.
package registrytest

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// MiddlewareLabel is the image config label upstream func writes the middleware version to.
const MiddlewareLabel = "middleware-version"

// Registry is an in-process registry that counts the requests it serves.
type Registry struct {
	// Host is host:port of the registry, to prefix repositories with.
	Host     string
	requests atomic.Int64
}

// Start starts a registry for the test's lifetime.
func Start(t testing.TB) *Registry {
	t.Helper()
	r := &Registry{}
	inner := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.requests.Add(1)
		inner.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.Host = strings.TrimPrefix(srv.URL, "http://")
	return r
}

// Requests returns how many requests the registry has served.
func (r *Registry) Requests() int64 { return r.requests.Load() }

// Push pushes a linux/amd64 image to repo:latest with the middleware-version label
// (none when label is empty) and returns its reference by digest.
func (r *Registry) Push(t testing.TB, repo, label string) string {
	t.Helper()
	cfg, err := empty.Image.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", "amd64"
	cfg.Config.Labels = map[string]string{"org.opencontainers.image.title": repo}
	if label != "" {
		cfg.Config.Labels[MiddlewareLabel] = label
	}
	img, err := mutate.ConfigFile(empty.Image, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(r.Host + "/" + repo + ":latest")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return r.Host + "/" + repo + "@" + d.String()
}

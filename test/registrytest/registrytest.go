// Package registrytest runs a real OCI registry (go-containerregistry's) on 127.0.0.1 for tests.
package registrytest

import (
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/fnops/func-operator/test/hostilehttp"
)

// MiddlewareLabel is the image config label upstream func writes the middleware version to.
const MiddlewareLabel = "middleware-version"

// Registry is an in-process registry that counts the requests it serves.
type Registry struct {
	// Host is host:port of the registry, to prefix repositories with.
	Host     string
	requests atomic.Int64
	// user and password, when set, are required of every request (HTTP basic auth).
	user, password string
	// status, when not 0, answers every request (an outage).
	status atomic.Int32
	// delay, when not 0, holds every request this long (nanoseconds) first, or
	// until the client gives up: a slow registry.
	delay atomic.Int64
	// faults are the hostile behaviours of hostile.go (ErrorBody, Trickle, BytesServed).
	faults *hostilehttp.Faults
	// w holds the request log, readers' credentials and per-repository blobs (writes.go).
	w   writes
	srv *httptest.Server
}

// Delay makes the registry hold every request for d before it answers (or until the
// client gives up), as an overloaded registry does; 0 ends it.
func (r *Registry) Delay(d time.Duration) { r.delay.Store(int64(d)) }

// FailWith makes the registry answer every request with HTTP status code, as a
// registry in an outage does (503…); 0 ends the outage.
func (r *Registry) FailWith(code int) { r.status.Store(int32(code)) }

// Start starts a registry for the test's lifetime.
func Start(t testing.TB) *Registry {
	return StartPrivate(t, "", "")
}

// StartPrivate starts a registry that requires HTTP basic auth with user and
// password on every request, as a private registry does; none when user is empty.
func StartPrivate(t testing.TB, user, password string) *Registry {
	t.Helper()
	r := NewPrivate(user, password)
	t.Cleanup(r.Close)
	return r
}

// New starts a registry on 127.0.0.1 outside a test (make demo); Close stops it.
func New() *Registry { return NewPrivate("", "") }

// NewPrivate is New requiring HTTP basic auth with user and password, as
// StartPrivate.
func NewPrivate(user, password string) *Registry {
	r := &Registry{user: user, password: password, faults: hostilehttp.New()}
	inner := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(r.faults.Handler(r.logged(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.requests.Add(1)
		if d := time.Duration(r.delay.Load()); d > 0 {
			select {
			case <-time.After(d):
			case <-req.Context().Done():
				return
			}
		}
		if code := int(r.status.Load()); code != 0 {
			http.Error(w, http.StatusText(code), code)
			return
		}
		if isManifestRequest(req) && r.faults.ServeErrorBody(w) {
			return
		}
		if u, p, ok := req.BasicAuth(); user != "" && (!ok || u != user || p != password) && !r.isReader(req) {
			w.Header().Set("WWW-Authenticate", `Basic realm="registrytest"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		r.serveWrites(w, req, inner)
	}))))
	r.srv = srv
	r.Host = strings.TrimPrefix(srv.URL, "http://")
	return r
}

// Close stops the registry: the faults in progress first, so that a trickle does not
// hold the server's close.
func (r *Registry) Close() {
	r.stopFaults(r.srv)
	r.srv.Close()
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
	cfg.OS, cfg.Architecture = imageOS, imageArch
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
	auth := authn.Anonymous
	if r.user != "" {
		auth = &authn.Basic{Username: r.user, Password: r.password}
	}
	if err := remote.Write(ref, img, remote.WithAuth(auth)); err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return r.Host + "/" + repo + "@" + d.String()
}

// DockerConfigJSON returns the content of a kubernetes.io/dockerconfigjson Secret
// with the registry's credentials.
func (r *Registry) DockerConfigJSON() []byte { return r.DockerConfigJSONFor(r.Host) }

// DockerConfigJSONFor returns a dockerconfigjson with this registry's credentials
// written for host (another registry's, to test refused credentials).
func (r *Registry) DockerConfigJSONFor(host string) []byte {
	auth := base64.StdEncoding.EncodeToString([]byte(r.user + ":" + r.password))
	return []byte(`{"auths":{"` + host + `":{"auth":"` + auth + `"}}}`)
}

// RevisionLabel is the image config label func's builds write the git commit of the
// function's source to (func v0.50: `org.opencontainers.image.revision`).
const RevisionLabel = "org.opencontainers.image.revision"

// PushImage pushes a linux/amd64 image to ref with the config labels given (besides
// org.opencontainers.image.title, always set to the repository), e.g.
// MiddlewareLabel and RevisionLabel, and returns its reference by digest. Unlike Push
// it reports errors instead of failing a test, for use off the test goroutine.
func (r *Registry) PushImage(ref string, labels map[string]string) (string, error) {
	parsed, err := name.ParseReference(ref)
	if err != nil {
		return "", fmt.Errorf("parsing image reference %q: %w", ref, err)
	}
	cfg, err := empty.Image.ConfigFile()
	if err != nil {
		return "", fmt.Errorf("reading the empty image's config: %w", err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", "amd64"
	cfg.Config.Labels = map[string]string{"org.opencontainers.image.title": parsed.Context().RepositoryStr()}
	for k, v := range labels {
		cfg.Config.Labels[k] = v
	}
	img, err := mutate.ConfigFile(empty.Image, cfg)
	if err != nil {
		return "", fmt.Errorf("setting the image config: %w", err)
	}
	auth := authn.Anonymous
	if r.user != "" {
		auth = &authn.Basic{Username: r.user, Password: r.password}
	}
	if err := remote.Write(parsed, img, remote.WithAuth(auth)); err != nil {
		return "", fmt.Errorf("pushing %s: %w", parsed, err)
	}
	d, err := img.Digest()
	if err != nil {
		return "", fmt.Errorf("computing the digest of %s: %w", parsed, err)
	}
	return parsed.Context().Name() + "@" + d.String(), nil
}

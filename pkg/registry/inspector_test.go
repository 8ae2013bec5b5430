package registry

import (
	"sync/atomic"

	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func mustInspect(t *testing.T, i *Inspector, ref string, kc authn.Keychain) Middleware {
	t.Helper()
	m, err := i.Inspect(testCtx(t), ref, kc)
	if err != nil {
		t.Fatalf("Inspect(%s): %v", ref, err)
	}
	return m
}

func TestInspectLabel(t *testing.T) {
	tr := newTestRegistry(t)
	fn, _ := goBinaries(t)
	// The label wins over the build info of the binary in the layer, which
	// is then not even downloaded.
	fnLayer := functionLayer(t, fn)
	img := image(t, "amd64", map[string]string{LabelMiddlewareVersion: "v0.22.0", "other": "x"}, baseLayer(t), fnLayer)
	d := tr.push(t, "fn/label:v1", img)

	i := NewInspector(10)
	mark := tr.mark()
	m := mustInspect(t, i, tr.ref("fn/label:v1"), nil)
	want := Middleware{Digest: d.String(), Version: "v0.22.0", Source: SourceLabel}
	if diff := cmp.Diff(want, m); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, req := range tr.since(mark) {
		if strings.Contains(req, layerDigest(t, fnLayer).String()) {
			t.Errorf("layer was read although the label answers: %s", req)
		}
	}
}

func TestInspectBuildInfo(t *testing.T) {
	tr := newTestRegistry(t)
	img := goFunctionImage(t)
	t.Logf("building the test Go binaries took %v", binBuildTime)
	d := tr.push(t, "fn/go:v1", img)

	m := mustInspect(t, NewInspector(10), tr.ref("fn/go:v1"), nil)
	want := Middleware{Digest: d.String(), Version: testFuncGoVersion, Source: SourceBuildInfo}
	if diff := cmp.Diff(want, m); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestInspectBuildInfoOlder reads the older func-go a function binary was built with
// (funclib's TestFuncGoOfV044IsOutdated finds it outdated).
func TestInspectBuildInfoOlder(t *testing.T) {
	tr := newTestRegistry(t)
	goBinaries(t)
	d := tr.push(t, "fn/old:v1", image(t, "amd64", nil, baseLayer(t), functionLayer(t, olderBinary)))
	m := mustInspect(t, NewInspector(10), tr.ref("fn/old:v1"), nil)
	if diff := cmp.Diff(Middleware{Digest: d.String(), Version: olderFuncGoVersion, Source: SourceBuildInfo}, m); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

func TestInspectUnknown(t *testing.T) {
	tr := newTestRegistry(t)
	_, hello := goBinaries(t)
	tests := map[string]v1.Image{
		"text files only":        image(t, "amd64", map[string]string{"org.opencontainers.image.title": "x"}, baseLayer(t)),
		"go binary without func": image(t, "amd64", nil, baseLayer(t), helloLayer(t, hello)),
		"no layers":              image(t, "amd64", nil),
	}
	for title, img := range tests {
		t.Run(title, func(t *testing.T) {
			tag := strings.ReplaceAll(title, " ", "-")
			d := tr.push(t, "fn/unknown:"+tag, img)
			m, err := NewInspector(10).Inspect(testCtx(t), tr.ref("fn/unknown:"+tag), nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(Middleware{Digest: d.String()}, m); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// Upper layers that delete or replace the function binary hide it.
func TestInspectWhiteouts(t *testing.T) {
	tr := newTestRegistry(t)
	fn, hello := goBinaries(t)
	tests := map[string]struct {
		top  v1.Layer
		want string
	}{
		"whiteout of the file": {
			top: layer(t, tarFile{name: "workspace/bin/.wh.function"}),
		},
		"whiteout of a parent directory": {
			top: layer(t, tarFile{name: "workspace/.wh.bin"}),
		},
		"opaque directory": {
			top: layer(t,
				tarFile{name: "workspace/bin/", typeflag: tar.TypeDir, mode: 0o755},
				tarFile{name: "workspace/bin/.wh..wh..opq"}),
		},
		"replaced by another binary": {
			top: layer(t, tarFile{name: "workspace/bin/function", mode: 0o755, body: hello}),
		},
		"whiteout of another file": {
			top:  layer(t, tarFile{name: "workspace/bin/.wh.other"}),
			want: testFuncGoVersion,
		},
	}
	for title, tc := range tests {
		t.Run(title, func(t *testing.T) {
			tag := strings.ReplaceAll(title, " ", "-")
			tr.push(t, "fn/whiteout:"+tag, image(t, "amd64", nil, baseLayer(t), functionLayer(t, fn), tc.top))
			m := mustInspect(t, NewInspector(10), tr.ref("fn/whiteout:"+tag), nil)
			if m.Version != tc.want {
				t.Errorf("got version %q, want %q", m.Version, tc.want)
			}
		})
	}
}

func dockerConfig(host, user, pass string) []byte {
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	return []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, host, auth))
}

func TestInspectPrivate(t *testing.T) {
	tr := newTestRegistry(t)
	d := tr.push(t, "team/private/fn:v1", goFunctionImage(t))
	ref := tr.ref("team/private/fn:v1")
	wantOK := Middleware{Digest: d.String(), Version: testFuncGoVersion, Source: SourceBuildInfo}

	t.Run("anonymous", func(t *testing.T) {
		_, err := NewInspector(10).Inspect(testCtx(t), ref, nil)
		var ae *AuthError
		if !errors.As(err, &ae) {
			t.Fatalf("got %T %v, want *AuthError", err, err)
		}
		if ae.StatusCode != http.StatusUnauthorized || !strings.Contains(err.Error(), "registry.authSecretRef") {
			t.Errorf("unexpected error: %v", err)
		}
		t.Logf("error text: %v", err)
	})

	t.Run("auth", func(t *testing.T) {
		kc, err := Keychain(dockerConfig(tr.host, testUser, testPassword))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(wantOK, mustInspect(t, NewInspector(10), ref, kc)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})

	t.Run("username and password with URL key", func(t *testing.T) {
		cfg := fmt.Sprintf(`{"auths":{"http://%s/v2/":{"username":%q,"password":%q}}}`, tr.host, testUser, testPassword)
		kc, err := Keychain([]byte(cfg))
		if err != nil {
			t.Fatal(err)
		}
		// By digest too, through a fresh Inspector: no cache involved.
		if diff := cmp.Diff(wantOK, mustInspect(t, NewInspector(10), tr.host+"/team/private/fn@"+d.String(), kc)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})

	t.Run("wrong password", func(t *testing.T) {
		const wrong = "wr0ng-Passw0rd-abc"
		kc, err := Keychain(dockerConfig(tr.host, testUser, wrong))
		if err != nil {
			t.Fatal(err)
		}
		_, err = NewInspector(10).Inspect(testCtx(t), ref, kc)
		var ae *AuthError
		if !errors.As(err, &ae) {
			t.Fatalf("got %T %v, want *AuthError", err, err)
		}
		text := err.Error()
		for _, secret := range []string{wrong, base64.StdEncoding.EncodeToString([]byte(testUser + ":" + wrong))} {
			if strings.Contains(text, secret) {
				t.Errorf("error text contains a credential: %s", text)
			}
		}
		if !strings.Contains(text, "registry.authSecretRef") {
			t.Errorf("error text does not point at registry.authSecretRef: %s", text)
		}
	})
}

func TestInspectIndex(t *testing.T) {
	tr := newTestRegistry(t)
	arm := image(t, "arm64", map[string]string{LabelMiddlewareVersion: "v0.0.1-arm"}, baseLayer(t))
	amd := goFunctionImage(t)
	s390 := image(t, "s390x", map[string]string{LabelMiddlewareVersion: "v0.0.1-s390x"}, baseLayer(t))
	amdDigest, _ := amd.Digest()
	armDigest, _ := arm.Digest()

	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: arm, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}},
		mutate.IndexAddendum{Add: amd, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
	)
	tr.pushIndex(t, "fn/multi:v1", idx)

	t.Run("amd64 chosen", func(t *testing.T) {
		m := mustInspect(t, NewInspector(10), tr.ref("fn/multi:v1"), nil)
		want := Middleware{Digest: amdDigest.String(), Version: testFuncGoVersion, Source: SourceBuildInfo}
		if diff := cmp.Diff(want, m); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})

	t.Run("no amd64: first image, attestations skipped", func(t *testing.T) {
		att := image(t, "unknown", nil)
		noAmd := mutate.AppendManifests(empty.Index,
			mutate.IndexAddendum{Add: att, Descriptor: v1.Descriptor{
				Platform:    &v1.Platform{OS: "unknown", Architecture: "unknown"},
				Annotations: map[string]string{"vnd.docker.reference.type": "attestation-manifest"},
			}},
			mutate.IndexAddendum{Add: arm, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}},
			mutate.IndexAddendum{Add: s390, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "s390x"}}},
		)
		tr.pushIndex(t, "fn/multi:noamd", noAmd)
		m := mustInspect(t, NewInspector(10), tr.ref("fn/multi:noamd"), nil)
		want := Middleware{Digest: armDigest.String(), Version: "v0.0.1-arm", Source: SourceLabel}
		if diff := cmp.Diff(want, m); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})

	t.Run("errors name the platform", func(t *testing.T) {
		// Corrupt the top layer of the amd64 image (no func-go in it, so the
		// scan reads it to the end and must notice).
		layers, _ := amd.Layers()
		bad := layerDigest(t, layers[len(layers)-1]).String()
		tr.setOverride(corruptBlob(bad))
		defer tr.setOverride(nil)

		_, err := NewInspector(10).Inspect(testCtx(t), tr.ref("fn/multi:v1"), nil)
		// The bytes served are not the blob: a digest mismatch, which the
		// failed decompression must not hide.
		var ie *InspectError
		if !errors.As(err, &ie) || ie.Reason != ReasonDigestMismatch {
			t.Fatalf("got %T %v, want *InspectError %s", err, err, ReasonDigestMismatch)
		}
		for _, s := range []string{"linux/amd64", amdDigest.String(), bad} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("error does not mention %s: %v", s, err)
			}
		}
	})
}

// corruptBlob answers GETs of the blob with digest with bytes that are not
// that blob (starting like gzip, so that decompression is attempted).
func corruptBlob(digest string) func(w http.ResponseWriter, r *http.Request) bool {
	return func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/blobs/"+digest) {
			return false
		}
		body := []byte(strings.Repeat("\x1f\x8b garbage that is not the blob ", 64))
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		_, _ = w.Write(body)
		return true
	}
}

func TestCacheByDigest(t *testing.T) {
	tr := newTestRegistry(t)
	d := tr.push(t, "fn/cache:v1", goFunctionImage(t))
	ref := tr.host + "/fn/cache@" + d.String()
	i := NewInspector(10)

	first := mustInspect(t, i, ref, nil)
	mark := tr.mark()
	second := mustInspect(t, i, ref, nil)
	if reqs := tr.since(mark); len(reqs) != 0 {
		t.Errorf("second Inspect by digest made requests: %v", reqs)
	}
	if diff := cmp.Diff(first, second); diff != "" {
		t.Errorf("results differ (-first +second):\n%s", diff)
	}
	if ins, hits := i.stats(); ins != 1 || hits != 1 {
		t.Errorf("Stats() = %d inspections, %d hits; want 1, 1", ins, hits)
	}

	// Unknown results are cached too.
	d2 := tr.push(t, "fn/cache:plain", image(t, "amd64", nil, baseLayer(t)))
	ref2 := tr.host + "/fn/cache@" + d2.String()
	mustInspect(t, i, ref2, nil)
	mark = tr.mark()
	if m := mustInspect(t, i, ref2, nil); m.Version != "" {
		t.Errorf("got %+v", m)
	}
	if reqs := tr.since(mark); len(reqs) != 0 {
		t.Errorf("second Inspect of an unknown image made requests: %v", reqs)
	}
	if ins, hits := i.stats(); ins != 2 || hits != 2 {
		t.Errorf("Stats() = %d inspections, %d hits; want 2, 2", ins, hits)
	}
}

func TestCacheByTag(t *testing.T) {
	tr := newTestRegistry(t)
	tr.push(t, "fn/cache:v1", goFunctionImage(t))
	ref := tr.ref("fn/cache:v1")
	i := NewInspector(10)

	mark := tr.mark()
	first := mustInspect(t, i, ref, nil)
	t.Logf("first Inspect by tag: %d requests: %v", len(tr.since(mark)), tr.since(mark))

	mark = tr.mark()
	blobs := tr.blobGets.Load()
	second := mustInspect(t, i, ref, nil)
	reqs := tr.since(mark)
	if len(reqs) != 1 || reqs[0] != "HEAD /v2/fn/cache/manifests/v1" {
		t.Errorf("second Inspect by tag made requests %v, want exactly [HEAD /v2/fn/cache/manifests/v1]", reqs)
	}
	if n := tr.blobGets.Load() - blobs; n != 0 {
		t.Errorf("second Inspect read %d blobs", n)
	}
	if diff := cmp.Diff(first, second); diff != "" {
		t.Errorf("results differ (-first +second):\n%s", diff)
	}
	if ins, hits := i.stats(); ins != 1 || hits != 1 {
		t.Errorf("Stats() = %d inspections, %d hits; want 1, 1", ins, hits)
	}

	// The tag's image is cached under the manifest digest too.
	mark = tr.mark()
	mustInspect(t, i, tr.host+"/fn/cache@"+first.Digest, nil)
	if reqs := tr.since(mark); len(reqs) != 0 {
		t.Errorf("Inspect by the digest of a cached tag made requests: %v", reqs)
	}
}

func TestErrorsNotCached(t *testing.T) {
	tr := newTestRegistry(t)
	i := NewInspector(10)
	ref := tr.ref("fn/later:v1")
	if _, err := i.Inspect(testCtx(t), ref, nil); err == nil {
		t.Fatal("expected an error before the push")
	}
	tr.push(t, "fn/later:v1", image(t, "amd64", map[string]string{LabelMiddlewareVersion: "v0.22.0"}))
	if m := mustInspect(t, i, ref, nil); m.Version != "v0.22.0" {
		t.Errorf("got %+v", m)
	}

	// A layer failure is not cached either.
	img := goFunctionImage(t)
	layers, _ := img.Layers()
	d := tr.push(t, "fn/flaky:v1", img)
	tr.setOverride(corruptBlob(layerDigest(t, layers[len(layers)-1]).String()))
	ref = tr.host + "/fn/flaky@" + d.String()
	if _, err := i.Inspect(testCtx(t), ref, nil); err == nil {
		t.Fatal("expected an error with a corrupt layer")
	}
	tr.setOverride(nil)
	if m := mustInspect(t, i, ref, nil); m.Version != testFuncGoVersion {
		t.Errorf("got %+v", m)
	}
}

func TestConcurrentInspectOnce(t *testing.T) {
	tr := newTestRegistry(t)
	d := tr.push(t, "fn/conc:v1", goFunctionImage(t))
	i := NewInspector(10)
	const n = 8
	var wg sync.WaitGroup
	results := make([]Middleware, n)
	errs := make([]error, n)
	for k := 0; k < n; k++ {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			ref := tr.host + "/fn/conc@" + d.String()
			if k%2 == 1 {
				ref = tr.ref("fn/conc:v1")
			}
			results[k], errs[k] = i.Inspect(testCtx(t), ref, nil)
		}(k)
	}
	wg.Wait()
	for k := 0; k < n; k++ {
		if errs[k] != nil || results[k].Version != testFuncGoVersion {
			t.Errorf("call %d: %+v, %v", k, results[k], errs[k])
		}
	}
	if ins, hits := i.stats(); ins != 1 || hits != n-1 {
		t.Errorf("Stats() = %d inspections, %d hits; want 1, %d", ins, hits, n-1)
	}
}

func TestErrors(t *testing.T) {
	tr := newTestRegistry(t)
	tr.push(t, "fn/exists:v1", image(t, "amd64", nil, baseLayer(t)))

	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	}))
	defer failing.Close()

	// A manifest that is JSON but not a manifest, served under its tag and
	// its (real) digest.
	badManifest := "fn/badmanifest:v1"
	body := `{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json", "config": 42}`
	bodyDigest := fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(body)))
	tr.setOverride(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != "/v2/fn/badmanifest/manifests/v1" && r.URL.Path != "/v2/fn/badmanifest/manifests/"+bodyDigest {
			return false
		}
		w.Header().Set("Content-Type", string(types.OCIManifestSchema1))
		w.Header().Set("Docker-Content-Digest", bodyDigest)
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		if r.Method == http.MethodGet {
			_, _ = w.Write([]byte(body))
		}
		return true
	})

	tests := []struct {
		name     string
		ref      string
		check    func(error) bool
		contains string
	}{
		{"connection refused", "127.0.0.1:1/fn/x:v1", isUnreachable, "127.0.0.1:1"},
		{"503", strings.TrimPrefix(failing.URL, "http://") + "/fn/x:v1", isUnreachable, "503"},
		{"unknown repository", tr.ref("fn/nope:v1"), isReason(ReasonNotFound), "not found"},
		{"unknown tag", tr.ref("fn/exists:nope"), isReason(ReasonNotFound), "not found"},
		{"unknown digest", tr.host + "/fn/exists@sha256:" + strings.Repeat("0", 64), isReason(ReasonNotFound), "not found"},
		{"garbage reference", "NOT a reference!!", isReason(ReasonInvalidReference), "not a valid image reference"},
		{"empty reference", "", isReason(ReasonInvalidReference), "not a valid image reference"},
		{"bad manifest", tr.ref(badManifest), isReason(ReasonBadManifest), "manifest"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			start := time.Now()
			m, err := NewInspector(10).Inspect(ctx, tc.ref, nil)
			if err == nil {
				t.Fatalf("no error, got %+v", m)
			}
			if !tc.check(err) {
				t.Errorf("wrong error type %T: %v", err, err)
			}
			if !strings.Contains(err.Error(), tc.contains) {
				t.Errorf("error does not mention %q: %v", tc.contains, err)
			}
			t.Logf("%v (%T, after %v)", err, err, time.Since(start).Round(time.Millisecond))
		})
	}
}

func isUnreachable(err error) bool {
	var ue *UnreachableError
	return errors.As(err, &ue)
}

func isReason(r InspectReason) func(error) bool {
	return func(err error) bool {
		var ie *InspectError
		return errors.As(err, &ie) && ie.Reason == r
	}
}

func TestFuncGoVersionOf(t *testing.T) {
	mod := func(path, version string, replace *debug.Module) *debug.Module {
		return &debug.Module{Path: path, Version: version, Replace: replace}
	}
	tests := []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"dependency", debug.BuildInfo{Deps: []*debug.Module{mod("github.com/rs/zerolog", "v1.32.0", nil), mod(FuncGoModule, "v0.21.3", nil)}}, "v0.21.3"},
		{"replaced by a fork version", debug.BuildInfo{Deps: []*debug.Module{mod(FuncGoModule, "v0.21.3", mod("github.com/fork/func-go", "v0.21.4-fork", nil))}}, "v0.21.4-fork"},
		{"replaced by a local directory", debug.BuildInfo{Deps: []*debug.Module{mod(FuncGoModule, "v0.21.3", mod("../func-go", "", nil))}}, "v0.21.3"},
		{"replaced by a directory, as go build records it", debug.BuildInfo{Deps: []*debug.Module{mod(FuncGoModule, "v0.20.0", mod("/src/func-go", "(devel)", nil))}}, "v0.20.0"},
		{"another module replaced by func-go", debug.BuildInfo{Deps: []*debug.Module{mod("example.com/mw", "v1.0.0", mod(FuncGoModule, "v0.22.0", nil))}}, "v0.22.0"},
		{"main module is func-go", debug.BuildInfo{Main: *mod(FuncGoModule, "v0.22.0", nil)}, "v0.22.0"},
		{"main module func-go in development", debug.BuildInfo{Main: *mod(FuncGoModule, "(devel)", nil)}, ""},
		{"no func-go", debug.BuildInfo{Deps: []*debug.Module{mod("github.com/rs/zerolog", "v1.32.0", nil)}}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := funcGoVersionOf(&tc.bi); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestFuncGoVersionOfRealBinaries(t *testing.T) {
	fn, hello := goBinaries(t)
	if got := funcGoVersion(fn); got != testFuncGoVersion {
		t.Errorf("function binary: got %q, want %q", got, testFuncGoVersion)
	}
	if got := funcGoVersion(hello); got != "" {
		t.Errorf("hello binary: got %q, want none", got)
	}
	if got := funcGoVersion([]byte("\x7fELF not really")); got != "" {
		t.Errorf("fake ELF: got %q", got)
	}
}

// TestErrors_503WithinRegistryTimeout: a registry that answers 503 is reported
// unreachable within the operator's default registryTimeout (2 s) and is tried
// three times, as go-containerregistry did before v0.21 (its default backoff since
// waits 1 s then 3 s, and the outage then read as a timeout; see retryBackoff).
func TestErrors_503WithinRegistryTimeout(t *testing.T) {
	var requests atomic.Int32
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	}))
	defer failing.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := NewInspector(10).Inspect(ctx, strings.TrimPrefix(failing.URL, "http://")+"/fn/x:v1", nil)
	if !isUnreachable(err) || !strings.Contains(err.Error(), "503") || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Inspect = %v, want unreachable (503) within 2s", err)
	}
	if n := requests.Load(); n < 3 {
		t.Errorf("%d requests, want each tried 3 times", n)
	}
}

package registry

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// ---------------------------------------------------------------------------
// Go binaries built once per test run from a throwaway module.

// funclib's TestFuncGoOfV044IsOutdated finds testFuncGoVersion and olderFuncGoVersion
// outdated: keep its copies in step.
const testFuncGoVersion = "v0.21.3"

var (
	binOnce      sync.Once
	binDir       string
	binErr       error
	binBuildTime time.Duration
	funcBinary   []byte // requires knative.dev/func-go testFuncGoVersion
	helloBinary  []byte // a Go binary without func-go
	// olderBinary requires knative.dev/func-go olderFuncGoVersion, which the module
	// proxy does not verify, replaced by the source of testFuncGoVersion: its build
	// info names the older version, as a function built long ago would.
	olderBinary []byte
)

const olderFuncGoVersion = "v0.20.0"

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir) // a temporary build directory: nothing to do if it stays
	}
	os.Exit(code)
}

// goBinaries returns the function binary (built with knative.dev/func-go)
// and a hello-world binary, building them on first use.
func goBinaries(t *testing.T) (fn, hello []byte) {
	t.Helper()
	binOnce.Do(buildBinaries)
	if binErr != nil {
		t.Fatalf("building test binaries: %v", binErr)
	}
	return funcBinary, helloBinary
}

func buildBinaries() {
	start := time.Now()
	defer func() { binBuildTime = time.Since(start) }()

	dir, err := os.MkdirTemp("", "registry-test-bins-")
	if err != nil {
		binErr = err
		return
	}
	binDir = dir
	files := map[string]string{
		"go.mod": "module example.com/fnbins\n\ngo 1.21\n\nrequire knative.dev/func-go " + testFuncGoVersion + "\n",
		"fn/main.go": `package main

import (
	"net/http"

	fhttp "knative.dev/func-go/http"
)

type handler struct{}

func (handler) Handle(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }

func main() {
	if err := fhttp.Start(handler{}); err != nil {
		panic(err)
	}
}
`,
		"hello/main.go": `package main

import "fmt"

func main() { fmt.Println("hello") }
`,
	}
	for p, content := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			binErr = err
			return
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			binErr = err
			return
		}
	}
	out := filepath.Join(dir, "out")
	cmd := exec.Command("go", "build", "-trimpath", "-o", out+string(filepath.Separator), "./fn", "./hello")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GOFLAGS=-mod=mod -buildvcs=false",
		"CGO_ENABLED=0",
		"GOWORK=off",
		"GOOS=linux",
		"GOARCH=amd64",
		"GOTOOLCHAIN=local",
	)
	if output, err := cmd.CombinedOutput(); err != nil {
		binErr = fmt.Errorf("go build: %v\n%s", err, output)
		return
	}
	if funcBinary, binErr = os.ReadFile(filepath.Join(out, "fn")); binErr != nil {
		return
	}
	if helloBinary, binErr = os.ReadFile(filepath.Join(out, "hello")); binErr != nil {
		return
	}
	olderBinary, binErr = buildOlder(dir, files["fn/main.go"], cmd.Env)
}

// buildOlder builds the function again in a module that requires olderFuncGoVersion
// and replaces it with the source of testFuncGoVersion in the module cache.
func buildOlder(dir, mainGo string, env []string) ([]byte, error) {
	list := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "knative.dev/func-go")
	list.Dir, list.Env = dir, env
	src, err := list.Output()
	if err != nil {
		return nil, fmt.Errorf("locating knative.dev/func-go: %w", err)
	}
	old := filepath.Join(dir, "older")
	goMod := "module example.com/olderfn\n\ngo 1.21\n\nrequire knative.dev/func-go " + olderFuncGoVersion +
		"\n\nreplace knative.dev/func-go " + olderFuncGoVersion + " => " + strings.TrimSpace(string(src)) + "\n"
	if err := os.MkdirAll(old, 0o755); err != nil {
		return nil, err
	}
	for file, content := range map[string]string{"go.mod": goMod, "main.go": mainGo} {
		if err := os.WriteFile(filepath.Join(old, file), []byte(content), 0o644); err != nil {
			return nil, err
		}
	}
	build := exec.Command("go", "build", "-trimpath", "-o", "fn", ".")
	build.Dir, build.Env = old, env
	if output, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build of the older function: %v\n%s", err, output)
	}
	return os.ReadFile(filepath.Join(old, "fn"))
}

// ---------------------------------------------------------------------------
// In-process registry.

const (
	testUser     = "builder"
	testPassword = "s3cr3t-Passw0rd-xyz"
)

// testRegistry is go-containerregistry's in-memory registry behind a handler
// that counts requests, can inject faults and, like a registry with htpasswd
// auth, challenges with Basic on /v2/ and on every path under /private/.
type testRegistry struct {
	srv  *httptest.Server
	host string

	requests atomic.Int64
	blobGets atomic.Int64

	mu       sync.Mutex
	log      []string                                          // "METHOD /path" of every request
	override func(w http.ResponseWriter, r *http.Request) bool // returns true when it answered
}

func newTestRegistry(t *testing.T) *testRegistry {
	t.Helper()
	tr := &testRegistry{}
	reg := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	tr.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tr.requests.Add(1)
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
			tr.blobGets.Add(1)
		}
		tr.mu.Lock()
		tr.log = append(tr.log, r.Method+" "+r.URL.Path)
		override := tr.override
		tr.mu.Unlock()

		user, pass, hasAuth := r.BasicAuth()
		if r.URL.Path == "/v2/" || strings.Contains(r.URL.Path, "/private/") || hasAuth {
			if !hasAuth || user != testUser || pass != testPassword {
				w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
				return
			}
		}
		if override != nil && override(w, r) {
			return
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(tr.srv.Close)
	tr.host = strings.TrimPrefix(tr.srv.URL, "http://")
	return tr
}

func (tr *testRegistry) setOverride(f func(w http.ResponseWriter, r *http.Request) bool) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.override = f
}

// mark returns the number of requests so far, to diff against later.
func (tr *testRegistry) mark() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return len(tr.log)
}

// since returns the requests made after mark.
func (tr *testRegistry) since(mark int) []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.log[mark:]...)
}

func (tr *testRegistry) ref(repoAndTag string) string { return tr.host + "/" + repoAndTag }

var pushAuth = remote.WithAuth(&authn.Basic{Username: testUser, Password: testPassword})

func (tr *testRegistry) push(t *testing.T, repoAndTag string, img v1.Image) v1.Hash {
	t.Helper()
	ref, err := name.ParseReference(tr.ref(repoAndTag))
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, pushAuth); err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func (tr *testRegistry) pushIndex(t *testing.T, repoAndTag string, idx v1.ImageIndex) v1.Hash {
	t.Helper()
	ref, err := name.ParseReference(tr.ref(repoAndTag))
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(ref, idx, pushAuth); err != nil {
		t.Fatalf("pushing index %s: %v", ref, err)
	}
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// ---------------------------------------------------------------------------
// Images.

type tarFile struct {
	name     string
	mode     int64
	body     []byte
	typeflag byte // tar.TypeReg when 0
	linkname string
}

// layer builds a gzip-compressed tar layer holding files.
func layer(t *testing.T, files ...tarFile) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		typ := f.typeflag
		if typ == 0 {
			typ = tar.TypeReg
		}
		mode := f.mode
		if mode == 0 {
			mode = 0o644
		}
		hdr := &tar.Header{
			Name:     f.name,
			Mode:     mode,
			Typeflag: typ,
			Linkname: f.linkname,
			ModTime:  time.Unix(0, 0),
		}
		if typ == tar.TypeReg {
			hdr.Size = int64(len(f.body))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if typ == tar.TypeReg {
			if _, err := tw.Write(f.body); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	// Compress once: given gzip data, tarball.LayerFromOpener uses it as is
	// instead of compressing again on every read (slow under -race).
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zw.Write(buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	data := gz.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

var (
	layerCacheMu sync.Mutex
	layerCache   = map[string]v1.Layer{}
)

// cachedLayer memoizes the layers every test uses.
func cachedLayer(key string, build func() v1.Layer) v1.Layer {
	layerCacheMu.Lock()
	defer layerCacheMu.Unlock()
	if l, ok := layerCache[key]; ok {
		return l
	}
	l := build()
	layerCache[key] = l
	return l
}

// image builds a linux image of the given architecture with labels and
// layers (bottom first).
func image(t *testing.T, arch string, labels map[string]string, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS = "linux"
	cf.Architecture = arch
	cf.Config.Labels = labels
	cf.Config.Entrypoint = []string{"/workspace/bin/function"}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func baseLayer(t *testing.T) v1.Layer {
	return cachedLayer("base", func() v1.Layer { return baseLayer1(t) })
}

func baseLayer1(t *testing.T) v1.Layer {
	return layer(t,
		tarFile{name: "etc/", typeflag: tar.TypeDir, mode: 0o755},
		tarFile{name: "etc/os-release", body: []byte("NAME=\"Test Linux\"\nID=test\n")},
		tarFile{name: "etc/passwd", body: []byte("root:x:0:0:root:/root:/sbin/nologin\n")},
		tarFile{name: "usr/share/doc/readme.txt", body: bytes.Repeat([]byte("not an executable\n"), 64)},
		tarFile{name: "bin/sh", typeflag: tar.TypeSymlink, linkname: "/bin/busybox"},
	)
}

func functionLayer(t *testing.T, fn []byte) v1.Layer {
	return cachedLayer(fmt.Sprintf("function-%x", sha256.Sum256(fn)), func() v1.Layer { return functionLayer1(t, fn) })
}

func functionLayer1(t *testing.T, fn []byte) v1.Layer {
	return layer(t,
		tarFile{name: "workspace/", typeflag: tar.TypeDir, mode: 0o755},
		tarFile{name: "workspace/bin/", typeflag: tar.TypeDir, mode: 0o755},
		tarFile{name: "workspace/README.md", body: []byte("# my function\n")},
		tarFile{name: "workspace/run.sh", mode: 0o755, body: []byte("#!/bin/sh\nexec /workspace/bin/function\n")},
		// Starts like an ELF file but is none: must be skipped, not fail the scan.
		tarFile{name: "workspace/bin/fake", mode: 0o755, body: append([]byte("\x7fELF"), bytes.Repeat([]byte{0}, 200)...)},
		tarFile{name: "workspace/bin/function", mode: 0o755, body: fn},
	)
}

func helloLayer(t *testing.T, hello []byte) v1.Layer {
	return cachedLayer(fmt.Sprintf("hello-%x", sha256.Sum256(hello)), func() v1.Layer { return helloLayer1(t, hello) })
}

func helloLayer1(t *testing.T, hello []byte) v1.Layer {
	return layer(t,
		tarFile{name: "usr/local/bin/healthcheck", mode: 0o755, body: hello},
	)
}

// goFunctionImage is a linux/amd64 Go function image without the label: base
// layer, function layer, and on top a layer with another Go binary without
// func-go, which the scan meets (and must skip) first.
func goFunctionImage(t *testing.T) v1.Image {
	fn, hello := goBinaries(t)
	return image(t, "amd64", nil, baseLayer(t), functionLayer(t, fn), helloLayer(t, hello))
}

func layerDigest(t *testing.T, l v1.Layer) v1.Hash {
	t.Helper()
	d, err := l.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

package registry

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/fnops/func-operator/pkg/netguard"
)

// zeros reads n zero bytes without holding them.
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	if z.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > z.n {
		p = p[:z.n]
	}
	clear(p)
	z.n -= int64(len(p))
	return len(p), nil
}

func TestReadBuildInfo_Streams(t *testing.T) {
	fn, hello := goBinaries(t)
	tests := []struct {
		name    string
		r       func() io.Reader
		max     int64
		want    string
		wantErr error
	}{
		{name: "a function binary", r: func() io.Reader { return bytes.NewReader(fn) }, max: 1 << 20, want: testFuncGoVersion},
		{name: "padded with 300 MiB of zeros before it", r: func() io.Reader {
			return io.MultiReader(bytes.NewReader(fn[:4]), &zeros{n: 300 << 20}, bytes.NewReader(fn[4:]))
		}, max: 1 << 20, want: testFuncGoVersion},
		{name: "the magic across a window boundary", r: func() io.Reader {
			i := bytes.Index(fn, buildInfoMagic)
			return io.MultiReader(&zeros{n: int64(scanWindow - 5 - i%scanWindow)}, bytes.NewReader(fn))
		}, max: 1 << 20, want: testFuncGoVersion},
		{name: "a Go binary without func-go", r: func() io.Reader { return bytes.NewReader(hello) }, max: 1 << 20, want: ""},
		{name: "build information larger than the cap", r: func() io.Reader { return bytes.NewReader(fn) }, max: 64, wantErr: errModInfoTooLarge},
		{name: "a magic with a huge declared length", r: func() io.Reader {
			return bytes.NewReader(append(append([]byte("\x7fELF"), buildInfoMagic...), "\x08\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff\x7f"...))
		}, max: 1 << 20, wantErr: errModInfoTooLarge},
		{name: "truncated after the magic", r: func() io.Reader { return bytes.NewReader(append([]byte("\x7fELF"), buildInfoMagic...)) }, max: 1 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			bi, err := readBuildInfo(tt.r(), tt.max)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			got := ""
			if bi != nil {
				got = funcGoVersionOf(bi)
			}
			if got != tt.want {
				t.Errorf("version %q, want %q", got, tt.want)
			}
			// A window and the build information, whatever the size of the file.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 2<<20 {
				t.Errorf("allocated %d bytes, want under 2 MiB", alloc)
			}
		})
	}
}

func TestInspect_Limits(t *testing.T) {
	tr := newTestRegistry(t)
	fn, _ := goBinaries(t)
	tr.push(t, "fn/go:v1", goFunctionImage(t))
	padded := append(append([]byte(nil), fn...), make([]byte, 8<<20)...)
	tr.push(t, "fn/padded:v1", image(t, "amd64", nil, baseLayer(t), functionLayer(t, padded)))
	bigConfig, err := mutate.Config(goFunctionImage(t), v1.Config{Env: []string{"PAD=" + strings.Repeat("c", 2<<20)}})
	if err != nil {
		t.Fatal(err)
	}
	tr.push(t, "fn/bigconfig:v1", bigConfig)

	tests := []struct {
		name   string
		ref    string
		limits Limits
		want   string // the version, when there is no error
		err    string // in the error
	}{
		{name: "within the limits (positive control)", ref: "fn/go:v1", limits: Limits{MaxMemory: 1 << 20, MaxBytes: 64 << 20}, want: testFuncGoVersion},
		{name: "a padded executable is streamed, not held", ref: "fn/padded:v1", limits: Limits{MaxMemory: 1 << 20, MaxBytes: 64 << 20}, want: testFuncGoVersion},
		{name: "layers over inspectMaxBytes", ref: "fn/padded:v1", limits: Limits{MaxMemory: 1 << 20, MaxBytes: 4 << 20}, err: "inspectMaxBytes"},
		{name: "a config over inspectMaxMemory", ref: "fn/bigconfig:v1", limits: Limits{MaxMemory: 1 << 20, MaxBytes: 64 << 20}, err: "inspectMaxMemory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i := NewInspector(10)
			i.Limits = func() Limits { return tt.limits }
			m, err := i.Inspect(testCtx(t), tr.ref(tt.ref), nil)
			if tt.err == "" {
				if err != nil || m.Version != tt.want {
					t.Fatalf("got %+v, %v; want version %s", m, err, tt.want)
				}
				return
			}
			var ie *InspectError
			if !errors.As(err, &ie) || ie.Reason != ReasonTooLarge || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("got %v, want an InspectError %s naming %s", err, ReasonTooLarge, tt.err)
			}
		})
	}
}

func TestInspect_ManifestOverTheMemoryCap(t *testing.T) {
	tr := newTestRegistry(t)
	tr.push(t, "fn/go:v1", goFunctionImage(t))
	// A registry that answers a manifest of 8 MiB.
	tr.setOverride(func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.Contains(r.URL.Path, "/manifests/") {
			return false
		}
		w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
		w.Header().Set("Docker-Content-Digest", "sha256:"+strings.Repeat("0", 64))
		if r.Method == http.MethodHead {
			return true
		}
		_, _ = io.WriteString(w, `{"schemaVersion":2,"x":"`+strings.Repeat("m", 8<<20)+`"}`)
		return true
	})
	guard := netguard.New(mustPolicy(t))
	i := NewInspector(10, remote.WithTransport(guard.Transport(0)))
	i.Limits = func() Limits { return Limits{MaxMemory: 1 << 20, MaxBytes: 64 << 20} }
	_, err := i.Inspect(testCtx(t), tr.ref("fn/go:v1"), nil)
	var ie *InspectError
	if !errors.As(err, &ie) || ie.Reason != ReasonTooLarge {
		t.Fatalf("got %v, want an InspectError %s", err, ReasonTooLarge)
	}
}

func TestInspect_HostNotAllowed(t *testing.T) {
	tr := newTestRegistry(t)
	tr.push(t, "fn/go:v1", goFunctionImage(t))
	guard := netguard.New(mustPolicy(t, tr.host))
	i := NewInspector(10, remote.WithTransport(guard.Transport(0)))
	before := tr.requests.Load()
	_, err := i.Inspect(testCtx(t), tr.ref("fn/go:v1"), nil)
	var ie *InspectError
	if !errors.As(err, &ie) || ie.Reason != ReasonHostNotAllowed || !strings.Contains(err.Error(), "host not allowed: 127.0.0.1") {
		t.Fatalf("got %v, want an InspectError %s", err, ReasonHostNotAllowed)
	}
	if n := tr.requests.Load() - before; n != 0 {
		t.Errorf("the refused registry got %d requests, want none", n)
	}
	// Positive control: allowed, through the same transport.
	guard.SetPolicy(mustPolicy(t))
	if m, err := i.Inspect(testCtx(t), tr.ref("fn/go:v1"), nil); err != nil || m.Version != testFuncGoVersion {
		t.Fatalf("allowed: got %+v, %v", m, err)
	}
}

func mustPolicy(t *testing.T, deny ...string) *netguard.Policy {
	t.Helper()
	p, err := netguard.NewPolicy(nil, deny, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestInspect_TooLargeNotReadAgain: an image over the limits is refused from then
// on without its layers being read again, under the same limits; larger limits
// read it again.
func TestInspect_TooLargeNotReadAgain(t *testing.T) {
	tr := newTestRegistry(t)
	fn, _ := goBinaries(t)
	padded := append(append([]byte(nil), fn...), make([]byte, 8<<20)...)
	tr.push(t, "fn/padded:v1", image(t, "amd64", nil, baseLayer(t), functionLayer(t, padded)))
	limits := Limits{MaxMemory: 1 << 20, MaxBytes: 4 << 20}
	i := NewInspector(10)
	i.Limits = func() Limits { return limits }
	for n := 0; n < 2; n++ {
		before := tr.blobGets.Load()
		_, err := i.Inspect(testCtx(t), tr.ref("fn/padded:v1"), nil)
		var ie *InspectError
		if !errors.As(err, &ie) || ie.Reason != ReasonTooLarge || !strings.Contains(err.Error(), tr.ref("fn/padded:v1")) {
			t.Fatalf("inspection %d: got %v, want an InspectError %s naming the reference", n+1, err, ReasonTooLarge)
		}
		if got := tr.blobGets.Load() - before; (n == 0) != (got > 0) {
			t.Errorf("inspection %d read %d blobs; want some the first time only", n+1, got)
		}
	}
	limits.MaxBytes = 64 << 20
	if m, err := i.Inspect(testCtx(t), tr.ref("fn/padded:v1"), nil); err != nil || m.Version != testFuncGoVersion {
		t.Fatalf("with larger limits: got %+v, %v; want version %s", m, err, testFuncGoVersion)
	}
}

// TestInspect_HostileMetadata: what an image says is bounded too: paths its layers
// name (kept to resolve whiteouts), and the version it claims.
func TestInspect_HostileMetadata(t *testing.T) {
	tr := newTestRegistry(t)
	var files []tarFile
	for i := 0; i < 3000; i++ {
		files = append(files, tarFile{name: fmt.Sprintf("%s/%04d", strings.Repeat("d", 400), i), body: []byte("x")})
	}
	tr.push(t, "fn/paths:v1", image(t, "amd64", nil, layer(t, files...)))
	tr.push(t, "fn/label:v1", image(t, "amd64", map[string]string{LabelMiddlewareVersion: "v1." + strings.Repeat("9", 200)}, baseLayer(t)))
	tr.push(t, "fn/ok:v1", image(t, "amd64", map[string]string{LabelMiddlewareVersion: "v0.22.0"}, layer(t, files[:100]...)))

	i := NewInspector(10)
	i.Limits = func() Limits { return Limits{MaxMemory: 1 << 20, MaxBytes: 64 << 20} }
	for _, tc := range []struct {
		ref    string
		reason InspectReason
		says   string
	}{
		{"fn/paths:v1", ReasonTooLarge, "more than 1048576 bytes of paths"},
		{"fn/label:v1", ReasonBadManifest, "203 bytes long: not a version"},
	} {
		_, err := i.Inspect(testCtx(t), tr.ref(tc.ref), nil)
		var ie *InspectError
		if !errors.As(err, &ie) || ie.Reason != tc.reason || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: got %v, want %s saying %q", tc.ref, err, tc.reason, tc.says)
		}
	}
	// Positive control: a sane image under the same limits.
	if m, err := i.Inspect(testCtx(t), tr.ref("fn/ok:v1"), nil); err != nil || m.Version != "v0.22.0" {
		t.Errorf("fn/ok:v1: got %+v, %v", m, err)
	}
}

// TestInspect_TooLargeKeptPerRepository: a bomb served under an image's digests by
// one repository does not make that digest too large in another.
func TestInspect_TooLargeKeptPerRepository(t *testing.T) {
	tr := newTestRegistry(t)
	fn, _ := goBinaries(t)
	img := image(t, "amd64", nil, baseLayer(t), functionLayer(t, append(append([]byte(nil), fn...), make([]byte, 8<<20)...)))
	tr.push(t, "tenant-a/fn:v1", img)
	tr.push(t, "tenant-b/fn:v1", img)
	i := NewInspector(10)
	i.Limits = func() Limits { return Limits{MaxMemory: 1 << 20, MaxBytes: 4 << 20} }
	if _, err := i.Inspect(testCtx(t), tr.ref("tenant-a/fn:v1"), nil); err == nil {
		t.Fatal("tenant-a: no error, want TooLarge")
	}
	before := tr.blobGets.Load()
	_, err := i.Inspect(testCtx(t), tr.ref("tenant-b/fn:v1"), nil)
	if err == nil || tr.blobGets.Load() == before {
		t.Errorf("tenant-b: %v after %d blob reads; want its own read, not tenant-a's verdict", err, tr.blobGets.Load()-before)
	}
}

package registrytest_test

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"io"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/fnops/func-operator/test/registrytest"
)

// pullLayer pulls ref and returns its one layer, checking the reference is by
// digest and the config's diffID is the layer's.
func pullLayer(t *testing.T, ref string) v1.Layer {
	t.Helper()
	d, err := name.NewDigest(ref)
	if err != nil {
		t.Fatalf("reference %s is not by digest: %v", ref, err)
	}
	img, err := remote.Image(d)
	if err != nil {
		t.Fatalf("pulling %s: %v", ref, err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers of %s: %d, %v; want 1", ref, len(layers), err)
	}
	return layers[0]
}

// readEntry reads the layer's one tar entry, hashing the whole uncompressed
// stream, and returns the entry's header, its first bytes (up to keep) and how
// many bytes it held; it fails unless the stream hashes to diffID.
func readEntry(t *testing.T, l v1.Layer, keep int64) (*tar.Header, []byte, int64) {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	h := sha256.New()
	tr := tar.NewReader(io.TeeReader(rc, h))
	hdr, err := tr.Next()
	if err != nil {
		t.Fatalf("tar header: %v", err)
	}
	var head bytes.Buffer
	n, err := io.Copy(&head, io.LimitReader(tr, keep))
	if err == nil {
		var rest int64
		rest, err = io.Copy(io.Discard, tr)
		n += rest
	}
	if err != nil {
		t.Fatalf("reading %s: %v", hdr.Name, err)
	}
	if next, err := tr.Next(); err != io.EOF {
		t.Fatalf("after %s: %v, %v; want the end of the archive", hdr.Name, next, err)
	}
	if _, err := io.Copy(io.Discard, io.TeeReader(rc, h)); err != nil {
		t.Fatal(err)
	}
	diffID, err := l.DiffID()
	if err != nil {
		t.Fatal(err)
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != diffID.String() {
		t.Fatalf("uncompressed stream hashes to %s, diffID is %s", got, diffID)
	}
	return hdr, head.Bytes(), n
}

func TestPushZipBomb(t *testing.T) {
	reg := registrytest.Start(t)
	start := time.Now()
	ref := reg.PushZipBomb(t, "bomb", 1)
	pushed := time.Since(start)
	start = time.Now()
	reg.PushZipBomb(t, "bomb2", 1) // the layer is cached
	again := time.Since(start)

	served := reg.BytesServed()
	l := pullLayer(t, ref)
	size, err := l.Size()
	if err != nil {
		t.Fatal(err)
	}
	if size > 2<<20 {
		t.Fatalf("compressed layer of %d bytes, want at most 2 MiB", size)
	}
	start = time.Now()
	hdr, _, n := readEntry(t, l, 0)
	if hdr.Name != registrytest.BombPath || hdr.Typeflag != tar.TypeReg || hdr.Size != 1<<30 || n != 1<<30 {
		t.Fatalf("entry %s (type %q) declares %d bytes and holds %d; want %s, regular, 1 GiB", hdr.Name, hdr.Typeflag, hdr.Size, n, registrytest.BombPath)
	}
	pulled := reg.BytesServed() - served
	if pulled < size || pulled > size+64<<10 {
		t.Fatalf("pulling served %d bytes, want the %d of the layer and a little", pulled, size)
	}
	t.Logf("push %v (cached layer: %v); %d bytes compressed, %d served, expand to %d in %v",
		pushed, again, size, pulled, n, time.Since(start))
}

// elfCheck pushes an image with PushPaddedFuncGoELF (funcGo) or PushPaddedELF,
// pulls it and checks its executable: padded with padMiB MiB, compressed small,
// and with build info that requires func-go FuncGoVersion when funcGo.
func elfCheck(t *testing.T, funcGo bool, padMiB int) {
	t.Helper()
	reg := registrytest.Start(t)
	push, wantFuncGo := reg.PushPaddedELF, ""
	if funcGo {
		push, wantFuncGo = reg.PushPaddedFuncGoELF, registrytest.FuncGoVersion
	}
	start := time.Now()
	ref := push(t, "elf", padMiB)
	pushed := time.Since(start)
	l := pullLayer(t, ref)
	size, err := l.Size()
	if err != nil {
		t.Fatal(err)
	}
	hdr, exe, n := readEntry(t, l, 64<<20)
	pad := int64(padMiB) << 20
	if hdr.Name != registrytest.ELFPath || hdr.Mode != 0o755 || n != hdr.Size || hdr.Size < pad+512<<10 || hdr.Size > pad+16<<20 {
		t.Fatalf("entry %s (mode %o) declares %d bytes and holds %d; want %s, 0755, %d MiB and a Go executable",
			hdr.Name, hdr.Mode, hdr.Size, n, registrytest.ELFPath, padMiB)
	}
	if size > 8<<20 || (padMiB > 0 && size > hdr.Size/4) {
		t.Fatalf("compressed layer of %d bytes for a file of %d", size, hdr.Size)
	}
	if !bytes.HasPrefix(exe, []byte("\x7fELF")) {
		t.Fatalf("file starts with %q, want an ELF header", exe[:4])
	}
	bi, err := buildinfo.Read(bytes.NewReader(exe))
	if err != nil {
		t.Fatalf("reading the build info: %v", err)
	}
	got := ""
	for _, d := range bi.Deps {
		if d.Path == "knative.dev/func-go" {
			got = d.Version
		}
	}
	if got != wantFuncGo {
		t.Fatalf("build info requires func-go %q, want %q (deps %v)", got, wantFuncGo, bi.Deps)
	}
	t.Logf("push %v (build included when first); file of %d bytes, layer of %d bytes compressed", pushed, hdr.Size, size)
}

func TestPushPaddedELF(t *testing.T) {
	for _, tc := range []struct {
		name   string
		funcGo bool
		padMiB int
	}{
		{"no dependencies, no padding", false, 0},
		{"no dependencies, 256 MiB", false, 256},
		{"func-go, no padding", true, 0},
		{"func-go, 256 MiB", true, 256},
	} {
		t.Run(tc.name, func(t *testing.T) { elfCheck(t, tc.funcGo, tc.padMiB) })
	}
}

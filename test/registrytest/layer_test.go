package registrytest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"testing"
)

// TestTarFileOver8GiB checks the header of an entry too large for USTAR (a PAX
// header then) declares the full size, and the segments add up to whole blocks.
func TestTarFileOver8GiB(t *testing.T) {
	const size = 9 << 30
	segs, err := tarFile(BombPath, 0o644, size, nil)
	if err != nil {
		t.Fatal(err)
	}
	hdr, err := tar.NewReader(bytes.NewReader(segs[0].data)).Next()
	if err != nil {
		t.Fatalf("reading the header: %v", err)
	}
	if hdr.Name != BombPath || hdr.Size != size || hdr.Typeflag != tar.TypeReg {
		t.Fatalf("header = %s, %d bytes, type %q; want %s, %d bytes, regular", hdr.Name, hdr.Size, hdr.Typeflag, BombPath, int64(size))
	}
	if total := int64(len(segs[0].data)) + segs[0].zeros; total%512 != 0 || segs[0].zeros != size+1024 {
		t.Fatalf("stream of %d bytes with %d zeros; want whole blocks and %d zeros", total, segs[0].zeros, int64(size+1024))
	}
}

// TestSyntheticLayer checks the compressed form expands, through Go's gzip
// reader, to exactly the uncompressed stream, whose hash is the diffID.
func TestSyntheticLayer(t *testing.T) {
	head := []byte("\x7fELF and more")
	segs, err := tarFile("f", 0o755, zeroChunk*2+1000, head) // two full zero members and a partial one
	if err != nil {
		t.Fatal(err)
	}
	l, err := newSyntheticLayer(segs...)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(l.compressed))
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	n, err := io.Copy(h, zr)
	if err != nil {
		t.Fatalf("gunzip: %v", err)
	}
	if n != l.size || "sha256:"+hex.EncodeToString(h.Sum(nil)) != l.diffID.String() {
		t.Fatalf("gunzipped %d bytes, sha256 %x; want %d bytes, %s", n, h.Sum(nil), l.size, l.diffID)
	}
	rc, _ := l.Uncompressed()
	tr := tar.NewReader(rc)
	hdr, err := tr.Next()
	if err != nil || hdr.Size != zeroChunk*2+1000 {
		t.Fatalf("entry: %+v, %v", hdr, err)
	}
	body, err := io.ReadAll(tr)
	if err != nil || !bytes.HasPrefix(body, head) || int64(len(body)) != hdr.Size {
		t.Fatalf("body of %d bytes (%v), want %d starting with %q", len(body), err, hdr.Size, head)
	}
	if _, err := tr.Next(); err != io.EOF {
		t.Fatalf("after the entry: %v, want io.EOF", err)
	}
}

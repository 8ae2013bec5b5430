package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/fnops/func-operator/pkg/netguard"
)

// DigestMismatchError is a layer whose bytes, as the registry served them, are
// not the blob its manifest names: another digest, or another size. A verdict is
// never drawn from such a layer: a registry could otherwise serve a copy of
// someone else's manifest and config with a layer of its own making.
type DigestMismatchError struct {
	Want     v1.Hash
	WantSize int64
	Got      string // the sha256 of what was served, "" when it was shorter
	GotSize  int64
}

func (e *DigestMismatchError) Error() string {
	if e.Got == "" {
		return fmt.Sprintf("the registry served %d bytes of blob %s, whose manifest declares %d: not the blob", e.GotSize, e.Want, e.WantSize)
	}
	return fmt.Sprintf("the registry served bytes that hash to %s, not to the digest %s the manifest names", e.Got, e.Want)
}

// layerBlob reads the compressed stream of one layer and checks it against the
// layer's digest and size. go-containerregistry verifies a remote layer when its
// stream reaches its end, but only there, and with an error of an internal type:
// a scan that stops at the build information it looks for never gets there, so
// the rest is drained (drain), and the stream is hashed here too, so that a
// mismatch reads as one (DigestMismatchError) and not as any failed read.
type layerBlob struct {
	rc   io.ReadCloser
	want v1.Hash
	size int64

	h        hash.Hash
	n        int64
	mismatch error
}

// openLayerBlob opens l's compressed stream.
func openLayerBlob(l v1.Layer) (*layerBlob, error) {
	want, err := l.Digest()
	if err != nil {
		return nil, err
	}
	size, err := l.Size()
	if err != nil {
		return nil, err
	}
	if want.Algorithm != "sha256" {
		return nil, fmt.Errorf("layer digest %s: only sha256 is supported", want)
	}
	rc, err := l.Compressed()
	if err != nil {
		return nil, err
	}
	return &layerBlob{rc: rc, want: want, size: size, h: sha256.New()}, nil
}

func (b *layerBlob) Read(p []byte) (int, error) {
	if b.mismatch != nil {
		return 0, b.mismatch
	}
	n, err := b.rc.Read(p)
	b.h.Write(p[:n])
	b.n += int64(n)
	if err != nil {
		b.check(err)
		if b.mismatch != nil {
			return n, b.mismatch
		}
	}
	return n, err
}

// check looks at the stream once it ended (err is what ended it): a stream that
// ended cleanly, or that go-containerregistry failed when it reached the declared
// size, must hash to the digest; one that ended short for another reason than a
// network failure was shorter than the blob (go-containerregistry's size check).
func (b *layerBlob) check(err error) {
	switch {
	case err == io.EOF || b.n >= b.size:
		got := "sha256:" + hex.EncodeToString(b.h.Sum(nil))
		if b.n == b.size && got == b.want.String() {
			return
		}
		dm := &DigestMismatchError{Want: b.want, WantSize: b.size, GotSize: b.n}
		if b.n >= b.size {
			dm.Got = got
		}
		b.mismatch = dm
	case !isNetworkError(err) && !errors.Is(err, io.ErrUnexpectedEOF) && !netguard.IsTooLarge(err):
		b.mismatch = &DigestMismatchError{Want: b.want, WantSize: b.size, GotSize: b.n}
	}
}

// drain reads what is left of the stream, counting it against the image's byte
// budget, so that the whole blob is checked against its digest; it returns the
// mismatch when the blob is not the one named.
func (b *layerBlob) drain(s *scanState) error {
	_, err := io.Copy(io.Discard, countingReader{r: b, s: s})
	if b.mismatch != nil {
		return b.mismatch
	}
	return err
}

// verified returns the mismatch seen so far, if any: a read that failed on the
// way may have failed because the blob was not the one named.
func (b *layerBlob) verified() error { return b.mismatch }

func (b *layerBlob) Close() error { return b.rc.Close() }

// uncompressed returns the layer's uncompressed stream read from b, as
// go-containerregistry would decompress it (gzip, zstd, or none).
func (b *layerBlob) uncompressed(mt types.MediaType) (io.ReadCloser, error) {
	l, err := partial.CompressedToLayer(openedBlob{b: b, mt: mt})
	if err != nil {
		return nil, err
	}
	return l.Uncompressed()
}

// openedBlob is a partial.CompressedLayer whose stream is b, already open.
type openedBlob struct {
	b  *layerBlob
	mt types.MediaType
}

func (o openedBlob) Digest() (v1.Hash, error)            { return o.b.want, nil }
func (o openedBlob) Size() (int64, error)                { return o.b.size, nil }
func (o openedBlob) MediaType() (types.MediaType, error) { return o.mt, nil }
func (o openedBlob) Compressed() (io.ReadCloser, error)  { return io.NopCloser(o.b), nil }

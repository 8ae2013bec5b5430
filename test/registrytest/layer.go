package registrytest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"sync"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// zeroChunk is the run of zeros one gzip member of a synthetic layer expands
// to; deflate shrinks zeros about 1000:1, so 8 MiB compress to about 8 KiB.
const zeroChunk = 8 << 20

// zeroMember returns the gzip member of zeroChunk zeros, compressed once.
var zeroMember = sync.OnceValue(func() []byte { return gzipBytes(make([]byte, zeroChunk)) })

// segment is a run of a synthetic layer's uncompressed tar stream: data, then
// zeros zero bytes.
type segment struct {
	data  []byte
	zeros int64
}

// syntheticLayer is a gzip-compressed docker layer made of segments. Its
// compressed form is a concatenation of gzip members (one per data, one per
// zeroChunk of zeros), which gzip readers read as one stream; its uncompressed
// form is streamed and never held, so a layer may expand to many GiB.
type syntheticLayer struct {
	segs       []segment
	compressed []byte
	digest     v1.Hash // of compressed
	diffID     v1.Hash // of the uncompressed stream
	size       int64   // of the uncompressed stream
}

var _ v1.Layer = (*syntheticLayer)(nil)

// newSyntheticLayer compresses segs and hashes their expansion (about 0.7 s per GiB).
func newSyntheticLayer(segs ...segment) (*syntheticLayer, error) {
	l := &syntheticLayer{segs: segs}
	var buf bytes.Buffer
	for _, s := range segs {
		if len(s.data) > 0 {
			buf.Write(gzipBytes(s.data))
		}
		for left := s.zeros; left > 0; left -= zeroChunk {
			if left >= zeroChunk {
				buf.Write(zeroMember())
			} else {
				buf.Write(gzipBytes(make([]byte, left)))
			}
		}
	}
	l.compressed = buf.Bytes()
	var err error
	if l.digest, _, err = v1.SHA256(bytes.NewReader(l.compressed)); err != nil {
		return nil, err
	}
	rc, _ := l.Uncompressed()
	if l.diffID, l.size, err = v1.SHA256(rc); err != nil {
		return nil, err
	}
	return l, nil
}

// tarFile returns the segments of a tar stream holding one regular file name
// of size bytes that starts with head and continues with zeros, the stream's
// padding and end-of-archive blocks included.
func tarFile(name string, mode, size int64, head []byte) ([]segment, error) {
	if int64(len(head)) > size {
		return nil, fmt.Errorf("tar entry %s: head of %d bytes exceeds its size %d", name, len(head), size)
	}
	var hdr bytes.Buffer
	tw := tar.NewWriter(&hdr)
	if err := tw.WriteHeader(&tar.Header{
		Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: size, ModTime: time.Unix(0, 0),
	}); err != nil {
		return nil, fmt.Errorf("tar header of %s: %w", name, err)
	}
	// Not tw.Close: it would complain of the missing content. The header's blocks are in hdr.
	padding := (512 - size%512) % 512
	return []segment{{data: append(hdr.Bytes(), head...), zeros: size - int64(len(head)) + padding + 2*512}}, nil
}

// Digest returns the sha256 of the compressed layer.
func (l *syntheticLayer) Digest() (v1.Hash, error) { return l.digest, nil }

// DiffID returns the sha256 of the uncompressed layer.
func (l *syntheticLayer) DiffID() (v1.Hash, error) { return l.diffID, nil }

// Size returns the compressed size.
func (l *syntheticLayer) Size() (int64, error) { return int64(len(l.compressed)), nil }

// MediaType returns the docker gzip layer type (the base image's manifest is docker's).
func (l *syntheticLayer) MediaType() (types.MediaType, error) { return types.DockerLayer, nil }

// Compressed returns the concatenated gzip members.
func (l *syntheticLayer) Compressed() (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(l.compressed)), nil
}

// Uncompressed streams the tar stream the layer expands to.
func (l *syntheticLayer) Uncompressed() (io.ReadCloser, error) {
	readers := make([]io.Reader, 0, 2*len(l.segs))
	for _, s := range l.segs {
		readers = append(readers, bytes.NewReader(s.data), io.LimitReader(zeroReader{}, s.zeros))
	}
	return io.NopCloser(io.MultiReader(readers...)), nil
}

// zeroReader reads endless zeros.
type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// gzipBytes compresses b into one gzip member at the best compression.
func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression) // the level is valid
	_, _ = zw.Write(b)                                       // writes to a bytes.Buffer do not fail
	_ = zw.Close()
	return buf.Bytes()
}

package registry

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"runtime/debug"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

var elfMagic = []byte("\x7fELF")

// minELFSize is the size of the smallest ELF header (32-bit).
const minELFSize = 52

const (
	whiteoutPrefix = ".wh."
	whiteoutOpaque = ".wh..wh..opq"
)

// scanState carries what upper layers hide from lower ones, and the byte
// budget, across the layers of one image.
type scanState struct {
	hidden map[string]bool // paths deleted (whiteout) or replaced by a non-directory in an upper layer
	opaque map[string]bool // directories made opaque in an upper layer
	left   int64           // uncompressed layer bytes that may still be read
	limit  int64           // what left started at
	memory int64           // the most build information held, and of paths kept
	paths  int64           // bytes of the paths kept in hidden, opaque and a layer's lists
}

// keep counts p against the memory budget of the paths an image's layers hide.
func (s *scanState) keep(p string) error {
	if s.paths += int64(len(p)); s.paths > s.memory {
		return &TooLargeError{What: fmt.Sprintf("the layers name more than %d bytes of paths, the most the operator keeps of an image (ConfigMap key inspectMaxMemory)", s.memory)}
	}
	return nil
}

// TooLargeError is an image whose reading would cost more than the operator's
// limits allow.
type TooLargeError struct{ What string }

func (e *TooLargeError) Error() string { return e.What }

// countingReader fails reads once the layers of one image pass their budget.
type countingReader struct {
	r io.Reader
	s *scanState
}

func (c countingReader) Read(p []byte) (int, error) {
	if c.s.left <= 0 {
		return 0, &TooLargeError{What: fmt.Sprintf("the layers expand to more than %d bytes, the most the operator reads of an image (ConfigMap key inspectMaxBytes)", c.s.limit)}
	}
	if int64(len(p)) > c.s.left {
		p = p[:c.s.left]
	}
	n, err := c.r.Read(p)
	c.s.left -= int64(n)
	return n, err
}

func (s *scanState) isHidden(p string) bool {
	if s.hidden[p] {
		return true
	}
	for dir := path.Dir(p); dir != "." && dir != "/"; dir = path.Dir(dir) {
		if s.hidden[dir] || s.opaque[dir] {
			return true
		}
	}
	return false
}

// scanLayers reads the layers of img, top layer first, and returns the
// knative.dev/func-go version recorded in the build info of the first Go
// executable that depends on it ("" when none does). Layers are streamed;
// only one candidate executable at a time is held in memory.
func (i *Inspector) scanLayers(ctx context.Context, img v1.Image, what string, lim Limits, ec *errContext) (string, error) {
	layers, err := img.Layers()
	if err != nil {
		return "", ec.classify(err, ReasonBadManifest, "layers of "+what)
	}
	select {
	case i.scanSlots <- struct{}{}:
		defer func() { <-i.scanSlots }()
	case <-ctx.Done():
		return "", ec.classify(ctx.Err(), ReasonLayerRead, "layers of "+what)
	}

	s := &scanState{hidden: map[string]bool{}, opaque: map[string]bool{}, left: lim.MaxBytes, limit: lim.MaxBytes, memory: lim.MaxMemory}
	seen := map[v1.Hash]bool{}
	for n := len(layers) - 1; n >= 0; n-- {
		l := layers[n]
		d, err := l.Digest()
		if err != nil {
			return "", ec.classify(err, ReasonBadManifest, fmt.Sprintf("layer %d of %s", n, what))
		}
		lwhat := fmt.Sprintf("layer %d (%s) of %s", n, d, what)
		if seen[d] {
			continue
		}
		seen[d] = true
		if mt, err := l.MediaType(); err == nil && !mt.IsLayer() {
			continue // not a filesystem layer (e.g. an artifact blob)
		}
		version, err := i.scanLayer(ctx, l, s)
		if err != nil {
			return "", ec.classify(err, ReasonLayerRead, lwhat)
		}
		if version != "" {
			return version, nil
		}
	}
	return "", nil
}

// scanLayer streams one layer, counting its uncompressed bytes against the
// budget, and checks the layer against its digest before anything read from it
// is used: a scan that stops early (at the build information, or at the end of
// the tar archive) drains the rest of the compressed stream, within the same
// budget and context, so that the whole blob is hashed.
func (i *Inspector) scanLayer(ctx context.Context, l v1.Layer, s *scanState) (version string, err error) {
	blob, err := openLayerBlob(l)
	if err != nil {
		return "", err
	}
	defer func() { _ = blob.Close() }()
	mt, err := l.MediaType()
	if err != nil {
		return "", err
	}
	rc, err := blob.uncompressed(mt)
	if err != nil {
		if v := blob.verified(); v != nil {
			return "", v
		}
		return "", err
	}
	version, hides, opaques, err := readLayer(ctx, rc, s)
	// Closed before draining: a decompressor may read ahead from the blob.
	_ = rc.Close()
	if v := blob.verified(); v != nil {
		return "", v // a failed read of a blob that is not the one named says so
	}
	if err != nil {
		return "", err
	}
	if err := blob.drain(s); err != nil {
		return "", err
	}
	if version != "" {
		return version, nil
	}
	for _, h := range hides {
		s.hidden[h] = true
	}
	for _, o := range opaques {
		s.opaque[o] = true
	}
	return "", nil
}

// readLayer reads the tar stream of one layer until the build information of an
// executable that depends on FuncGoModule, or its end. It returns the version
// found, or the paths the layer hides from the layers below it.
func readLayer(ctx context.Context, rc io.Reader, s *scanState) (version string, hides, opaques []string, err error) {
	tr := tar.NewReader(countingReader{r: rc, s: s})
	magic := make([]byte, len(elfMagic))
	for {
		if err := ctx.Err(); err != nil {
			return "", nil, nil, err
		}
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", nil, nil, fmt.Errorf("reading tar: %w", err)
		}
		p := path.Clean("/" + hdr.Name)[1:]
		if p == "" {
			continue
		}
		dir, base := path.Split(p)
		dir = strings.TrimSuffix(dir, "/")
		switch {
		case base == whiteoutOpaque:
			if err := s.keep(dir); err != nil {
				return "", nil, nil, err
			}
			opaques = append(opaques, dir)
			continue
		case strings.HasPrefix(base, whiteoutPrefix):
			if err := s.keep(p); err != nil {
				return "", nil, nil, err
			}
			hides = append(hides, path.Join(dir, strings.TrimPrefix(base, whiteoutPrefix)))
			continue
		}
		if s.isHidden(p) {
			continue
		}
		if hdr.Typeflag != tar.TypeDir {
			if err := s.keep(p); err != nil {
				return "", nil, nil, err
			}
			hides = append(hides, p)
		}
		// '\x00' is the pre-POSIX spelling of a regular file (tar.TypeRegA).
		if hdr.Typeflag != tar.TypeReg && hdr.Typeflag != '\x00' {
			continue
		}
		if hdr.Size < minELFSize {
			continue
		}
		if _, err := io.ReadFull(tr, magic); err != nil {
			return "", nil, nil, fmt.Errorf("reading %s: %w", p, err)
		}
		if !bytes.Equal(magic, elfMagic) {
			continue
		}
		// Streamed: whatever size the header declares, a window and the build
		// information are all that is held.
		bi, err := readBuildInfo(tr, s.memory)
		var tl *TooLargeError
		switch {
		case errors.As(err, &tl):
			return "", nil, nil, err
		case errors.Is(err, errModInfoTooLarge):
			return "", nil, nil, &TooLargeError{What: fmt.Sprintf("reading %s: %s (ConfigMap key inspectMaxMemory)", p, err)}
		case err != nil:
			return "", nil, nil, fmt.Errorf("reading %s: %w", p, err)
		case bi != nil:
			if v := funcGoVersionOf(bi); v != "" {
				return v, nil, nil, nil
			}
		}
	}
	return "", hides, opaques, nil
}

// funcGoVersion returns the version of knative.dev/func-go recorded in the
// build info of the executable exe, or "" when exe is not a Go executable or
// does not depend on it. A replacement with a version wins over the required
// version; a replacement by a local directory has none, so the required
// version is returned.
func funcGoVersion(exe []byte) string {
	bi, err := readBuildInfo(bytes.NewReader(exe), int64(len(exe)))
	if err != nil || bi == nil {
		return ""
	}
	return funcGoVersionOf(bi)
}

func funcGoVersionOf(bi *debug.BuildInfo) string {
	if bi.Main.Path == FuncGoModule && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d == nil {
			continue
		}
		// A replacement by a directory is recorded with version "(devel)": the
		// required version is then the best the binary tells.
		replaced := d.Replace != nil && d.Replace.Version != "" && d.Replace.Version != "(devel)"
		switch {
		case d.Path == FuncGoModule && replaced:
			return d.Replace.Version
		case d.Path == FuncGoModule:
			return d.Version
		case replaced && d.Replace.Path == FuncGoModule:
			return d.Replace.Version
		}
	}
	return ""
}

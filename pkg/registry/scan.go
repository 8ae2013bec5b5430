package registry

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/buildinfo"
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
	budget int64           // executable bytes that may still be read
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
func (i *Inspector) scanLayers(ctx context.Context, img v1.Image, what string, ec *errContext) (string, error) {
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

	s := &scanState{hidden: map[string]bool{}, opaque: map[string]bool{}, budget: i.maxTotalBytes}
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
		version, stop, err := i.scanLayer(ctx, l, s)
		if err != nil {
			return "", ec.classify(err, ReasonLayerRead, lwhat)
		}
		if version != "" || stop {
			return version, nil
		}
	}
	return "", nil
}

// scanLayer streams one layer. stop is true when the byte budget is spent.
func (i *Inspector) scanLayer(ctx context.Context, l v1.Layer, s *scanState) (version string, stop bool, err error) {
	rc, err := l.Uncompressed()
	if err != nil {
		return "", false, err
	}
	defer func() { _ = rc.Close() }()

	var hides, opaques []string
	tr := tar.NewReader(rc)
	magic := make([]byte, len(elfMagic))
	for {
		if err := ctx.Err(); err != nil {
			return "", false, err
		}
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", false, fmt.Errorf("reading tar: %w", err)
		}
		p := path.Clean("/" + hdr.Name)[1:]
		if p == "" {
			continue
		}
		dir, base := path.Split(p)
		dir = strings.TrimSuffix(dir, "/")
		switch {
		case base == whiteoutOpaque:
			opaques = append(opaques, dir)
			continue
		case strings.HasPrefix(base, whiteoutPrefix):
			hides = append(hides, path.Join(dir, strings.TrimPrefix(base, whiteoutPrefix)))
			continue
		}
		if s.isHidden(p) {
			continue
		}
		if hdr.Typeflag != tar.TypeDir {
			hides = append(hides, p)
		}
		// '\x00' is the pre-POSIX spelling of a regular file (tar.TypeRegA).
		if hdr.Typeflag != tar.TypeReg && hdr.Typeflag != '\x00' {
			continue
		}
		if hdr.Size < minELFSize || hdr.Size > i.maxFileBytes {
			continue
		}
		if _, err := io.ReadFull(tr, magic); err != nil {
			return "", false, fmt.Errorf("reading %s: %w", p, err)
		}
		if !bytes.Equal(magic, elfMagic) {
			continue
		}
		if hdr.Size > s.budget {
			return "", true, nil
		}
		s.budget -= hdr.Size
		buf := make([]byte, hdr.Size)
		copy(buf, magic)
		if _, err := io.ReadFull(tr, buf[len(magic):]); err != nil {
			return "", false, fmt.Errorf("reading %s: %w", p, err)
		}
		if v := funcGoVersion(buf); v != "" {
			return v, false, nil
		}
	}
	for _, h := range hides {
		s.hidden[h] = true
	}
	for _, o := range opaques {
		s.opaque[o] = true
	}
	return "", false, nil
}

// funcGoVersion returns the version of knative.dev/func-go recorded in the
// build info of the executable exe, or "" when exe is not a Go executable or
// does not depend on it. A replacement with a version wins over the required
// version; a replacement by a local directory has none, so the required
// version is returned.
func funcGoVersion(exe []byte) (version string) {
	defer func() {
		// debug/elf is not hardened against every malformed input.
		if recover() != nil {
			version = ""
		}
	}()
	bi, err := buildinfo.Read(bytes.NewReader(exe))
	if err != nil {
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

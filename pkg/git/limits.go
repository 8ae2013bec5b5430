package git

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/go-git/go-billy/v5"
)

// Limits bound what reading one repository may cost the operator.
type Limits struct {
	// MaxBytes caps the bytes a clone (its pack) or a branch listing may transfer;
	// 0 means no cap.
	MaxBytes int64
	// MaxFiles caps the objects (files, directories and the commit) a clone may
	// transfer; 0 means no cap.
	MaxFiles int64
	// MaxObjectBytes caps what one object may expand to (go-git holds it whole);
	// 0 means no cap.
	MaxObjectBytes int64
}

// errPackLimit is returned by writes of a pack past a limit; budget.err says which.
var errPackLimit = errors.New("clone over the operator's limit")

// budget counts what a clone writes, shared by the files of its storage.
type budget struct {
	limits Limits

	mu       sync.Mutex
	written  int64
	objects  int64
	inflated int64 // what the objects scanned so far expand to
	err      error // the first limit hit
}

func (b *budget) exceeded() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// add counts n more pack bytes, and the pack header when it is complete.
func (b *budget) add(n int64, header []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return b.err
	}
	b.written += n
	if len(header) == 12 && b.objects == 0 && string(header[:4]) == "PACK" {
		b.objects = int64(binary.BigEndian.Uint32(header[8:12]))
		if b.limits.MaxFiles > 0 && b.objects > b.limits.MaxFiles {
			b.err = fmt.Errorf("the clone holds %d objects (files and directories), more than the %d the operator reads (ConfigMap key %s)",
				b.objects, b.limits.MaxFiles, "cloneMaxFiles")
			return b.err
		}
	}
	if b.limits.MaxBytes > 0 && b.written > b.limits.MaxBytes {
		b.err = fmt.Errorf("the clone is over the %d bytes the operator transfers (ConfigMap key %s)", b.limits.MaxBytes, "cloneMaxBytes")
		return b.err
	}
	return nil
}

// limitedFS is the storage filesystem of a clone: the pack it receives is counted
// against the budget while it streams, and refused past it.
type limitedFS struct {
	billy.Filesystem
	b *budget
	// done ends the scan of a pack go-git left without closing it (it does not
	// close a pack whose indexing failed).
	done <-chan struct{}
}

func (fs limitedFS) TempFile(dir, prefix string) (billy.File, error) {
	f, err := fs.Filesystem.TempFile(dir, prefix)
	if err != nil || !strings.HasPrefix(prefix, "tmp_pack_") {
		return f, err
	}
	pr, pw := io.Pipe()
	pf := &packFile{File: f, b: fs.b, scan: pw, scanned: make(chan struct{})}
	go func() {
		defer close(pf.scanned)
		scanPack(pr, fs.b)
		// Whatever stopped the scan, the writes go on (refused by the budget if
		// it was a limit): nothing more is fed to it.
		_ = pr.CloseWithError(io.ErrClosedPipe)
	}()
	go func() {
		select {
		case <-fs.done:
			_ = pw.CloseWithError(io.ErrClosedPipe)
		case <-pf.scanned:
		}
	}()
	return pf, nil
}

func (fs limitedFS) Chroot(path string) (billy.Filesystem, error) {
	c, err := fs.Filesystem.Chroot(path)
	if err != nil {
		return nil, err
	}
	return limitedFS{Filesystem: c, b: fs.b, done: fs.done}, nil
}

// packFile counts the bytes written to a pack being received, and feeds them to
// scanPack.
type packFile struct {
	billy.File
	b       *budget
	header  []byte
	scan    *io.PipeWriter // nil once the scan stopped
	scanned chan struct{}
}

// Close ends the scan before the file.
func (f *packFile) Close() error {
	if f.scan != nil {
		_ = f.scan.Close()
	}
	<-f.scanned
	return f.File.Close()
}

func (f *packFile) Write(p []byte) (int, error) {
	if len(f.header) < 12 {
		need := 12 - len(f.header)
		if need > len(p) {
			need = len(p)
		}
		f.header = append(f.header, p[:need]...)
	}
	if err := f.b.add(int64(len(p)), f.header); err != nil {
		return 0, errPackLimit
	}
	if f.scan != nil {
		if _, err := f.scan.Write(p); err != nil {
			f.scan = nil
		}
		if f.b.exceeded() != nil {
			return 0, errPackLimit
		}
	}
	return f.File.Write(p)
}

package source

import (
	"encoding/binary"
	"errors"
	"fmt"
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
}

// errPackLimit is returned by writes of a pack past a limit; budget.err says which.
var errPackLimit = errors.New("clone over the operator's limit")

// budget counts what a clone writes, shared by the files of its storage.
type budget struct {
	limits Limits

	mu      sync.Mutex
	written int64
	objects int64
	err     error // the first limit hit
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
}

func (fs limitedFS) TempFile(dir, prefix string) (billy.File, error) {
	f, err := fs.Filesystem.TempFile(dir, prefix)
	if err != nil || !strings.HasPrefix(prefix, "tmp_pack_") {
		return f, err
	}
	return &packFile{File: f, b: fs.b}, nil
}

func (fs limitedFS) Chroot(path string) (billy.Filesystem, error) {
	c, err := fs.Filesystem.Chroot(path)
	if err != nil {
		return nil, err
	}
	return limitedFS{Filesystem: c, b: fs.b}, nil
}

// packFile counts the bytes written to a pack being received.
type packFile struct {
	billy.File
	b      *budget
	header []byte
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
	return f.File.Write(p)
}

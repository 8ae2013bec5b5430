package git

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
)

// maxInflateFactor bounds the bytes a pack's objects may expand to, all together,
// against cloneMaxBytes: deltas and zlib make a small pack into a large repository.
const maxInflateFactor = 4

// scanPack reads a pack as it streams in and counts what its objects expand to:
// each object (a delta by the size of the object it makes) must be at most
// maxObject bytes, and all of them together at most maxInflateFactor times the
// byte limit. go-git holds an object, and a delta's base, whole while it indexes
// the pack: a 500 KiB pack can hold a 512 MiB blob of zeros and a delta on it.
// A violation is recorded in b, which refuses the next write of the pack.
func scanPack(r io.Reader, b *budget) {
	sc := packfile.NewScanner(r)
	_, objects, err := sc.Header()
	if err != nil {
		return
	}
	for n := uint32(0); n < objects; n++ {
		h, err := sc.NextObjectHeader()
		if err != nil {
			return
		}
		size := h.Length
		if h.Type == plumbing.OFSDeltaObject || h.Type == plumbing.REFDeltaObject {
			d := &deltaHeader{}
			if _, _, err := sc.NextObject(d); err != nil {
				return
			}
			size = d.target()
		} else if b.object(size) == nil {
			if _, _, err := sc.NextObject(io.Discard); err != nil {
				return
			}
			continue
		}
		if b.object(size) != nil {
			return
		}
	}
}

// deltaHeader keeps the start of a delta: the sizes of its base and its target.
type deltaHeader struct{ head []byte }

func (d *deltaHeader) Write(p []byte) (int, error) {
	if need := 2*binary.MaxVarintLen64 - len(d.head); need > 0 {
		d.head = append(d.head, p[:min(need, len(p))]...)
	}
	return len(p), nil
}

// target is the size of the object the delta makes, or -1 when it cannot be read.
func (d *deltaHeader) target() int64 {
	_, n := binary.Uvarint(d.head)
	if n <= 0 {
		return -1
	}
	t, m := binary.Uvarint(d.head[n:])
	if m <= 0 || t > 1<<62 {
		return -1
	}
	return int64(t)
}

// object counts an object of size bytes once expanded (-1: unreadable).
func (b *budget) object(size int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return b.err
	}
	max := b.limits.MaxObjectBytes
	switch {
	case size < 0:
		b.err = fmt.Errorf("the clone holds an object whose size cannot be read")
	case max > 0 && size > max:
		b.err = fmt.Errorf("the clone holds an object of %d bytes, more than the %d one object may have (ConfigMap key cloneMaxObjectBytes)", size, max)
	default:
		b.inflated += size
		if b.limits.MaxBytes > 0 && b.inflated > maxInflateFactor*b.limits.MaxBytes {
			b.err = fmt.Errorf("the clone's objects expand to more than %d bytes, %d times cloneMaxBytes", maxInflateFactor*b.limits.MaxBytes, maxInflateFactor)
		}
	}
	return b.err
}

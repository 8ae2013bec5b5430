package git

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/memfs"
)

// packObject encodes an object of a pack: its header, for an OFS delta the
// distance back to its base, then its zlib-compressed content.
func packObject(t *testing.T, typ byte, content []byte, ofs int64) []byte {
	t.Helper()
	size := uint64(len(content))
	b := []byte{typ<<4 | byte(size&0x0f)}
	size >>= 4
	for size > 0 {
		b[len(b)-1] |= 0x80
		b = append(b, byte(size&0x7f))
		size >>= 7
	}
	if typ == 6 {
		// Offset encoding of git's OFS_DELTA: big-endian 7-bit groups, each but
		// the last plus one.
		enc := []byte{byte(ofs & 0x7f)}
		for ofs >>= 7; ofs > 0; ofs >>= 7 {
			ofs--
			enc = append([]byte{byte(0x80 | ofs&0x7f)}, enc...)
		}
		b = append(b, enc...)
	}
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	if _, err := w.Write(content); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	return append(b, z.Bytes()...)
}

// pack makes a pack of a blob of size zeros and a delta on it that makes an
// object of target bytes, by copying the blob over and over.
func pack(t *testing.T, size, target int) []byte {
	t.Helper()
	p := []byte("PACK\x00\x00\x00\x02\x00\x00\x00\x02")
	blob := packObject(t, 3, make([]byte, size), 0)
	blobAt := int64(len(p))
	p = append(p, blob...)
	delta := binary.AppendUvarint(nil, uint64(size))
	delta = binary.AppendUvarint(delta, uint64(target))
	for left := target; left > 0; {
		n := min(left, size, 0xffff)
		// Copy n bytes from offset 0 of the base: offset bytes none, size bytes 2.
		delta = append(delta, 0x80|0x10|0x20, byte(n), byte(n>>8))
		left -= n
	}
	p = append(p, packObject(t, 6, delta, int64(len(p))-blobAt)...)
	return append(p, make([]byte, 20)...) // the checksum, which the scan does not check
}

func TestScanPack(t *testing.T) {
	tests := []struct {
		name         string
		size, target int
		limits       Limits
		want         string // in the error; "" for none
	}{
		{name: "a small pack (positive control)", size: 4096, target: 8192, limits: Limits{MaxBytes: 1 << 20, MaxObjectBytes: 1 << 20}},
		{name: "a blob that expands past the object cap", size: 8 << 20, target: 1024, limits: Limits{MaxBytes: 1 << 20, MaxObjectBytes: 1 << 20},
			want: "an object of 8388608 bytes, more than the 1048576 one object may have (ConfigMap key cloneMaxObjectBytes)"},
		{name: "a delta that makes an object past the cap", size: 1024, target: 8 << 20, limits: Limits{MaxBytes: 1 << 20, MaxObjectBytes: 1 << 20},
			want: "an object of 8388608 bytes"},
		{name: "objects that together expand past 4 times cloneMaxBytes", size: 600 << 10, target: 600 << 10, limits: Limits{MaxBytes: 256 << 10, MaxObjectBytes: 1 << 20},
			want: "expand to more than 1048576 bytes, 4 times cloneMaxBytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := pack(t, tt.size, tt.target)
			b := &budget{limits: tt.limits}
			scanPack(bytes.NewReader(p), b)
			err := b.exceeded()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("got %v, want an error saying %q", err, tt.want)
			}
			if tt.want != "" && len(p) > 64<<10 {
				t.Logf("a pack of %d bytes", len(p))
			}
		})
	}
}

// TestPackFile_RefusesWhileItStreams writes a pack whose first object expands
// past the cap through the clone's storage, in small writes: the write after the
// object's header is refused, long before the pack ends.
func TestPackFile_RefusesWhileItStreams(t *testing.T) {
	p := pack(t, 64<<20, 1024) // 64 MiB of zeros: about 64 KiB compressed
	b := &budget{limits: Limits{MaxBytes: 1 << 30, MaxObjectBytes: 1 << 20}}
	done := make(chan struct{})
	defer close(done)
	fs := limitedFS{Filesystem: memfsForTest(), b: b, done: done}
	f, err := fs.TempFile("objects/pack", "tmp_pack_")
	if err != nil {
		t.Fatal(err)
	}
	written := 0
	for written < len(p) {
		n, err := f.Write(p[written:min(written+512, len(p))])
		written += n
		if err != nil {
			break
		}
	}
	_ = f.Close()
	if b.exceeded() == nil || written > 4096 {
		t.Fatalf("wrote %d of %d bytes, budget error %v; want a refusal within the first KiBs", written, len(p), b.exceeded())
	}
}

func memfsForTest() billy.Filesystem { return memfs.New() }

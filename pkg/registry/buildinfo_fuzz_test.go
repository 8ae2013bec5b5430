package registry

import (
	"bytes"
	"encoding/binary"
	"runtime/debug"
	"testing"
)

// FuzzBuildInfo feeds readBuildInfo executables that are anything at all. It must
// never panic, never hold more than the cap of module information, and find in a
// well-formed header the module information that follows it.
func FuzzBuildInfo(f *testing.F) {
	f.Add([]byte("\x7fELF"), []byte("path\texample.com/m\nmod\texample.com/m\t(devel)\t\n"))
	f.Add(append([]byte("\x7fELF\x00\x00"), buildInfoMagic...), []byte(""))
	f.Add(bytes.Repeat(buildInfoMagic, 3), []byte("dep\tknative.dev/func-go\tv0.21.3\th1:x=\n"))
	f.Fuzz(func(t *testing.T, prefix, mod []byte) {
		// Whatever prefix is, a well-formed section after it is found, unless the
		// prefix holds a well-formed section of its own first.
		framed := append(append(make([]byte, 16), mod...), make([]byte, 16)...)
		framed[len(framed)-17] = '\n'
		section := append(append([]byte(nil), buildInfoMagic...), 8, flagsVersionInline)
		section = append(section, make([]byte, buildInfoHeader-len(section))...)
		section = binary.AppendUvarint(section, 8)
		section = append(section, "go1.24.0"...)
		section = binary.AppendUvarint(section, uint64(len(framed)))
		section = append(section, framed...)

		const max = 1 << 16
		bi, err := readBuildInfo(bytes.NewReader(append(append([]byte(nil), prefix...), section...)), max)
		if err != nil && len(framed) <= max && !bytes.Contains(prefix, buildInfoMagic) {
			t.Fatalf("a well-formed section after %d bytes: %v", len(prefix), err)
		}
		// What the reader must find: the framed text (its last byte is the
		// newline the frame needs), when it is build information.
		inner := string(framed[16 : len(framed)-16])
		if want, perr := debug.ParseBuildInfo(inner); perr == nil && len(mod) > 0 && len(framed) <= max && !bytes.Contains(prefix, buildInfoMagic) {
			if bi == nil || bi.GoVersion != "go1.24.0" || bi.Main != want.Main || len(bi.Deps) != len(want.Deps) {
				t.Fatalf("a well-formed section after %d bytes: got %+v, want %+v", len(prefix), bi, want)
			}
		}
		// The prefix alone: never a panic, never more than the cap.
		_, _ = readBuildInfo(bytes.NewReader(prefix), 64)
	})
}

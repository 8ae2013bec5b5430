package registry

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
)

// buildInfoMagic starts the build information Go (1.18 and later) writes into
// every executable, in its .go.buildinfo section.
var buildInfoMagic = []byte("\xff Go buildinf:")

const (
	// buildInfoHeader is the size of the section's header: the magic, the pointer
	// size, the flags, and padding.
	buildInfoHeader = 32
	// flagsVersionInline says the version and module strings follow the header as
	// length-prefixed strings (Go 1.18 and later), not as pointers.
	flagsVersionInline = 0x2
	// maxGoVersion caps the Go version string ("go1.22.3").
	maxGoVersion = 256
	// scanWindow is how much of an executable is held at a time while the magic is
	// searched for.
	scanWindow = 64 << 10
)

// errModInfoTooLarge is build information larger than an inspection may hold.
var errModInfoTooLarge = errors.New("the executable's build information is larger than the operator reads")

// readBuildInfo streams r, an executable, and returns its Go build information,
// holding at most scanWindow bytes plus the module information (capped at
// maxModInfo) in memory whatever the executable's size or what it declares. It
// returns nil without error when r holds no inline build information (not a Go
// executable, or one built before Go 1.18).
func readBuildInfo(r io.Reader, maxModInfo int64) (*debug.BuildInfo, error) {
	br := bufio.NewReaderSize(r, scanWindow)
	for {
		found, err := skipToMagic(br)
		if err != nil || !found {
			return nil, err
		}
		header := make([]byte, buildInfoHeader-len(buildInfoMagic))
		if _, err := io.ReadFull(br, header); err != nil {
			return nil, ignoreEOF(err)
		}
		if header[1]&flagsVersionInline == 0 {
			// The pointer format of Go before 1.18 needs the whole file; the magic
			// may also be a string that happens to hold it. Look further.
			continue
		}
		version, err := readString(br, maxGoVersion)
		if err != nil {
			return nil, ignoreEOF(err)
		}
		mod, err := readString(br, maxModInfo)
		if err != nil {
			return nil, ignoreEOF(err)
		}
		// The module information is framed by 16-byte sentinels.
		if len(mod) < 33 || mod[len(mod)-17] != '\n' {
			continue
		}
		bi, err := debug.ParseBuildInfo(string(mod[16 : len(mod)-16]))
		if err != nil {
			continue
		}
		bi.GoVersion = string(version)
		return bi, nil
	}
}

// skipToMagic reads br up to and including the next buildInfoMagic.
func skipToMagic(br *bufio.Reader) (bool, error) {
	for {
		buf, err := br.Peek(scanWindow)
		if i := bytes.Index(buf, buildInfoMagic); i >= 0 {
			_, _ = br.Discard(i + len(buildInfoMagic))
			return true, nil
		}
		if err != nil {
			// Fewer than scanWindow bytes are left and none holds the magic.
			return false, ignoreEOF(err)
		}
		// Keep the tail that may hold the start of the magic.
		_, _ = br.Discard(len(buf) - len(buildInfoMagic) + 1)
	}
}

// readString reads a uvarint-length-prefixed string of at most max bytes.
func readString(br *bufio.Reader, max int64) ([]byte, error) {
	n, err := binary.ReadUvarint(br)
	if err != nil {
		return nil, err
	}
	if n > uint64(max) {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", errModInfoTooLarge, n, max)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(br, b); err != nil {
		return nil, err
	}
	return b, nil
}

func ignoreEOF(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, bufio.ErrBufferFull) {
		return nil
	}
	return err
}

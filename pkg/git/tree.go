package git

import (
	"bufio"
	"bytes"
	"errors"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// treeEntry is one entry of a git tree object, read from its raw content: name
// points into that content.
type treeEntry struct {
	mode filemode.FileMode
	name []byte
	hash plumbing.Hash
}

// errBadTree is the content of a tree object that git could not have written.
var errBadTree = errors.New("malformed tree object")

// hashSize is the length of an object id in a tree entry.
var hashSize = len(plumbing.ZeroHash)

// eachEntry calls fn with the entries of raw, a tree object's content ("<octal
// mode> <name>\x00<id>" each), in order, until fn returns false. It decodes one
// entry at a time and allocates nothing: go-git's object.Tree decodes every entry
// up front, about 80 bytes and a string each, so that a tree of a million entries,
// a few MiB in a pack, would take over 80 MiB of the operator's memory to walk.
func eachEntry(raw []byte, fn func(treeEntry) bool) error {
	for len(raw) > 0 {
		sp := bytes.IndexByte(raw, ' ')
		if sp <= 0 {
			return errBadTree
		}
		mode, ok := parseMode(raw[:sp])
		if !ok {
			return errBadTree
		}
		raw = raw[sp+1:]
		nul := bytes.IndexByte(raw, 0)
		if nul < 0 || len(raw) < nul+1+hashSize {
			return errBadTree
		}
		e := treeEntry{mode: mode, name: raw[:nul]}
		copy(e.hash[:], raw[nul+1:nul+1+hashSize])
		raw = raw[nul+1+hashSize:]
		if !fn(e) {
			return nil
		}
	}
	return nil
}

// eachEntryFrom is eachEntry reading a tree's content from br as it streams: it holds
// br's buffer (treeReadBuffer bytes, reused from tree to tree) and the current name,
// not the tree; an entry's name is valid only during fn's call. A name longer than
// the buffer is a malformed tree here.
func eachEntryFrom(br *bufio.Reader, fn func(treeEntry) bool) error {
	var name []byte
	for {
		mode, err := br.ReadSlice(' ')
		switch {
		case err == io.EOF && len(mode) == 0:
			return nil
		case err != nil:
			return errBadTree
		}
		m, ok := parseMode(mode[:len(mode)-1])
		if !ok || len(mode) == 1 {
			return errBadTree
		}
		n, err := br.ReadSlice(0)
		if err != nil {
			return errBadTree
		}
		// Copied: reading the id may move the buffer's data.
		name = append(name[:0], n[:len(n)-1]...)
		e := treeEntry{mode: m, name: name}
		// Peek, not io.ReadFull: an id read through an io.Reader would put e on the
		// heap, an allocation per entry.
		id, err := br.Peek(hashSize)
		if err != nil {
			return errBadTree
		}
		copy(e.hash[:], id)
		_, _ = br.Discard(hashSize)
		if !fn(e) {
			return nil
		}
	}
}

// treeReadBuffer is eachEntryFrom's buffer: git limits no name, but a name of more
// than 64 KiB is no function's.
const treeReadBuffer = 64 << 10

// findEntry returns the entry called name of raw, a tree object's content.
func findEntry(raw []byte, name string) (treeEntry, bool, error) {
	var found treeEntry
	ok := false
	err := eachEntry(raw, func(e treeEntry) bool {
		if string(e.name) == name {
			found, ok = e, true
			return false
		}
		return true
	})
	return found, ok, err
}

// parseMode parses a tree entry's octal mode as go-git's filemode.New does: any
// value of 32 bits (git writes 5 or 6 digits).
func parseMode(b []byte) (filemode.FileMode, bool) {
	var n uint64
	for _, c := range b {
		if c < '0' || c > '7' {
			return 0, false
		}
		if n = n<<3 | uint64(c-'0'); n > 1<<32-1 {
			return 0, false
		}
	}
	return filemode.FileMode(n), true
}

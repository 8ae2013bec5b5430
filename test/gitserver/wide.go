package gitserver

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// emptyBlob is the id of git's empty blob.
const emptyBlob = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"

// CommitWideTrees commits onto branch (on top of its tip, as Commit does) files, and
// beside them trees directories wide-0 ... wide-<trees-1> of entries files each, all
// naming the empty blob, the last one's name different in each tree so that no two
// are the same object. It returns the commit's SHA.
//
// A hostile repository, small on the wire and large once read: the trees are stored
// as one whole tree (compressed) and deltas of a few dozen bytes against it, as git
// packs such trees, so that 6 trees of 850,000 entries (29 MiB each) take about
// 2 MiB. The pack is written here, not by git's delta search, which would take
// seconds and hundreds of MiB on trees of that size.
func (r *Repo) CommitWideTrees(t testing.TB, branch string, files map[string]string, trees, entries int) string {
	t.Helper()
	if trees < 1 || entries < 1 {
		t.Fatalf("gitserver: CommitWideTrees of %d trees of %d entries: want at least one of each", trees, entries)
	}
	base := r.Commit(t, branch, files, "the function, before the wide trees")
	r.mu.Lock()
	defer r.mu.Unlock()
	git := newGitCLI(t)

	pack, ids := wideTreesPack(trees, entries)
	cmd := exec.Command("git", "index-pack", "--stdin")
	cmd.Dir, cmd.Env = r.Dir, git.env
	var stderr bytes.Buffer
	cmd.Stdin, cmd.Stderr = bytes.NewReader(pack), &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("gitserver: git index-pack of %d wide trees into %s: %v: %s", trees, r.Name, err, strings.TrimSpace(stderr.String()))
	}

	listing := git.run(r.Dir, "ls-tree", base+"^{tree}")
	var in strings.Builder
	if listing != "" {
		in.WriteString(listing + "\n")
	}
	for i, id := range ids {
		fmt.Fprintf(&in, "040000 tree %s\twide-%d\n", id, i)
	}
	mktree := exec.Command("git", "mktree")
	mktree.Dir, mktree.Env = r.Dir, git.env
	var out bytes.Buffer
	stderr.Reset()
	mktree.Stdin, mktree.Stdout, mktree.Stderr = strings.NewReader(in.String()), &out, &stderr
	if err := mktree.Run(); err != nil {
		t.Fatalf("gitserver: git mktree in %s: %v: %s", r.Name, err, strings.TrimSpace(stderr.String()))
	}
	root := strings.TrimSpace(out.String())
	msg := fmt.Sprintf("%d trees of %d entries", trees, entries)
	commit := git.run(r.Dir, "commit-tree", root, "-p", base, "-m", msg)
	git.run(r.Dir, "update-ref", "refs/heads/"+branch, commit, base)
	return commit
}

// wideTreesPack returns a pack of the empty blob and trees wide trees of entries
// entries (the first whole, the others deltas against it), and the trees' ids.
func wideTreesPack(trees, entries int) ([]byte, []string) {
	emptyID, _ := hex.DecodeString(emptyBlob)
	entry := func(name string) []byte {
		return append([]byte("100644 "+name+"\x00"), emptyID...)
	}
	var first bytes.Buffer
	for i := range entries - 1 {
		first.Write(entry(fmt.Sprintf("e%07d", i)))
	}
	common := first.Len() // what every tree holds before its last entry
	last := func(i int) []byte { return entry(fmt.Sprintf("z%07d", i)) }
	first.Write(last(0))

	var pack bytes.Buffer
	pack.WriteString("PACK")
	_ = binary.Write(&pack, binary.BigEndian, uint32(2))
	_ = binary.Write(&pack, binary.BigEndian, uint32(1+trees))
	packObject(&pack, 3, nil, nil) // the empty blob
	baseAt := pack.Len()
	packObject(&pack, 2, nil, first.Bytes())
	ids := []string{plumbing.ComputeHash(plumbing.TreeObject, first.Bytes()).String()}
	for i := 1; i < trees; i++ {
		target := append(first.Bytes()[:common:common], last(i)...)
		ids = append(ids, plumbing.ComputeHash(plumbing.TreeObject, target).String())
		var delta bytes.Buffer
		putSize(&delta, first.Len())
		putSize(&delta, len(target))
		// Copy the common part in chunks of 1 MiB, then insert the last entry.
		for off := 0; off < common; off += 1 << 20 {
			n := min(1<<20, common-off)
			delta.WriteByte(0x80 | 0x0f | 0x70) // four offset bytes, three size bytes
			_ = binary.Write(&delta, binary.LittleEndian, uint32(off))
			delta.Write([]byte{byte(n), byte(n >> 8), byte(n >> 16)})
		}
		l := last(i)
		delta.WriteByte(byte(len(l)))
		delta.Write(l)
		at := pack.Len()
		packObject(&pack, 6, ofsDelta(at-baseAt), delta.Bytes())
	}
	sum := sha1.Sum(pack.Bytes())
	pack.Write(sum[:])
	return pack.Bytes(), ids
}

// packObject writes an object of type typ to a pack: its header (the size of data),
// extra (an OFS_DELTA's base offset) and data compressed.
func packObject(pack *bytes.Buffer, typ byte, extra, data []byte) {
	size := len(data)
	b := typ<<4 | byte(size&0x0f)
	size >>= 4
	for size > 0 {
		pack.WriteByte(b | 0x80)
		b = byte(size & 0x7f)
		size >>= 7
	}
	pack.WriteByte(b)
	pack.Write(extra)
	w, _ := zlib.NewWriterLevel(pack, zlib.BestSpeed)
	_, _ = w.Write(data)
	_ = w.Close()
}

// ofsDelta encodes the distance back to an OFS_DELTA's base as git does.
func ofsDelta(n int) []byte {
	out := []byte{byte(n & 0x7f)}
	for n >>= 7; n > 0; n >>= 7 {
		n--
		out = append([]byte{byte(0x80 | n&0x7f)}, out...)
	}
	return out
}

// putSize writes a delta's source or target size (7 bits a byte, low first).
func putSize(b *bytes.Buffer, n int) {
	for n >= 0x80 {
		b.WriteByte(byte(n&0x7f) | 0x80)
		n >>= 7
	}
	b.WriteByte(byte(n))
}

// CommitOctopus commits onto branch n commits, each a child of its tip, and then a
// merge of the tip and all of them: a commit of n+1 parents. It returns the merge's
// SHA.
func (r *Repo) CommitOctopus(t testing.TB, branch string, n int) string {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	git := newGitCLI(t)
	tip := git.run(r.Dir, "rev-parse", "--verify", "refs/heads/"+branch+"^{commit}")
	tree := git.run(r.Dir, "rev-parse", tip+"^{tree}")
	args := make([]string, 0, 4+2*n+2)
	args = append(args, "commit-tree", tree, "-p", tip)
	for i := range n {
		args = append(args, "-p", git.run(r.Dir, "commit-tree", tree, "-p", tip, "-m", fmt.Sprintf("side %d", i)))
	}
	merge := git.run(r.Dir, append(args, "-m", fmt.Sprintf("a merge of %d parents", n+1))...)
	git.run(r.Dir, "update-ref", "refs/heads/"+branch, merge, tip)
	return merge
}

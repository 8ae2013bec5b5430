package gitserver

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// LargeFuncYAML is the func.yaml CommitLarge writes at the repository root.
const LargeFuncYAML = "specVersion: 0.36.0\nname: large\nruntime: go\n"

// CommitLarge commits onto branch (on top of its tip, or as a new orphan
// branch, as Commit does) LargeFuncYAML as func.yaml and files files
// large/blob-NNNN.bin of bytesEach incompressible bytes each, and returns the
// commit's SHA. A clone of it transfers at least files*bytesEach bytes and
// holds at least files+4 objects (the blobs, func.yaml, two trees and the commit).
//
// The content is pseudo-random from a fixed seed and differs from file to file
// (git would store equal files once); committing the same sizes again writes
// the same blobs. It is streamed into the repository by git fast-import as one
// pack without compression or deltas, so writing or serving 16 MiB takes about
// 0.2 s.
func (r *Repo) CommitLarge(t testing.TB, branch string, files, bytesEach int) string {
	t.Helper()
	if files < 0 || bytesEach < 1 {
		t.Fatalf("gitserver: CommitLarge of %d files of %d bytes: want files >= 0, bytesEach >= 1", files, bytesEach)
	}
	r.mu.Lock()
	defer r.mu.Unlock()

	git := newGitCLI(t)
	ref := "refs/heads/" + branch
	msg := fmt.Sprintf("%d files of %d bytes", files, bytesEach)
	var head strings.Builder
	fmt.Fprintf(&head, "commit %s\ncommitter gitserver <gitserver@example.invalid> %d +0000\ndata %d\n%s\n",
		ref, time.Now().Unix(), len(msg), msg)
	if r.hasRef(git, ref) {
		fmt.Fprintf(&head, "from %s^0\n", ref)
	}
	fmt.Fprintf(&head, "M 100644 inline func.yaml\ndata %d\n%s\n", len(LargeFuncYAML), LargeFuncYAML)
	stream := make([]io.Reader, 0, 3*files+2)
	stream = append(stream, strings.NewReader(head.String()))
	for i := range files {
		stream = append(stream,
			strings.NewReader(fmt.Sprintf("M 100644 inline large/blob-%04d.bin\ndata %d\n", i, bytesEach)),
			io.LimitReader(rand.NewChaCha8(largeSeed(i, bytesEach)), int64(bytesEach)),
			strings.NewReader("\n"))
	}
	stream = append(stream, strings.NewReader("done\n"))

	var stderr bytes.Buffer
	// One pack, kept (not unpacked into loose objects, fastimport.unpackLimit), uncompressed and without
	// deltas: clones reuse its objects as they are, without compressing or delta search.
	cmd := exec.Command("git", "-c", "fastimport.unpackLimit=0", "-c", "pack.compression=0",
		"fast-import", "--quiet", "--done", "--big-file-threshold=1k")
	cmd.Dir, cmd.Env = r.Dir, git.env
	cmd.Stdin, cmd.Stderr = io.MultiReader(stream...), &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("gitserver: git fast-import into %s@%s: %v: %s", r.Name, branch, err, strings.TrimSpace(stderr.String()))
	}
	return git.run(r.Dir, "rev-parse", "--verify", ref+"^{commit}")
}

// largeSeed seeds the content of CommitLarge's file i.
func largeSeed(i, bytesEach int) [32]byte {
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:], uint64(i)+1)
	binary.LittleEndian.PutUint64(seed[8:], uint64(bytesEach))
	copy(seed[16:], "gitserver.large")
	return seed
}

package gitserver_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/fnops/func-operator/test/gitserver"
)

func TestCommitLarge(t *testing.T) {
	const files, each = 16, 1 << 20
	root := gitserver.NewRepoRoot(t)
	repo := gitserver.CreateRepo(t, root, "large")
	first := repo.Commit(t, "main", map[string]string{"README.md": "big\n"}, "init")
	start := time.Now()
	sha := repo.CommitLarge(t, "main", files, each)
	committed := time.Since(start)
	if !shaRE.MatchString(sha) || repo.Head(t, "main") != sha {
		t.Fatalf("CommitLarge returned %q, main is at %s", sha, repo.Head(t, "main"))
	}
	r, err := git.PlainOpen(repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.CommitObject(plumbing.NewHash(sha))
	if err != nil || len(c.ParentHashes) != 1 || c.ParentHashes[0].String() != first {
		t.Fatalf("commit %s: %v, parents %v; want [%s]", sha, err, c.ParentHashes, first)
	}
	// Commit still works on top of it.
	last := repo.Commit(t, "main", map[string]string{"CHANGELOG": "more\n"}, "after")
	srv := gitserver.StartHTTP(t, root)

	dir := mustClone(t, srv.URL("large"), nil)
	if got := srv.BytesServed(); got < files*each {
		t.Fatalf("the clone transferred %d bytes, want at least %d", got, files*each)
	}
	assertFile(t, dir, "func.yaml", gitserver.LargeFuncYAML)
	assertFile(t, dir, "README.md", "big\n")
	assertFile(t, dir, "CHANGELOG", "more\n")
	if head, err := git.PlainOpen(dir); err != nil {
		t.Fatal(err)
	} else if ref, err := head.Head(); err != nil || ref.Hash().String() != last {
		t.Fatalf("cloned HEAD %v (%v), want %s", ref, err, last)
	}
	blobs, err := filepath.Glob(filepath.Join(dir, "large", "blob-*.bin"))
	if err != nil || len(blobs) != files {
		t.Fatalf("cloned blobs %v (%v), want %d", blobs, err, files)
	}
	var firstBlob []byte
	for _, b := range blobs {
		content, err := os.ReadFile(b)
		if err != nil || len(content) != each {
			t.Fatalf("%s: %d bytes, %v; want %d", b, len(content), err, each)
		}
		if firstBlob == nil {
			firstBlob = content
		} else if bytes.Equal(firstBlob, content) {
			t.Fatalf("%s equals %s: git stores it once", b, blobs[0])
		}
	}
	t.Logf("committed %d × %d bytes in %v; the clone transferred %d bytes", files, each, committed, srv.BytesServed())
}

package gitserver_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/fnops/func-operator/test/gitserver"
)

var shaRE = regexp.MustCompile(`^[0-9a-f]{40}$`)

func TestRepoCommitSubdirsAndDelete(t *testing.T) {
	root := gitserver.NewRepoRoot(t)
	repo := gitserver.CreateRepo(t, root, "fns")
	if repo.Name != "fns" || repo.Dir != filepath.Join(root, "fns.git") {
		t.Fatalf("repo = %+v, want Name fns and Dir %s", repo, filepath.Join(root, "fns.git"))
	}

	first := repo.Commit(t, "main", map[string]string{
		"fns/hello/func.yaml": "name: hello\n",
		"fns/bye/func.yaml":   "name: bye\n",
		"README.md":           "functions\n",
	}, "add functions")
	if !shaRE.MatchString(first) {
		t.Fatalf("Commit returned %q, want a full SHA", first)
	}
	second := repo.Commit(t, "main", map[string]string{
		"fns/hello/func.yaml": "name: hello\nruntime: go\n",
		"fns/bye/func.yaml":   "", // delete
	}, "update hello, drop bye")
	if got := repo.Head(t, "main"); got != second {
		t.Fatalf("Head(main) = %s, want %s", got, second)
	}

	r, err := git.PlainOpen(repo.Dir)
	if err != nil {
		t.Fatalf("open bare repo: %v", err)
	}
	c, err := r.CommitObject(plumbing.NewHash(second))
	if err != nil {
		t.Fatalf("read commit: %v", err)
	}
	if len(c.ParentHashes) != 1 || c.ParentHashes[0].String() != first {
		t.Fatalf("parents of %s = %v, want [%s]", second, c.ParentHashes, first)
	}
	if strings.TrimSpace(c.Message) != "update hello, drop bye" {
		t.Fatalf("message = %q", c.Message)
	}
	files := map[string]string{}
	iter, err := c.Files()
	if err != nil {
		t.Fatalf("list files: %v", err)
	}
	if err := iter.ForEach(func(f *object.File) error {
		content, err := f.Contents()
		files[f.Name] = content
		return err
	}); err != nil {
		t.Fatalf("read files: %v", err)
	}
	want := map[string]string{
		"fns/hello/func.yaml": "name: hello\nruntime: go\n",
		"README.md":           "functions\n",
	}
	if len(files) != len(want) {
		t.Fatalf("files = %v, want %v", files, want)
	}
	for name, content := range want {
		if files[name] != content {
			t.Fatalf("files[%s] = %q, want %q", name, files[name], content)
		}
	}
}

func TestRepoOrphanBranchAndSetHEAD(t *testing.T) {
	root := gitserver.NewRepoRoot(t)
	repo := gitserver.CreateRepo(t, root, "app")
	mainSHA := repo.Commit(t, "main", map[string]string{"a.txt": "a"}, "main")
	devSHA := repo.Commit(t, "dev", map[string]string{"b.txt": "b"}, "dev")

	r, err := git.PlainOpen(repo.Dir)
	if err != nil {
		t.Fatalf("open bare repo: %v", err)
	}
	dev, err := r.CommitObject(plumbing.NewHash(devSHA))
	if err != nil {
		t.Fatalf("read dev commit: %v", err)
	}
	if dev.NumParents() != 0 {
		t.Fatalf("new branch dev has %d parents, want an orphan", dev.NumParents())
	}
	if got := repo.Head(t, "main"); got != mainSHA {
		t.Fatalf("Head(main) = %s, want %s", got, mainSHA)
	}

	repo.SetHEAD(t, "dev")
	head, err := os.ReadFile(filepath.Join(repo.Dir, "HEAD"))
	if err != nil {
		t.Fatalf("read HEAD: %v", err)
	}
	if got := strings.TrimSpace(string(head)); got != "ref: refs/heads/dev" {
		t.Fatalf("HEAD = %q, want ref: refs/heads/dev", got)
	}
	ref, err := r.Head()
	if err != nil {
		t.Fatalf("resolve HEAD: %v", err)
	}
	if ref.Hash().String() != devSHA {
		t.Fatalf("HEAD resolves to %s, want %s", ref.Hash(), devSHA)
	}
}

package git

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestFetcher_Tree: a function directory's tree id moves exactly when a commit changes
// something in it, in a monorepo read at the branch's tip (Read) and through the
// history (ReadAt) alike; the .tekton/ directory of Pipelines-as-Code is noticed.
func TestFetcher_Tree(t *testing.T) {
	g := newHTTPGit(t)
	repo, first := g.repo(t, "mono", map[string]string{
		"a/func.yaml": funcYAML("a", "go"), "a/handle.go": "package function\n",
		"b/func.yaml": funcYAML("b", "go"),
	})
	url := g.srv.URL("mono")
	f := NewFetcher(t.TempDir(), 0, nil)
	ctx := context.Background()

	type layout struct {
		Tree string
		PaC  bool
	}
	// read reads fnPath at the tip, commit: Read fetches the branch.
	read := func(commit, fnPath string) layout {
		t.Helper()
		res, err := f.Read(ctx, url, Head{Branch: "main", Ref: "refs/heads/main", Commit: commit}, fnPath, anonymous(t, url), time.Minute)
		if err != nil {
			t.Fatalf("Read(%s, %s): %v", short(commit), fnPath, err)
		}
		if res.Commit != commit || len(res.Tree) != 40 {
			t.Fatalf("Read(%s, %s) = commit %s, tree %q; want the commit and a tree id", short(commit), fnPath, res.Commit, res.Tree)
		}
		return layout{res.Tree, res.PipelinesAsCode}
	}
	a1, b1 := read(first, "a"), read(first, "b")
	if a1 == b1 {
		t.Fatalf("directories a and b have the same tree %s", a1.Tree)
	}
	otherDir := repo.Commit(t, "main", map[string]string{"b/handle.go": "package function\n"}, "b only")
	if got := read(otherDir, "a"); got != a1 {
		t.Errorf("a commit changing b only: a's layout %+v, want %+v", got, a1)
	}
	if got := read(otherDir, "b"); got.Tree == b1.Tree {
		t.Errorf("a commit changing b: b's tree still %s (the control)", got.Tree)
	}
	deep := repo.Commit(t, "main", map[string]string{"a/sub/x.txt": "x\n"}, "a, deeper")
	a2 := read(deep, "a")
	if a2.Tree == a1.Tree || a2.PaC {
		t.Errorf("a file added deeper in a: layout %+v, want a new tree and no Pipelines-as-Code", a2)
	}
	tekton := repo.Commit(t, "main", map[string]string{".tekton/push.yaml": "kind: PipelineRun\n"}, "pipelines-as-code")
	if got := read(tekton, "a"); !got.PaC || got.Tree != a2.Tree {
		t.Errorf("after .tekton/ was added: %+v, want PipelinesAsCode and a's tree unchanged (%s)", got, a2.Tree)
	}
	// An older commit, through the history, as the deployed commit is read.
	head := Head{Branch: "main", Ref: "refs/heads/main", Commit: tekton}
	res, err := f.ReadAt(ctx, url, head, first, "", "a", anonymous(t, url), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a1, layout{res.Tree, res.PipelinesAsCode}); diff != "" {
		t.Errorf("ReadAt(first) layout (-want +got):\n%s", diff)
	}
}

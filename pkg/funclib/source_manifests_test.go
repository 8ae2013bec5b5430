package funclib

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fnops/func-operator/pkg/git"
	"github.com/fnops/func-operator/test/gitserver"
)

// TestSourceManifests_Fetcher reads func's rules through the git.Fetcher the operator
// gives SourceManifests: each directory's manifest, from one transfer of the commit.
func TestSourceManifests_Fetcher(t *testing.T) {
	root := gitserver.NewRepoRoot(t)
	srv := gitserver.StartHTTP(t, root)
	repo := gitserver.CreateRepo(t, root, "sources")
	commit := repo.Commit(t, "main", map[string]string{
		"node/func.yaml":           "specVersion: 0.36.0\nname: node\nruntime: node\n",
		"node/package.json":        `{"dependencies": {"faas-js-runtime": "^2.3.0"}}`,
		"bare/func.yaml":           "specVersion: 0.36.0\nname: bare\nruntime: node\n",
		"quarkus/func.yaml":        "specVersion: 0.36.0\nname: q\nruntime: quarkus\n",
		"quarkus/pom.xml":          "<project><properties><quarkus.platform.version>3.10.0</quarkus.platform.version></properties></project>",
		"go/func.yaml":             "specVersion: 0.36.0\nname: g\nruntime: go\n",
		"linked/func.yaml":         "specVersion: 0.36.0\nname: linked\nruntime: node\n",
		"linked/package.json/x.md": "a directory named package.json is no manifest",
	}, "init")
	f := git.NewFetcher(t.TempDir(), 0, SourceManifests{})
	tests := map[string]git.SourceMiddleware{
		"node":    {Version: "^2.3.0"},
		"quarkus": {Version: "3.10.0"},
		"go":      {},
		"bare":    {Problem: "the function has no package.json, where node functions pin faas-js-runtime"},
		"linked":  {Problem: "the function has no package.json, where node functions pin faas-js-runtime"},
	}
	cloned := 0
	for dir, want := range tests {
		got, err := f.Read(context.Background(), srv.URL("sources"), git.Head{Branch: "main", Ref: "refs/heads/main", Commit: commit}, dir, &git.Auth{}, time.Minute)
		if err != nil {
			t.Fatalf("Read %s: %v", dir, err)
		}
		if diff := cmp.Diff(want, got.SourceMiddleware); diff != "" {
			t.Errorf("%s: SourceMiddleware (-want +got):\n%s", dir, diff)
		}
		if got.Cloned {
			cloned++
		}
	}
	if cloned != 1 {
		t.Errorf("%d of %d reads transferred the commit, want 1", cloned, len(tests))
	}
}

package git

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/test/gitserver"
	"github.com/fnops/func-operator/test/testfs"
)

// TestFetcher_ReadAt reads func.yaml at a commit of the followed branch's history
// named as func's builds label images (7 hex digits), with the branch moved on since.
func TestFetcher_ReadAt(t *testing.T) {
	g := newHTTPGit(t)
	r, a := g.repo(t, "history", map[string]string{"fns/hello/func.yaml": funcYAML("hello", "go")})
	b := r.Commit(t, "main", map[string]string{"fns/hello/func.yaml": funcYAML("hello", "python")}, "B")
	elsewhere := r.Commit(t, "feature", map[string]string{"fns/hello/func.yaml": funcYAML("hello", "node")}, "not on main")
	url := g.srv.URL("history")
	tmp := t.TempDir()
	f := NewFetcher(tmp, 0)
	auth := anonymous(t, url)
	ctx := context.Background()
	main := Head{Branch: "main", Ref: "refs/heads/main", Commit: b}

	steps := []struct {
		name       string
		want       string
		result     Result
		wantErr    *wantError
		wantUpload int // upload-packs since the start
	}{{
		name:       "the head is read as Read reads it",
		want:       b[:7],
		result:     Result{Head: main, Metadata: md("hello", "python"), Cloned: true},
		wantUpload: 1,
	}, {
		// The control: the same abbreviation scheme, an older commit.
		name:       "an ancestor, abbreviated, is found and read at its own commit",
		want:       a[:7],
		result:     Result{Head: Head{Commit: a}, Metadata: md("hello", "go"), Cloned: true},
		wantUpload: 2,
	}, {
		name:       "the same ancestor again is cached",
		want:       a[:7],
		result:     Result{Head: Head{Commit: a}, Metadata: md("hello", "go")},
		wantUpload: 2,
	}, {
		name:       "in full, it is cached under its full id",
		want:       a,
		result:     Result{Head: Head{Commit: a}, Metadata: md("hello", "go")},
		wantUpload: 2,
	}, {
		name:   "a commit of another branch is not read",
		want:   elsewhere[:7],
		result: Result{Head: Head{Commit: elsewhere[:7]}, Cloned: true},
		wantErr: &wantError{reason: v1alpha1.ReasonCommitNotFound, stalling: true,
			msg: "commit " + elsewhere[:7] + " is not among the history of branch \"main\" (at " + v1alpha1.ShortCommit(b) + ") in repository " + url},
		wantUpload: 3,
	}, {
		name:       "what is not a commit id is refused without a fetch",
		want:       "v1.2.3",
		wantErr:    &wantError{reason: v1alpha1.ReasonCommitNotFound, stalling: true, msg: `"v1.2.3" is not a commit id`},
		wantUpload: 3,
	}}
	for _, s := range steps {
		got, err := f.ReadAt(ctx, url, main, s.want, "fns/hello", auth, gitTimeout)
		t.Run(s.name, func(t *testing.T) {
			checkError(t, s.wantErr, err)
			if diff := cmp.Diff(s.result, got, ignoreSourceMiddleware); diff != "" {
				t.Errorf("Result (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(s.wantUpload, g.srv.UploadPacks("history")); diff != "" {
				t.Errorf("upload-packs (-want +got):\n%s", diff)
			}
			testfs.AssertEmptyDir(t, tmp)
		})
	}
	// Read at the full commit ReadAt found is served from the cache too.
	got, err := f.Read(ctx, url, Head{Commit: a}, "fns/hello", auth, gitTimeout)
	if err != nil || got.Cloned || got.Metadata.Runtime != "go" {
		t.Errorf("Read at %s = %+v, %v; want go from the cache", short(a), got, err)
	}
}

func TestIsCommitPrefix(t *testing.T) {
	for s, want := range map[string]bool{
		"abc":  false, // git never abbreviates below 4
		"abcd": true,
		"ABCD": false, // callers lower-case
		"abcg": false,
		"v1.2": false,
		"":     false,
		"0123456789012345678901234567890123456789":                          true,
		"01234567890123456789012345678901234567890123456789012345678901234": false, // 65
	} {
		if got := isCommitPrefix(s); got != want {
			t.Errorf("isCommitPrefix(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestFetcher_ReadAtSSH finds an abbreviated ancestor over SSH (real sshd), where a
// commit is not fetched by its id (no uploadpack.allowReachableSHA1InWant): the
// followed branch's history is.
func TestFetcher_ReadAtSSH(t *testing.T) {
	srv := gitserver.StartSSH(t)
	root := gitserver.NewRepoRoot(t)
	repo := gitserver.CreateRepo(t, root, "fns")
	a := repo.Commit(t, "main", map[string]string{"func.yaml": funcYAML("hello", "go")}, "A")
	b := repo.Commit(t, "main", map[string]string{"func.yaml": funcYAML("hello", "python")}, "B")
	url := srv.URL(repo.Dir)
	auth := authFrom(t, url, map[string]string{KeySSHPrivateKey: string(srv.ClientPrivateKeyPEM()), KeyKnownHosts: string(srv.KnownHosts())})
	f := NewFetcher(t.TempDir(), 0)
	head := Head{Branch: "main", Ref: "refs/heads/main", Commit: b}

	got, err := f.ReadAt(context.Background(), url, head, a[:7], "", auth, gitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Result{Head: Head{Commit: a}, Metadata: md("hello", "go"), Cloned: true}, got, ignoreSourceMiddleware); diff != "" {
		t.Errorf("Result (-want +got):\n%s", diff)
	}
	// The control: the head's commit, by the same route.
	got, err = f.ReadAt(context.Background(), url, head, b[:7], "", auth, gitTimeout)
	if err != nil || got.Commit != b || got.Metadata.Runtime != "python" {
		t.Errorf("ReadAt(head) = %+v, %v; want python at %s", got, err, short(b))
	}
}

package git

import (
	"context"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/google/go-cmp/cmp"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/test/gitserver"
	"github.com/fnops/func-operator/test/testfs"
)

// TestFetcher_ReadAt reads func.yaml at a commit of the followed branch's history
// named as func's builds label images (7 hex digits), with the branch moved on since:
// a was deployed while the branch pointed at x (the anchor); b was pushed since.
func TestFetcher_ReadAt(t *testing.T) {
	g := newHTTPGit(t)
	r, a := g.repo(t, "history", map[string]string{"fns/hello/func.yaml": funcYAML("hello", "go")})
	x := r.Commit(t, "main", map[string]string{"fns/hello/func.yaml": funcYAML("hello", "python")}, "x")
	b := r.Commit(t, "main", map[string]string{"fns/hello/func.yaml": funcYAML("hello", "node")}, "b: pushed after the deploy")
	elsewhere := r.Commit(t, "feature", map[string]string{"fns/hello/func.yaml": funcYAML("hello", "rust")}, "not on main")
	url := g.srv.URL("history")
	tmp := t.TempDir()
	f := NewFetcher(tmp, 0, manifests)
	auth := anonymous(t, url)
	ctx := context.Background()
	main := Head{Branch: "main", Ref: "refs/heads/main", Commit: b}
	inHistory := func(what string) string {
		return what + " is not among the history of branch \"main\" (at " + v1alpha1.ShortCommit(b) + ") in repository " + url
	}

	steps := []struct {
		name         string
		before       func() // run before ReadAt
		want, anchor string
		result       Result
		wantErr      *wantError
		wantUpload   int // upload-packs since the start
	}{{
		name: "the head, not moved since the deploy, is read as Read reads it",
		want: b[:7], anchor: b,
		result:     Result{Head: main, Metadata: md("hello", "node"), Cloned: true},
		wantUpload: 1,
	}, {
		// The control of the next: the same abbreviation scheme, an older commit.
		name: "an ancestor of the anchor, abbreviated, is found and read at its own commit",
		want: a[:7], anchor: x,
		result:     Result{Head: Head{Commit: a}, Metadata: md("hello", "go"), Cloned: true},
		wantUpload: 2,
	}, {
		name: "the same again is cached",
		want: a[:7], anchor: x,
		result:     Result{Head: Head{Commit: a}, Metadata: md("hello", "go")},
		wantUpload: 2,
	}, {
		name: "a commit pushed after the deploy is never taken for an abbreviation, though the branch holds it",
		want: b[:7], anchor: x,
		result: Result{Head: Head{Commit: b[:7]}, Cloned: true},
		wantErr: &wantError{reason: v1alpha1.ReasonCommitNotFound, stalling: true,
			msg: "commit " + b[:7] + " is not among commit " + v1alpha1.ShortCommit(x) + ", which branch \"main\" pointed at when the image was first seen, and its ancestors among the history of branch \"main\" (at " + v1alpha1.ShortCommit(b) + ") in repository " + url},
		wantUpload: 3,
	}, {
		name:       "an abbreviation without an anchor is refused without a fetch",
		want:       a[:7],
		result:     Result{},
		wantErr:    &wantError{reason: v1alpha1.ReasonCommitNotFound, stalling: true, msg: "commit " + a[:7] + " is abbreviated, and the commit the followed reference pointed at when the image was first seen is not known"},
		wantUpload: 3,
	}, {
		name:       "in full, a commit of the branch's history is found",
		want:       a,
		result:     Result{Head: Head{Commit: a}, Metadata: md("hello", "go"), Cloned: true},
		wantUpload: 4,
	}, {
		name: "in full, a commit of another branch is not, though Read read it",
		before: func() {
			if _, err := f.Read(ctx, url, Head{Commit: elsewhere, Tip: "refs/heads/feature"}, "fns/hello", auth, gitTimeout); err != nil {
				t.Fatal(err)
			}
		},
		want:       elsewhere,
		result:     Result{Head: Head{Commit: elsewhere}, Cloned: true},
		wantErr:    &wantError{reason: v1alpha1.ReasonCommitNotFound, stalling: true, msg: inHistory("commit " + elsewhere)},
		wantUpload: 6,
	}, {
		name:       "what is not a commit id is refused without a fetch",
		want:       "v1.2.3",
		wantErr:    &wantError{reason: v1alpha1.ReasonCommitNotFound, stalling: true, msg: `"v1.2.3" is not a commit id`},
		wantUpload: 6,
	}}
	for _, s := range steps {
		if s.before != nil {
			s.before()
		}
		got, err := f.ReadAt(ctx, url, main, s.want, s.anchor, "fns/hello", auth, gitTimeout)
		t.Run(s.name, func(t *testing.T) {
			checkError(t, s.wantErr, err)
			if diff := cmp.Diff(s.result, got, ignoreSourceMiddleware, ignoreLayout); diff != "" {
				t.Errorf("Result (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(s.wantUpload, g.srv.UploadPacks("history")); diff != "" {
				t.Errorf("upload-packs (-want +got):\n%s", diff)
			}
			testfs.AssertEmptyDir(t, tmp)
		})
	}
}

func TestPickCommit(t *testing.T) {
	h := func(s string) plumbing.Hash { return plumbing.NewHash(s) }
	candidates := map[plumbing.Hash][]plumbing.Hash{
		h("abcd000000000000000000000000000000000001"): nil,
		h("abcd000000000000000000000000000000000002"): nil,
		h("1234500000000000000000000000000000000003"): nil,
	}
	head := Head{Branch: "main", Commit: "1234500000000000000000000000000000000003"}
	got, err := pickCommit(candidates, "12345", "the history", "http://127.0.0.1/r.git", head)
	if err != nil || got != h("1234500000000000000000000000000000000003") {
		t.Errorf("pickCommit(12345) = %s, %v; want the one commit it abbreviates", got, err)
	}
	_, err = pickCommit(candidates, "abcd", "the history", "http://127.0.0.1/r.git", head)
	if err == nil || err.Error() != "abcd abbreviates 2 commits of the history in repository http://127.0.0.1/r.git: it names none" {
		t.Errorf("pickCommit(abcd) error = %v, want it ambiguous", err)
	}
	_, err = pickCommit(candidates, "ffff", "the history", "http://127.0.0.1/r.git", head)
	if err == nil || !strings.Contains(err.Error(), "commit ffff is not among the history") {
		t.Errorf("pickCommit(ffff) error = %v, want it not found", err)
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
		if got := IsCommitPrefix(s); got != want {
			t.Errorf("IsCommitPrefix(%q) = %v, want %v", s, got, want)
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
	f := NewFetcher(t.TempDir(), 0, manifests)
	head := Head{Branch: "main", Ref: "refs/heads/main", Commit: b}

	got, err := f.ReadAt(context.Background(), url, head, a[:7], b, "", auth, gitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Result{Head: Head{Commit: a}, Metadata: md("hello", "go"), Cloned: true}, got, ignoreSourceMiddleware, ignoreLayout); diff != "" {
		t.Errorf("Result (-want +got):\n%s", diff)
	}
	// The control: the head's commit, by the same route.
	got, err = f.ReadAt(context.Background(), url, head, b[:7], b, "", auth, gitTimeout)
	if err != nil || got.Commit != b || got.Metadata.Runtime != "python" {
		t.Errorf("ReadAt(head) = %+v, %v; want python at %s", got, err, short(b))
	}
}

// TestFetcher_ReadAtWideHistory: the parent ids ReadAt keeps of the commits it
// fetched are bounded: a history that names more is refused, not kept.
func TestFetcher_ReadAtWideHistory(t *testing.T) {
	g := newHTTPGit(t)
	r, a := g.repo(t, "octopus", map[string]string{"fns/hello/func.yaml": funcYAML("hello", "go")})
	head := Head{Branch: "main", Ref: "refs/heads/main", Commit: r.CommitOctopus(t, "main", 9)} // 10 parents
	url := g.srv.URL("octopus")
	auth := anonymous(t, url)
	// The positive control: within the bound, a is found among the merge's parents.
	got, err := NewFetcher(t.TempDir(), 0, manifests).ReadAt(context.Background(), url, head, a, "", "fns/hello", auth, gitTimeout)
	if err != nil || got.Commit != a || got.Metadata.Name != "hello" {
		t.Fatalf("ReadAt %s below a merge of 10 parents: %+v, %v", short(a), got, err)
	}
	defer func(n int) { maxAncestorParents = n }(maxAncestorParents)
	maxAncestorParents = 8
	_, err = NewFetcher(t.TempDir(), 0, manifests).ReadAt(context.Background(), url, head, a, "", "fns/hello", auth, gitTimeout)
	checkError(t, &wantError{reason: v1alpha1.ReasonCloneTooLarge, stalling: true,
		msg: `the last 100 commits of branch "main" in repository ` + url + " name more than 8 parents in all: more history than the operator reads"}, err)
}

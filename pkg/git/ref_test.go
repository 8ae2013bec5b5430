package git

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/fnops/func-operator/api/v1alpha1"
)

func TestNewListing(t *testing.T) {
	const (
		c1, c2, tagObject = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222", "3333333333333333333333333333333333333333"
	)
	refs := []*plumbing.Reference{
		plumbing.NewSymbolicReference(plumbing.HEAD, "refs/heads/trunk"),
		plumbing.NewReferenceFromStrings("refs/heads/trunk", c1),
		plumbing.NewReferenceFromStrings("refs/heads/main\u00a0evil", c2),
		plumbing.NewReferenceFromStrings("refs/tags/light", c2),
		plumbing.NewReferenceFromStrings("refs/tags/annotated", tagObject),
		plumbing.NewReferenceFromStrings("refs/tags/annotated^{}", c1),
		plumbing.NewReferenceFromStrings("refs/tags/orphan^{}", c1), // peeled without its tag: ignored
		plumbing.NewReferenceFromStrings("refs/pull/1/head", c2),
	}
	got := newListing(refs, time.Time{})
	want := &Listing{
		Branches: map[string]string{"trunk": c1, "main\u00a0evil": c2},
		Tags:     map[string]string{"light": c2, "annotated": c1},
		Default:  "trunk",
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(Listing{})); diff != "" {
		t.Errorf("newListing (-want +got):\n%s", diff)
	}
}

func TestListing_Resolve(t *testing.T) {
	const url = "https://git.example/org/repo.git"
	l := &Listing{
		Default:  "main",
		Branches: map[string]string{"main": "c-main", "dev": "c-dev", "both": "c-branch-both"},
		Tags: map[string]string{
			"v1.0.0": "c100", "v1.2.0": "c120", "1.2.0": "c120b", "v1.3.0-rc.1": "c13rc", "v2.0.0": "c200",
			"latest": "c-main", "not-semver": "cx", "both": "c-tag-both",
		},
	}
	tests := []struct {
		name string
		ref  Ref
		want Head
		err  *wantError
	}{{
		name: "default branch",
		want: Head{Branch: "main", Ref: "refs/heads/main", Commit: "c-main"},
	}, {
		name: "named branch",
		ref:  Ref{Branch: "dev"},
		want: Head{Branch: "dev", Ref: "refs/heads/dev", Commit: "c-dev"},
	}, {
		name: "missing branch",
		ref:  Ref{Branch: "gone"},
		err:  &wantError{reason: v1alpha1.ReasonBranchNotFound, stalling: true, msgHas: []string{`branch "gone" not found`, "dev, main"}},
	}, {
		name: "tag",
		ref:  Ref{Tag: "v1.0.0"},
		want: Head{Ref: "refs/tags/v1.0.0", Commit: "c100"},
	}, {
		name: "missing tag",
		ref:  Ref{Tag: "v9"},
		err:  &wantError{reason: v1alpha1.ReasonTagNotFound, stalling: true, msgHas: []string{`tag "v9" not found`}},
	}, {
		name: "semver: the highest in range, pre-releases skipped",
		ref:  Ref{SemVer: ">=1.0.0 <2.0.0"},
		// v1.2.0 and 1.2.0 are the same version: the first by name wins, whatever the map order.
		want: Head{Ref: "refs/tags/1.2.0", Commit: "c120b"},
	}, {
		name: "semver: a range naming a pre-release includes it",
		ref:  Ref{SemVer: "~1.3.0-rc.0"},
		want: Head{Ref: "refs/tags/v1.3.0-rc.1", Commit: "c13rc"},
	}, {
		name: "semver: tilde",
		ref:  Ref{SemVer: "~1.0"},
		want: Head{Ref: "refs/tags/v1.0.0", Commit: "c100"},
	}, {
		name: "semver: nothing matches",
		ref:  Ref{SemVer: ">=3"},
		err:  &wantError{reason: v1alpha1.ReasonTagNotFound, stalling: true, msgHas: []string{`matches semver range ">=3"`}},
	}, {
		name: "semver: not a range",
		ref:  Ref{SemVer: "one point two"},
		err:  &wantError{reason: v1alpha1.ReasonSemVerInvalid, stalling: true, msgHas: []string{"not a semver range"}},
	}, {
		name: "branch, also a tag's name: the branch",
		ref:  Ref{Branch: "both"},
		want: Head{Branch: "both", Ref: "refs/heads/both", Commit: "c-branch-both"},
	}, {
		name: "revision: a branch by name",
		ref:  Ref{Revision: "dev"},
		want: Head{Branch: "dev", Ref: "refs/heads/dev", Commit: "c-dev"},
	}, {
		name: "revision: a tag by name",
		ref:  Ref{Revision: "v1.0.0"},
		want: Head{Ref: "refs/tags/v1.0.0", Commit: "c100"},
	}, {
		name: "revision: a name both a tag and a branch is the tag, as upstream's clone takes it",
		ref:  Ref{Revision: "both"},
		want: Head{Ref: "refs/tags/both", Commit: "c-tag-both"},
	}, {
		name: "revision: a full branch ref",
		ref:  Ref{Revision: "refs/heads/both"},
		want: Head{Branch: "both", Ref: "refs/heads/both", Commit: "c-branch-both"},
	}, {
		name: "revision: a full tag ref",
		ref:  Ref{Revision: "refs/tags/both"},
		want: Head{Ref: "refs/tags/both", Commit: "c-tag-both"},
	}, {
		name: "revision: neither a tag nor a branch",
		ref:  Ref{Revision: "gone"},
		err: &wantError{reason: v1alpha1.ReasonRevisionNotFound, stalling: true,
			msgHas: []string{`revision "gone" is neither a tag nor a branch`, "both, dev, main", "1.2.0, both, latest"}},
	}, {
		name: "revision: a full branch ref not there",
		ref:  Ref{Revision: "refs/heads/v1.0.0"},
		err:  &wantError{reason: v1alpha1.ReasonBranchNotFound, stalling: true, msgHas: []string{`branch "v1.0.0" not found`}},
	}, {
		name: "revision: a full tag ref not there",
		ref:  Ref{Revision: "refs/tags/dev"},
		err:  &wantError{reason: v1alpha1.ReasonTagNotFound, stalling: true, msgHas: []string{`tag "dev" not found`}},
	}, {
		name: "revision: another kind of ref",
		ref:  Ref{Revision: "refs/pull/1/head"},
		err:  &wantError{reason: v1alpha1.ReasonRevisionNotFound, stalling: true, msgHas: []string{"only a branch or a tag is followed"}},
	}, {
		name: "commit at a branch tip is fetched through it",
		ref:  Ref{Commit: "c-main"},
		want: Head{Commit: "c-main", Tip: "refs/heads/main"},
	}, {
		name: "commit at a tag only",
		ref:  Ref{Commit: "c200"},
		want: Head{Commit: "c200", Tip: "refs/tags/v2.0.0"},
	}, {
		name: "commit at no tip is fetched by id",
		ref:  Ref{Commit: "c-old"},
		want: Head{Commit: "c-old"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := l.Resolve(tt.ref, url, nil)
			checkError(t, tt.err, err)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Resolve(%v) (-want +got):\n%s", tt.ref, diff)
			}
		})
	}
}

// TestHead_Revision: status.git.resolvedRevision names a branch as
// spec.repository.revision takes it, plainly, and a tag in full.
func TestHead_Revision(t *testing.T) {
	tests := []struct {
		name string
		head Head
		want string
	}{
		{name: "branch", head: Head{Branch: "main", Ref: "refs/heads/main", Commit: "c1"}, want: "main"},
		{name: "tag", head: Head{Ref: "refs/tags/v1", Commit: "c1"}, want: "refs/tags/v1"},
		{name: "fixed commit", head: Head{Commit: "c1", Tip: "refs/heads/main"}, want: "c1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.head.Revision(); got != tt.want {
				t.Errorf("Revision() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestFetcher_ReadRefs reads func.yaml at tags, semver ranges and fixed commits from a
// real git server.
func TestFetcher_ReadRefs(t *testing.T) {
	g := newHTTPGit(t)
	r, c0 := g.repo(t, "tagged", map[string]string{"func.yaml": funcYAML("v0", "go")})
	c1 := r.Commit(t, "main", map[string]string{"func.yaml": funcYAML("v1", "go")}, "v1")
	c2 := r.Commit(t, "main", map[string]string{"func.yaml": funcYAML("v2", "go")}, "v2")
	c3 := r.Commit(t, "main", map[string]string{"func.yaml": funcYAML("v3", "go")}, "v3")
	r.Tag(t, "v1.0.0", c1, true)
	r.Tag(t, "v1.1.0", c2, false)
	url := g.srv.URL(r.Name)
	f := NewFetcher(t.TempDir(), 0, manifests)
	auth := anonymous(t, url)
	listing := func() *Listing {
		t.Helper()
		l, _, err := f.List(context.Background(), ListingKey{URL: url, Identity: Anonymous}, auth, gitTimeout, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	missing := strings.Repeat("ab", 20)

	tests := []struct {
		name         string
		allowByID    bool
		ref          Ref
		wantName     string
		wantCommit   string
		wantResolved string
		err          *wantError
	}{
		{name: "annotated tag", ref: Ref{Tag: "v1.0.0"}, wantName: "v1", wantCommit: c1, wantResolved: "refs/tags/v1.0.0"},
		{name: "lightweight tag", ref: Ref{Tag: "v1.1.0"}, wantName: "v2", wantCommit: c2, wantResolved: "refs/tags/v1.1.0"},
		{name: "semver range", ref: Ref{SemVer: "^1"}, wantName: "v2", wantCommit: c2, wantResolved: "refs/tags/v1.1.0"},
		{name: "revision: an annotated tag by name", ref: Ref{Revision: "v1.0.0"}, wantName: "v1", wantCommit: c1, wantResolved: "refs/tags/v1.0.0"},
		{name: "revision: a full tag ref", ref: Ref{Revision: "refs/tags/v1.1.0"}, wantName: "v2", wantCommit: c2, wantResolved: "refs/tags/v1.1.0"},
		{name: "revision: a branch by name", ref: Ref{Revision: "main"}, wantName: "v3", wantCommit: c3, wantResolved: "refs/heads/main"},
		{name: "revision: a full branch ref", ref: Ref{Revision: "refs/heads/main"}, wantName: "v3", wantCommit: c3, wantResolved: "refs/heads/main"},
		{name: "commit at a tag", ref: Ref{Commit: c1}, wantName: "v1", wantCommit: c1, wantResolved: c1},
		{name: "commit at the branch tip", ref: Ref{Commit: c3}, wantName: "v3", wantCommit: c3, wantResolved: c3},
		{name: "commit at no tip, server refuses fetching by id", ref: Ref{Commit: c0},
			err: &wantError{reason: v1alpha1.ReasonCommitNotFound, stalling: true, msgHas: []string{"uploadpack.allowReachableSHA1InWant"}}},
		{name: "commit at no tip, server allows fetching by id", allowByID: true, ref: Ref{Commit: c0}, wantName: "v0", wantCommit: c0, wantResolved: c0},
		{name: "commit the repository does not hold", allowByID: true, ref: Ref{Commit: missing},
			err: &wantError{reason: v1alpha1.ReasonCommitNotFound, stalling: true, msgHas: []string{missing}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r.SetConfig(t, "uploadpack.allowReachableSHA1InWant", map[bool]string{true: "true", false: "false"}[tt.allowByID])
			head, err := listing().Resolve(tt.ref, url, auth)
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			res, err := f.Read(context.Background(), url, head, "", auth, gitTimeout)
			checkError(t, tt.err, err)
			if tt.err != nil {
				return
			}
			if res.Metadata.Name != tt.wantName || res.Commit != tt.wantCommit || res.Resolved() != tt.wantResolved {
				t.Errorf("Read(%v) = name %q, commit %s, resolved %q; want %q, %s, %q",
					tt.ref, res.Metadata.Name, res.Commit, res.Resolved(), tt.wantName, tt.wantCommit, tt.wantResolved)
			}
		})
	}
}

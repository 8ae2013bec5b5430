package git

import (
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/fnops/func-operator/api/v1alpha1"
)

// Ref is what a Function follows in its repository, as Flux's GitRepository ref: a
// branch (empty: the remote's default one), a tag, the highest tag matching a semver
// range, or a fixed commit; or a revision, as the upstream operator names it (a
// branch or a tag: Listing.Resolve says which). At most one field is set (the API
// server checks it).
type Ref struct {
	Branch   string
	Revision string
	Tag      string
	SemVer   string
	Commit   string
}

// Head is a ref resolved against a listing: the reference followed and its commit.
type Head struct {
	// Branch is the branch followed, for a branch ref.
	Branch string
	// Ref is the full name of the reference followed (refs/heads/..., refs/tags/...);
	// empty for a fixed commit.
	Ref string
	// Commit is the commit the reference points at.
	Commit string
	// Tip, for a fixed commit, is a reference whose tip it is: the commit is fetched
	// through it, as not every server lets a client fetch a commit by its id.
	Tip string
}

// Kind names what head follows, as SourceReady's message shows it: "branch main",
// "tag v1.2.3" or "commit" (the message names the commit itself).
func (h Head) Kind() string {
	switch {
	case h.Branch != "":
		return "branch " + h.Branch
	case strings.HasPrefix(h.Ref, "refs/tags/"):
		return "tag " + strings.TrimPrefix(h.Ref, "refs/tags/")
	}
	return "commit"
}

// fixed is true for a fixed commit.
func (h Head) fixed() bool { return h.Ref == "" && h.Branch == "" }

// fetchRef is the reference to fetch head through; empty: fetch the commit by id.
func (h Head) fetchRef() string {
	switch {
	case h.Ref != "":
		return h.Ref
	case h.Branch != "":
		return "refs/heads/" + h.Branch
	}
	return h.Tip
}

// Resolved is the ref as status.git.resolvedRef shows it: the full reference name,
// or the commit for a fixed one.
func (h Head) Resolved() string {
	if h.Ref == "" {
		return h.Commit
	}
	return h.Ref
}

// Revision is head as status.git.resolvedRevision shows it, in the form
// spec.repository.revision takes: the branch's name, else as Resolved.
func (h Head) Revision() string {
	if h.Branch != "" {
		return h.Branch
	}
	return h.Resolved()
}

// Resolve returns the head ref points at in the listing of repository url, read with
// auth. A fixed commit resolves to itself: whether the repository holds it shows when
// it is fetched.
func (l *Listing) Resolve(ref Ref, url string, auth *Auth) (Head, error) {
	if auth != nil {
		url = scrub(url, auth.secrets)
	} else {
		url = scrub(url, nil)
	}
	switch {
	case ref.Commit != "":
		return Head{Commit: ref.Commit, Tip: l.tipAt(ref.Commit)}, nil
	case ref.Tag != "":
		return l.resolveTag(ref.Tag, url)
	case ref.SemVer != "":
		return l.resolveSemVer(ref.SemVer, url)
	case ref.Revision != "":
		return l.resolveRevision(ref.Revision, url)
	}
	branch := ref.Branch
	if branch == "" {
		if l.Default == "" {
			return Head{}, repositoryStalling(v1alpha1.ReasonBranchNotFound,
				"repository %s does not advertise a default branch: set spec.repository.branch", url)
		}
		branch = l.Default
	}
	return l.resolveBranch(branch, url)
}

func (l *Listing) resolveBranch(branch, url string) (Head, error) {
	commit, ok := l.Branches[branch]
	if !ok {
		return Head{}, repositoryStalling(v1alpha1.ReasonBranchNotFound, "branch %q not found in repository %s (branches: %s)",
			branch, url, listSome(l.Branches))
	}
	return Head{Branch: branch, Ref: "refs/heads/" + branch, Commit: commit}, nil
}

func (l *Listing) resolveTag(tag, url string) (Head, error) {
	commit, ok := l.Tags[tag]
	if !ok {
		return Head{}, repositoryStalling(v1alpha1.ReasonTagNotFound, "tag %q not found in repository %s (tags: %s)", tag, url, listSome(l.Tags))
	}
	return Head{Ref: "refs/tags/" + tag, Commit: commit}, nil
}

// resolveRevision resolves spec.repository.revision as the upstream operator's clone
// does (go-git's, which expands a name by git's rules, refs/tags/<name> before
// refs/heads/<name>): a full ref names a branch or a tag; a plain name is the tag of
// that name when the repository has one, else the branch. Upstream's clone fails on
// a name that is only a tag (it fetches refs/heads/<name> alone); it is followed
// here, as ref.tag is.
func (l *Listing) resolveRevision(rev, url string) (Head, error) {
	switch {
	case strings.HasPrefix(rev, "refs/heads/"):
		return l.resolveBranch(strings.TrimPrefix(rev, "refs/heads/"), url)
	case strings.HasPrefix(rev, "refs/tags/"):
		return l.resolveTag(strings.TrimPrefix(rev, "refs/tags/"), url)
	case strings.HasPrefix(rev, "refs/"):
		// The API server refuses it; a Function stored before that rule is told why.
		return Head{}, stalling(v1alpha1.ReasonRevisionNotFound,
			"spec.repository.revision %q: only a branch or a tag is followed (refs/heads/..., refs/tags/... or a plain name)", rev)
	}
	if _, ok := l.Tags[rev]; ok {
		return l.resolveTag(rev, url)
	}
	if _, ok := l.Branches[rev]; ok {
		return l.resolveBranch(rev, url)
	}
	return Head{}, repositoryStalling(v1alpha1.ReasonRevisionNotFound,
		"revision %q is neither a tag nor a branch of repository %s (branches: %s; tags: %s)", rev, url, listSome(l.Branches), listSome(l.Tags))
}

// resolveSemVer picks the tag of the highest version in the range, as Flux does: tags
// that are not semantic versions are skipped, and so are pre-releases unless the range
// names one.
func (l *Listing) resolveSemVer(rng, url string) (Head, error) {
	c, err := semver.NewConstraint(rng)
	if err != nil {
		return Head{}, stalling(v1alpha1.ReasonSemVerInvalid, "spec.repository.ref.semver %q is not a semver range: %s", rng, err)
	}
	for _, t := range l.versions() {
		if c.Check(t.v) {
			return Head{Ref: "refs/tags/" + t.tag, Commit: l.Tags[t.tag]}, nil
		}
	}
	return Head{}, repositoryStalling(v1alpha1.ReasonTagNotFound, "no tag of repository %s matches semver range %q (tags: %s)",
		url, rng, listSome(l.Tags))
}

// versionTag is a tag that is a semantic version.
type versionTag struct {
	tag string
	v   *semver.Version
}

// versions returns the tags that are semantic versions, highest first; equal versions
// (v1.0.0 and 1.0.0) by name, so the choice never depends on map order. They are
// parsed once per listing, which every Function on the repository shares.
func (l *Listing) versions() []versionTag {
	l.versionsOnce.Do(func() {
		for tag := range l.Tags {
			if v, err := semver.NewVersion(tag); err == nil {
				l.sortedVersions = append(l.sortedVersions, versionTag{tag, v})
			}
		}
		sort.Slice(l.sortedVersions, func(i, j int) bool {
			a, b := l.sortedVersions[i], l.sortedVersions[j]
			if cmp := a.v.Compare(b.v); cmp != 0 {
				return cmp > 0
			}
			return a.tag < b.tag
		})
	})
	return l.sortedVersions
}

// tipAt is the first branch, else tag, by name whose tip is commit; empty when none.
func (l *Listing) tipAt(commit string) string {
	for _, kind := range []struct {
		prefix string
		refs   map[string]string
	}{{"refs/heads/", l.Branches}, {"refs/tags/", l.Tags}} {
		names := make([]string, 0, len(kind.refs))
		for name, c := range kind.refs {
			if c == commit {
				names = append(names, name)
			}
		}
		if len(names) > 0 {
			sort.Strings(names)
			return kind.prefix + names[0]
		}
	}
	return ""
}

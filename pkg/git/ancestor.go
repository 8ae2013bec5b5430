package git

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/rerror"
)

// AncestorDepth is how many commits of the followed reference, its head included,
// ReadAt looks through for the commit it is asked for.
const AncestorDepth = 100

// ReadAt returns what func.yaml of directory fnPath says at the commit want names:
// a commit id in full or abbreviated (func labels the images it builds with the
// first 7 hex digits of the commit), looked for among the last AncestorDepth commits
// of head (the commit the check resolved the followed reference to). So only a
// commit of the followed reference's history is ever read, and one of its ancestors
// needs no server that lets commits be fetched by their id.
//
// An abbreviation is looked for only among anchor and its ancestors: anchor is the
// commit the followed reference pointed at when the image that names want was first
// seen. A commit pushed since, however its id was chosen to begin, is never taken
// for it; without an anchor, an abbreviation is refused. A full id cannot be chosen
// so, and is looked for in head's whole fetched history.
//
// The head itself is read as Read reads it (from the cache when it is there). An
// older commit costs one fetch of the last AncestorDepth commits of head, bounded by
// the Fetcher's Limits as a clone is; what it found is cached by (url, head commit,
// want, anchor, fnPath, limits, credentials identity), as Read caches.
// Callers check access with List, using their own credentials, before every ReadAt.
func (f *Fetcher) ReadAt(ctx context.Context, url string, head Head, want, anchor, fnPath string, auth *Auth, timeout time.Duration) (Result, error) {
	want = strings.ToLower(want)
	if !IsCommitPrefix(want) {
		return Result{}, stalling(v1alpha1.ReasonCommitNotFound, "%q is not a commit id", want)
	}
	full := isFullCommit(want)
	switch {
	case strings.HasPrefix(head.Commit, want) && (full || anchor == head.Commit):
		return f.Read(ctx, url, head, fnPath, auth, timeout)
	case !full && anchor == "":
		return Result{}, stalling(v1alpha1.ReasonCommitNotFound,
			"commit %s is abbreviated, and the commit the followed reference pointed at when the image was first seen is not known", want)
	}
	if full {
		anchor = ""
	}
	if auth == nil {
		auth = &Auth{}
	}
	lim := f.limits()
	// Never served from Read's entries: a commit Read read (another branch's, a
	// fixed one) is not thereby in head's history.
	key := "at\x00" + want + "\x00" + anchor + "\x00" + cacheKey(url, head.Commit, fnPath, lim, auth)
	at := func(c cached) Head { return Head{Commit: c.commit} }
	if v, ok := f.cache.Get(key); ok {
		return f.result(at(v.(cached)), v.(cached), false)
	}
	v, err, _ := f.flight.Do(key, func() (interface{}, error) {
		if v, ok := f.cache.Get(key); ok {
			return v, nil
		}
		c, err := f.cloneAncestor(ctx, url, head, want, anchor, fnPath, auth, timeout)
		if err != nil {
			return nil, err
		}
		f.cache.Add(key, c)
		return c, nil
	})
	if err != nil {
		return Result{}, err
	}
	return f.result(at(v.(cached)), v.(cached), true)
}

// cloneAncestor fetches the last AncestorDepth commits of head into a temporary
// directory that is always removed, and reads func.yaml at the one commit want
// names: among anchor and its ancestors, or, without anchor, among all it fetched.
func (f *Fetcher) cloneAncestor(ctx context.Context, url string, head Head, want, anchor, fnPath string, auth *Auth, timeout time.Duration) (cached, error) {
	ctx, cancel := timeoutContext(ctx, timeout)
	defer cancel()
	dir, err := os.MkdirTemp(f.TmpDir, HistoryDirPrefix)
	if err != nil {
		return cached{}, fmt.Errorf("creating a temporary directory for the clone: %w", err)
	}
	defer func() { _ = os.RemoveAll(dir) }()

	f.clones.Add(1)
	repo, err := shallowFetch(ctx, url, head, AncestorDepth, dir, auth, f.netOptions(url, timeout, false))
	if err != nil {
		if isStallingCacheable(err) {
			return cached{commit: want, err: err}, nil
		}
		return cached{}, err
	}
	// The clone holds the commits of head's history it fetched and nothing else.
	commits := map[plumbing.Hash][]plumbing.Hash{} // commit -> parents
	iter, err := repo.CommitObjects()
	if err != nil {
		return cached{}, transient("listing the commits of the clone: %s", err)
	}
	parents := 0
	err = iter.ForEach(func(c *object.Commit) error {
		// A commit may name any number of parents: what is kept of them is bounded.
		if parents += len(c.ParentHashes); parents > maxAncestorParents {
			return errWideHistory
		}
		commits[c.Hash] = slices.Clone(c.ParentHashes)
		return nil
	})
	if errors.Is(err, errWideHistory) {
		return cached{commit: want, err: stalling(v1alpha1.ReasonCloneTooLarge,
			"the last %d commits of %s in repository %s name more than %d parents in all: more history than the operator reads",
			AncestorDepth, refText(head), scrub(url, auth.secrets), maxAncestorParents)}, nil
	}
	if err != nil {
		return cached{}, transient("listing the commits of the clone: %s", err)
	}
	where := fmt.Sprintf("the last %d commits of %s", AncestorDepth, refText(head))
	if len(commits) < AncestorDepth {
		where = "the history of " + refText(head)
	}
	candidates := commits
	if anchor != "" {
		a := plumbing.NewHash(anchor)
		if _, ok := commits[a]; !ok {
			return cached{commit: want, err: stalling(v1alpha1.ReasonCommitNotFound,
				"commit %s, which %s pointed at when the image was first seen, is not among %s (at %s) in repository %s",
				v1alpha1.ShortCommit(anchor), refText(head), where, v1alpha1.ShortCommit(head.Commit), scrub(url, auth.secrets))}, nil
		}
		candidates = ancestors(commits, a)
		where = fmt.Sprintf("commit %s, which %s pointed at when the image was first seen, and its ancestors among %s",
			v1alpha1.ShortCommit(anchor), refText(head), where)
	}
	found, err := pickCommit(candidates, want, where, scrub(url, auth.secrets), head)
	if err != nil {
		return cached{commit: want, err: err}, nil
	}
	s, err := keep(repo.Storer, found, Head{Commit: found.String()}, url, auth, f.kept, fnPath, -1)
	if err != nil {
		return f.load(found.String(), nil, nil, err)
	}
	content, files, err := s.read(fnPath)
	c, err := f.load(found.String(), content, files, err)
	c.layout = s.layoutOf(fnPath)
	return c, err
}

// maxAncestorParents bounds the parent ids ReadAt keeps of the commits it fetched,
// 20 bytes each (5 MiB in all): a commit object of cloneMaxObjectBytes can name
// 700,000 parents. Real histories name one or two per commit, and a clone holds at
// most cloneMaxFiles objects.
var maxAncestorParents = 1 << 18 // a variable for the tests

var errWideHistory = errors.New("too many parents")

// HistoryDirPrefix begins the names of ReadAt's temporary clones (under TmpDir).
const HistoryDirPrefix = "history-"

// ancestors returns from and the commits of commits it reaches through their parents.
func ancestors(commits map[plumbing.Hash][]plumbing.Hash, from plumbing.Hash) map[plumbing.Hash][]plumbing.Hash {
	out := map[plumbing.Hash][]plumbing.Hash{}
	next := []plumbing.Hash{from}
	for len(next) > 0 {
		h := next[len(next)-1]
		next = next[:len(next)-1]
		parents, ok := commits[h]
		if _, seen := out[h]; seen || !ok {
			continue // seen, or beyond the shallow clone's edge
		}
		out[h] = parents
		next = append(next, parents...)
	}
	return out
}

// pickCommit returns the one commit of candidates whose id begins with want, or why
// there is none: where names the commits looked through, for messages.
func pickCommit(candidates map[plumbing.Hash][]plumbing.Hash, want, where, url string, head Head) (plumbing.Hash, error) {
	var found []plumbing.Hash
	for h := range candidates {
		if strings.HasPrefix(h.String(), want) {
			found = append(found, h)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return plumbing.ZeroHash, stalling(v1alpha1.ReasonCommitNotFound, "commit %s is not among %s (at %s) in repository %s",
			want, where, v1alpha1.ShortCommit(head.Commit), url)
	default:
		return plumbing.ZeroHash, stalling(v1alpha1.ReasonCommitNotFound, "%s abbreviates %d commits of %s in repository %s: it names none",
			want, len(found), where, url)
	}
}

// isStallingCacheable is true for a stalling error that depends only on what the
// repository holds at a commit (see cacheable).
func isStallingCacheable(err error) bool {
	return rerror.IsStalling(err) && cacheable(err)
}

// isFullCommit is true for a whole commit id, SHA-1 or SHA-256.
func isFullCommit(s string) bool { return len(s) == 40 || len(s) == 64 }

// IsCommitPrefix is true for 4 to 64 lowercase hex digits: a commit id (SHA-1 or
// SHA-256), whole or abbreviated as git abbreviates (never shorter than 4).
func IsCommitPrefix(s string) bool {
	if len(s) < 4 || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

package git

import (
	"context"
	"fmt"
	"os"
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
// The head itself is read as Read reads it (from the cache when it is there). An
// older commit costs one fetch of the last AncestorDepth commits of head, bounded by
// the Fetcher's Limits as a clone is; what it found is cached by (url, head commit,
// want, fnPath, limits, trust), as Read caches, and under the full commit for Read.
// Callers check access with List, using their own credentials, before every ReadAt.
func (f *Fetcher) ReadAt(ctx context.Context, url string, head Head, want, fnPath string, auth *Auth, timeout time.Duration) (Result, error) {
	want = strings.ToLower(want)
	if !isCommitPrefix(want) {
		return Result{}, stalling(v1alpha1.ReasonCommitNotFound, "%q is not a commit id", want)
	}
	if strings.HasPrefix(head.Commit, want) {
		return f.Read(ctx, url, head, fnPath, auth, timeout)
	}
	if auth == nil {
		auth = &Auth{}
	}
	lim := f.limits()
	key := "at\x00" + want + "\x00" + cacheKey(url, head.Commit, fnPath, lim, auth)
	at := func(c cached) Head { return Head{Commit: c.commit} }
	if v, ok := f.cache.Get(key); ok {
		return f.result(at(v.(cached)), v.(cached), false)
	}
	if len(want) == 40 || len(want) == 64 {
		// A commit in full that Read or an earlier ReadAt read.
		if v, ok := f.cache.Get(cacheKey(url, want, fnPath, lim, auth)); ok {
			return f.result(at(v.(cached)), v.(cached), false)
		}
	}
	v, err, _ := f.flight.Do(key, func() (interface{}, error) {
		if v, ok := f.cache.Get(key); ok {
			return v, nil
		}
		c, err := f.cloneAncestor(ctx, url, head, want, fnPath, auth, timeout)
		if err != nil {
			return nil, err
		}
		f.cache.Add(key, c)
		if c.err == nil && len(c.commit) > len(want) {
			f.cache.Add(cacheKey(url, c.commit, fnPath, lim, auth), c)
		}
		return c, nil
	})
	if err != nil {
		return Result{}, err
	}
	return f.result(at(v.(cached)), v.(cached), true)
}

// cloneAncestor fetches the last AncestorDepth commits of head into a temporary
// directory that is always removed, and reads func.yaml at the one commit want
// abbreviates.
func (f *Fetcher) cloneAncestor(ctx context.Context, url string, head Head, want, fnPath string, auth *Auth, timeout time.Duration) (cached, error) {
	ctx, cancel := timeoutContext(ctx, timeout)
	defer cancel()
	dir, err := os.MkdirTemp(f.TmpDir, "history-")
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
	iter, err := repo.CommitObjects()
	if err != nil {
		return cached{}, transient("listing the commits of the clone: %s", err)
	}
	var (
		found []plumbing.Hash
		seen  int
	)
	err = iter.ForEach(func(c *object.Commit) error {
		seen++
		if strings.HasPrefix(c.Hash.String(), want) {
			found = append(found, c.Hash)
		}
		return nil
	})
	if err != nil {
		return cached{}, transient("listing the commits of the clone: %s", err)
	}
	where := fmt.Sprintf("the last %d commits of %s", AncestorDepth, refText(head))
	if seen < AncestorDepth {
		where = "the history of " + refText(head)
	}
	switch len(found) {
	case 0:
		return cached{commit: want, err: stalling(v1alpha1.ReasonCommitNotFound, "commit %s is not among %s (at %s) in repository %s",
			want, where, v1alpha1.ShortCommit(head.Commit), scrub(url, auth.secrets))}, nil
	case 1:
	default:
		return cached{commit: want, err: stalling(v1alpha1.ReasonCommitNotFound, "%s abbreviates %d commits of %s in repository %s",
			want, len(found), where, scrub(url, auth.secrets))}, nil
	}
	commit, content, fnDir, err := readCommit(repo, found[0], Head{Commit: found[0].String()}, fnPath, url, auth)
	if commit == "" {
		commit = found[0].String()
	}
	return f.load(commit, content, fnDir, err)
}

// isStallingCacheable is true for a stalling error that depends only on what the
// repository holds at a commit (see cacheable).
func isStallingCacheable(err error) bool {
	return rerror.IsStalling(err) && cacheable(err)
}

// isCommitPrefix is true for 4 to 64 lowercase hex digits: a commit id (SHA-1 or
// SHA-256), whole or abbreviated as git abbreviates (never shorter than 4).
func isCommitPrefix(s string) bool {
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

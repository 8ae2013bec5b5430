package git

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/fnops/func-operator/pkg/rerror"
)

// DefaultCommitStoreBytes bounds, by default, what a Fetcher keeps of the commits it
// fetched (see Fetcher.CommitStoreBytes).
const DefaultCommitStoreBytes = 64 << 20

// commitKey names one object transfer: a commit of a repository, fetched with one
// identity's credentials and trust (Auth.Identity covers the CA bundle), under one
// set of limits (a commit refused as too large is fetched again when the limits grow).
type commitKey struct {
	url      string
	commit   string
	identity string
	limits   Limits
}

func newCommitKey(url, commit string, auth *Auth, lim Limits) commitKey {
	return commitKey{url: url, commit: commit, identity: auth.Identity(), limits: lim}
}

func (k commitKey) String() string {
	return fmt.Sprintf("%s\x00%s\x00%s\x00%d/%d/%d", k.url, k.commit, k.identity, k.limits.MaxBytes, k.limits.MaxFiles, k.limits.MaxObjectBytes)
}

// commitStore is an LRU of snapshots bounded by their total size.
type commitStore struct {
	mu   sync.Mutex
	kept *byteLRU[commitKey, *snapshot]
	// evicted counts the snapshots dropped to keep within the bound; notKept those
	// larger than the bound on their own; refetched the transfers of a commit dropped
	// before, which dropped remembers (the most recent evictedKeys).
	evicted, notKept, refetched uint64
	// dropped holds the keys of the most recently dropped commits, evictedKeys at most.
	dropped *simplelru.LRU[commitKey, struct{}]
}

// evictedKeys is how many dropped commits the store remembers, to count a transfer
// of one of them again as a refetch: a few dozen bytes each.
const evictedKeys = 4096

// CommitStoreStats is what the commit store holds, and what it dropped.
type CommitStoreStats struct {
	// Bytes is what the kept commits count (their objects' content and 128 bytes
	// each); Commits how many are kept.
	Bytes   int64
	Commits int
	// Evictions counts the commits dropped, least recently used first, to keep within
	// the bound since the Fetcher was made: after pushes, the turnover of commits no
	// Function reads any more.
	Evictions uint64
	// Refetches counts the transfers of a commit the store had dropped: a Function
	// still read it. A steady rate says the bound is too small for the commits in use.
	Refetches uint64
	// NotKept counts the commits too large for the bound on their own: used, not kept,
	// so that every directory of such a commit costs a transfer of its own.
	NotKept uint64
}

// CommitStoreStats reports what the commit store holds now.
func (f *Fetcher) CommitStoreStats() CommitStoreStats {
	cs := f.commits
	if cs == nil {
		return CommitStoreStats{}
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return CommitStoreStats{Bytes: cs.kept.bytes, Commits: cs.kept.len(), Evictions: cs.evicted, Refetches: cs.refetched, NotKept: cs.notKept}
}

// TrimCommitStore drops the least recently used commits until what is kept fits the
// bound: after the bound was lowered.
func (f *Fetcher) TrimCommitStore() {
	cs := f.commits
	if cs == nil {
		return
	}
	max := f.commitStoreBytes()
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.trim(max)
}

func newCommitStore() *commitStore {
	dropped, _ := simplelru.NewLRU[commitKey, struct{}](evictedKeys, nil)
	return &commitStore{kept: newByteLRU[commitKey, *snapshot](), dropped: dropped}
}

func (cs *commitStore) get(key commitKey) (*snapshot, bool) {
	if cs == nil { // a Fetcher not made by NewFetcher keeps no commit
		return nil, false
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.kept.get(key)
}

// add keeps s under key, evicting the least recently used snapshots past max bytes;
// asked is the key the transfer was made for (its commit may no longer be the one
// fetched: a branch's tip moved on). A partial snapshot, or one larger than max on
// its own, is not kept.
func (cs *commitStore) add(key, asked commitKey, s *snapshot, max int64) {
	if cs == nil {
		return
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if !s.partial { // a partial one never replaces a whole one
		cs.kept.remove(key)
	}
	// Both keys are forgotten (no short-circuit): neither is a refetch again unless
	// dropped again.
	fetched, again := cs.dropped.Remove(key), cs.dropped.Remove(asked)
	if fetched || again {
		cs.refetched++
	}
	if s.partial || s.size > max {
		cs.notKept++
		cs.trim(max) // a bound lowered since
		return
	}
	cs.kept.add(key, s, s.size)
	cs.trim(max)
}

// trim evicts the least recently used snapshots past max bytes, and remembers their
// keys among the most recent evictedKeys dropped; cs.mu is held.
func (cs *commitStore) trim(max int64) {
	cs.kept.trim(max, func(key commitKey, _ *snapshot) {
		cs.evicted++
		cs.dropped.Add(key, struct{}{})
	})
}

// bytes is what the kept snapshots hold.
func (cs *commitStore) bytes() int64 {
	if cs == nil {
		return 0
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.kept.bytes
}

func (f *Fetcher) commitStoreBytes() int64 {
	if f.CommitStoreBytes != nil {
		if n := f.CommitStoreBytes(); n > 0 {
			return n
		}
	}
	return DefaultCommitStoreBytes
}

// snapshot returns the commit head names, fetched with auth's credentials, for
// reading directory fnPath: from the commit store, or from one fetch shared by every
// concurrent caller with the same key. A commit whose trees are more than the store
// may hold is kept only for the directory its fetch was made for: a caller for
// another directory fetches it again. fetched is true for the caller whose call made
// the transfer.
func (f *Fetcher) snapshot(ctx context.Context, url string, head Head, fnPath string, auth *Auth, lim Limits, timeout time.Duration) (s *snapshot, fetched bool, err error) {
	key := newCommitKey(url, head.Commit, auth, lim)
	if head.Commit != "" {
		if s, ok := f.commits.get(key); ok {
			return s, false, nil
		}
	}
	flightKey := key.String()
	if head.Commit == "" {
		flightKey += "\x00" + head.Ref
	}
	do := func(flightKey string) (*snapshot, error) {
		v, err, _ := f.commitFlight.Do(flightKey, func() (interface{}, error) {
			if head.Commit != "" {
				if s, ok := f.commits.get(key); ok {
					return s, nil
				}
			}
			fetched = true
			s, err := f.fetch(ctx, url, head, fnPath, auth, timeout)
			if err != nil {
				return nil, err
			}
			if s.commit != "" {
				k := key
				k.commit = s.commit
				f.commits.add(k, key, s, f.commitStoreBytes())
			}
			return s, nil
		})
		if err != nil {
			return nil, err
		}
		return v.(*snapshot), nil
	}
	s, err = do(flightKey)
	if err == nil && !s.reads(fnPath) {
		s, err = do(flightKey + "\x00" + fnPath)
	}
	if err != nil {
		return nil, fetched, err
	}
	return s, fetched, nil
}

// fetch makes the one transfer of a commit: a shallow fetch into a temporary
// directory that is always removed, bounded by the limits as every clone is, of
// which a snapshot is kept (of directory fnPath alone, when the commit's trees are
// more than the store may hold). Stalling errors about what the commit holds come
// back inside the snapshot, so they are kept too; errors reaching the repository are
// not.
func (f *Fetcher) fetch(ctx context.Context, url string, head Head, fnPath string, auth *Auth, timeout time.Duration) (*snapshot, error) {
	ctx, cancel := timeoutContext(ctx, timeout)
	defer cancel()
	dir, err := os.MkdirTemp(f.TmpDir, "clone-")
	if err != nil {
		return nil, fmt.Errorf("creating a temporary directory for the clone: %w", err)
	}
	defer func() { _ = os.RemoveAll(dir) }()

	f.clones.Add(1)
	var s *snapshot
	repo, err := shallowFetch(ctx, url, head, 1, dir, auth, f.netOptions(url, timeout, false))
	if err == nil {
		var hash plumbing.Hash
		if hash, err = fetchedCommit(repo, head); err == nil {
			s, err = keep(repo.Storer, hash, head, url, auth, f.kept, fnPath, f.commitStoreBytes())
		}
	}
	if err != nil {
		if rerror.IsStalling(err) && cacheable(err) {
			return &snapshot{commit: head.Commit, err: err, size: objectOverhead}, nil
		}
		return nil, err
	}
	return s, nil
}

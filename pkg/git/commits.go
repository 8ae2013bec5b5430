package git

import (
	"container/list"
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

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
	mu    sync.Mutex
	used  int64
	order *list.List // of *storeEntry, most recent first
	items map[commitKey]*list.Element
	// evicted counts the snapshots dropped to keep within the bound; notKept those
	// larger than the bound on their own; refetched the transfers of a commit dropped
	// before, which dropped remembers (the most recent evictedKeys).
	evicted, notKept, refetched uint64
	// dropped maps each remembered key to the eviction that dropped it last (its
	// entry in droppedOrder, of droppedKey, oldest first).
	dropped      map[commitKey]uint64
	droppedOrder *list.List
}

type droppedKey struct {
	key commitKey
	// eviction numbers the eviction (evicted after it).
	eviction uint64
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
	return CommitStoreStats{Bytes: cs.used, Commits: len(cs.items), Evictions: cs.evicted, Refetches: cs.refetched, NotKept: cs.notKept}
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

type storeEntry struct {
	key  commitKey
	snap *snapshot
}

func newCommitStore() *commitStore {
	return &commitStore{order: list.New(), items: map[commitKey]*list.Element{}, dropped: map[commitKey]uint64{}, droppedOrder: list.New()}
}

func (cs *commitStore) get(key commitKey) (*snapshot, bool) {
	if cs == nil { // a Fetcher not made by NewFetcher keeps no commit
		return nil, false
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	el, ok := cs.items[key]
	if !ok {
		return nil, false
	}
	cs.order.MoveToFront(el)
	return el.Value.(*storeEntry).snap, true
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
	if el, ok := cs.items[key]; ok && !s.partial { // a partial one never replaces a whole one
		cs.remove(el)
	}
	_, again := cs.dropped[asked]
	if _, ok := cs.dropped[key]; ok || again {
		cs.refetched++
		// Their entries in droppedOrder go when they come first.
		delete(cs.dropped, key)
		delete(cs.dropped, asked)
	}
	if s.partial || s.size > max {
		cs.notKept++
		cs.trim(max) // a bound lowered since
		return
	}
	cs.items[key] = cs.order.PushFront(&storeEntry{key: key, snap: s})
	cs.used += s.size
	cs.trim(max)
}

// trim evicts the least recently used snapshots past max bytes; cs.mu is held.
func (cs *commitStore) trim(max int64) {
	for cs.used > max && cs.order.Len() > 0 {
		key := cs.order.Back().Value.(*storeEntry).key
		cs.remove(cs.order.Back())
		cs.evicted++
		cs.remember(key)
	}
}

// remember keeps key among the most recent evictedKeys dropped commits; cs.mu is held.
func (cs *commitStore) remember(key commitKey) {
	cs.dropped[key] = cs.evicted
	cs.droppedOrder.PushBack(droppedKey{key: key, eviction: cs.evicted})
	for cs.droppedOrder.Len() > evictedKeys {
		old := cs.droppedOrder.Remove(cs.droppedOrder.Front()).(droppedKey)
		if cs.dropped[old.key] == old.eviction { // not dropped again since
			delete(cs.dropped, old.key)
		}
	}
}

func (cs *commitStore) remove(el *list.Element) {
	e := cs.order.Remove(el).(*storeEntry)
	delete(cs.items, e.key)
	cs.used -= e.snap.size
}

// bytes is what the kept snapshots hold.
func (cs *commitStore) bytes() int64 {
	if cs == nil {
		return 0
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.used
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

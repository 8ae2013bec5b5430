package source

import (
	"container/list"
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"
)

// Bounds of the shared listings.
const (
	// listingsMaxBytes bounds the memory all kept listings take together.
	listingsMaxBytes = 64 << 20
	// listingMaxBytes is the largest listing kept: one larger is used by the check
	// that made it and not shared (a repository with 100,000 branches takes ~13 MiB).
	listingMaxBytes = 8 << 20
	// listingErrorAge is how long a failure to list is shared at most: a repository
	// back from an outage is seen within it.
	listingErrorAge = 5 * time.Second
)

// ListingKey names a shared listing: a repository and the identity of the
// credentials it was listed with (see Auth.Identity). Listings are never shared
// across identities: a Function without access to a private repository must not
// learn what it holds through another's credentials.
type ListingKey struct {
	URL      string
	Identity string
}

// listings keeps the latest listing of each (repository, credentials), so that the
// Functions on one repository share one listing per check interval, and tells when a
// repository changed.
type listings struct {
	mu      sync.Mutex
	entries map[ListingKey]*list.Element
	lru     *list.List // of *listingEntry, most recently used first
	bytes   int64
	// gen counts the times each key was forgotten: a listing begun before its key was
	// forgotten (a push came in while it ran) is not kept.
	gen    map[ListingKey]uint64
	flight singleflight.Group
	// remote counts the listings asked of remotes, for the tests and the benchmark.
	remote atomic.Int64
}

type listingEntry struct {
	key     ListingKey
	listing *Listing
	err     error
	at      time.Time
	digest  [sha256.Size]byte
	size    int64
	// gen is the key's generation when the listing began.
	gen uint64
}

// entryOverhead is what an entry costs besides its listing and key.
const entryOverhead = 256

func newListings() listings {
	return listings{entries: map[ListingKey]*list.Element{}, lru: list.New(), gen: map[ListingKey]uint64{}}
}

// fresh returns the entry of key when it is younger than maxAge (a failure: younger
// than listingErrorAge too).
func (ls *listings) fresh(key ListingKey, maxAge time.Duration, now time.Time) (*listingEntry, bool) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	el, ok := ls.entries[key]
	if !ok {
		return nil, false
	}
	e := el.Value.(*listingEntry)
	age := now.Sub(e.at)
	if age < 0 || age >= maxAge || (e.err != nil && age >= listingErrorAge) {
		return nil, false
	}
	ls.lru.MoveToFront(el)
	return e, true
}

// generation returns the generation of key.
func (ls *listings) generation(key ListingKey) uint64 {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.gen[key]
}

// store keeps e, evicting the least recently used entries over the memory bound, and
// reports whether what the repository advertises changed since what it last said (a
// failure in between keeps that). A listing begun before its key was forgotten is not
// kept.
func (ls *listings) store(e *listingEntry) (changed bool) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if e.gen != ls.gen[e.key] {
		return false
	}
	if el, ok := ls.entries[e.key]; ok {
		old := el.Value.(*listingEntry)
		changed = e.err == nil && old.listing != nil && old.digest != e.digest
		if e.err != nil && old.listing != nil {
			// Keep what the repository last said, to tell a change once it answers
			// again; the failure is shared for listingErrorAge.
			e.listing, e.digest = old.listing, old.digest
		}
		ls.remove(el)
	}
	// Every entry counts, a failure too: its key, its message and its listing.
	e.size = entryOverhead + int64(len(e.key.URL)+len(e.key.Identity))
	if e.listing != nil {
		e.size += e.listing.size()
	}
	if e.err != nil {
		e.size += int64(len(e.err.Error()))
	}
	if e.size > listingMaxBytes {
		return changed
	}
	ls.entries[e.key] = ls.lru.PushFront(e)
	ls.bytes += e.size
	for ls.bytes > listingsMaxBytes {
		ls.remove(ls.lru.Back())
	}
	return changed
}

func (ls *listings) remove(el *list.Element) {
	e := ls.lru.Remove(el).(*listingEntry)
	delete(ls.entries, e.key)
	ls.bytes -= e.size
}

// forget drops the listings of keys, and those under way.
func (ls *listings) forget(keys ...ListingKey) int {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	n := 0
	for _, key := range keys {
		ls.gen[key]++
		if el, ok := ls.entries[key]; ok {
			ls.remove(el)
			n++
		}
	}
	return n
}

// forgetAll drops every listing, and those under way.
func (ls *listings) forgetAll() {
	ls.mu.Lock()
	keys := make([]ListingKey, 0, len(ls.entries))
	for key := range ls.entries {
		keys = append(keys, key)
	}
	ls.mu.Unlock()
	ls.forget(keys...)
}

// CachedListing returns the listing of key when one younger than maxAge is kept
// (a failure is kept for 5 s at most), without asking the remote.
func (f *Fetcher) CachedListing(key ListingKey, maxAge time.Duration) (*Listing, bool, error) {
	e, ok := f.listings.fresh(key, maxAge, f.now())
	switch {
	case !ok:
		return nil, false, nil
	case e.err != nil:
		return nil, true, e.err
	}
	return e.listing, true, nil
}

// List returns the listing of key.URL as auth sees it: a kept one younger than
// maxAge, or else a new one it asks the remote for (one at a time per key), bounded by
// timeout. It reports whether it asked the remote. When the new listing differs from
// the one before, OnChange is told, so that every Function on the repository is
// checked at once.
func (f *Fetcher) List(ctx context.Context, key ListingKey, auth *Auth, timeout, maxAge time.Duration) (*Listing, bool, error) {
	if l, ok, err := f.CachedListing(key, maxAge); ok {
		return l, false, err
	}
	if auth == nil {
		auth = &Auth{}
	}
	asked := false
	gen := f.listings.generation(key)
	v, _, _ := f.listings.flight.Do(fmt.Sprintf("%s\x00%s\x00%d", key.URL, key.Identity, gen), func() (interface{}, error) {
		if e, ok := f.listings.fresh(key, maxAge, f.now()); ok {
			return e, nil
		}
		asked = true
		f.listings.remote.Add(1)
		lctx, cancel := timeoutContext(ctx, timeout)
		defer cancel()
		l, err := remoteListing(lctx, key.URL, auth, f.netOptions(key.URL, timeout, true), f.now())
		e := &listingEntry{key: key, listing: l, err: err, at: f.now(), gen: gen}
		if l != nil {
			e.digest = l.digest()
		}
		if ctx.Err() != nil && err != nil {
			// This caller gave up: its failure says nothing of the repository.
			return e, nil
		}
		if f.listings.store(e) && f.OnChange != nil {
			f.OnChange(key)
		}
		return e, nil
	})
	e := v.(*listingEntry)
	if e.err != nil {
		return nil, asked, e.err
	}
	return e.listing, asked, nil
}

// Forget drops the kept listings of keys, and any under way, so that the next check
// lists them again: a push webhook said the repository changed.
func (f *Fetcher) Forget(keys ...ListingKey) int { return f.listings.forget(keys...) }

// ForgetAll drops every kept listing: the network stance changed.
func (f *Fetcher) ForgetAll() { f.listings.forgetAll() }

func (f *Fetcher) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

package git

import (
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
//
// Every listing begun takes the next number of a sequence, which orders them: a
// listing never replaces one begun after it (a repository never seems to move
// backwards), and a caller that must see what a repository said after some moment (a
// push webhook came in) asks for a listing begun after the Mark of that moment,
// without taking the kept one from the Functions that do not.
type listings struct {
	mu sync.Mutex
	// kept holds the listings, bounded by listingsMaxBytes.
	kept *byteLRU[ListingKey, *listingEntry]
	// seq numbers the listings begun; floor is the last one begun before every kept
	// listing was dropped (ForgetAll): those up to it are neither kept nor joined.
	seq, floor uint64
	// flying is the number of the latest listing under way of each key.
	flying map[ListingKey]uint64
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
	// seq is the listing's number in the order listings began.
	seq uint64
}

// entryOverhead is what an entry costs besides its listing and key.
const entryOverhead = 256

func newListings() listings {
	return listings{kept: newByteLRU[ListingKey, *listingEntry](), flying: map[ListingKey]uint64{}}
}

// fresh returns the entry of key when it is younger than maxAge (a failure: younger
// than listingErrorAge too) and was begun after the mark after.
func (ls *listings) fresh(key ListingKey, maxAge time.Duration, after uint64, now time.Time) (*listingEntry, bool) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.freshLocked(key, maxAge, after, now)
}

func (ls *listings) freshLocked(key ListingKey, maxAge time.Duration, after uint64, now time.Time) (*listingEntry, bool) {
	// Peek, then get: only a listing served moves ahead of the others.
	e, ok := ls.kept.peek(key)
	if !ok {
		return nil, false
	}
	age := now.Sub(e.at)
	if age < 0 || age >= maxAge || (e.err != nil && age >= listingErrorAge) || e.seq <= after {
		return nil, false
	}
	ls.kept.get(key)
	return e, true
}

// mark returns the number of the last listing begun: those begun from now on are
// after it.
func (ls *listings) mark() uint64 {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.seq
}

// begin returns the kept entry of key when fresh (see fresh), else the number of the
// listing a caller that needs one begun after the mark after is to wait for: the
// latest one under way when it began after both after and the floor, else a new one.
func (ls *listings) begin(key ListingKey, maxAge time.Duration, after uint64, now time.Time) (*listingEntry, uint64) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if e, ok := ls.freshLocked(key, maxAge, after, now); ok {
		return e, 0
	}
	if seq, ok := ls.flying[key]; ok && seq > after && seq > ls.floor {
		return nil, seq
	}
	ls.seq++
	ls.flying[key] = ls.seq
	return nil, ls.seq
}

// landed records that the listing seq of key is no longer under way.
func (ls *listings) landed(key ListingKey, seq uint64) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.flying[key] == seq {
		delete(ls.flying, key)
	}
}

// store keeps e, evicting the least recently used entries over the memory bound, and
// reports whether what the repository advertises changed since what it last said (a
// failure in between keeps that). A listing begun before the kept one, or before
// ForgetAll, is not kept: it may say what the repository held before the kept one did.
func (ls *listings) store(e *listingEntry) (changed bool) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if e.seq <= ls.floor {
		return false
	}
	if old, ok := ls.kept.peek(e.key); ok {
		if old.seq > e.seq {
			return false
		}
		changed = e.err == nil && old.listing != nil && old.digest != e.digest
		if e.err != nil && old.listing != nil {
			// Keep what the repository last said, to tell a change once it answers
			// again; the failure is shared for listingErrorAge.
			e.listing, e.digest = old.listing, old.digest
		}
		ls.kept.remove(e.key)
	}
	// Every entry counts, a failure too: its key, its message and its listing.
	size := entryOverhead + int64(len(e.key.URL)+len(e.key.Identity))
	if e.listing != nil {
		size += e.listing.size()
	}
	if e.err != nil {
		size += int64(len(e.err.Error()))
	}
	if size > listingMaxBytes {
		return changed
	}
	ls.kept.add(e.key, e, size)
	ls.kept.trim(listingsMaxBytes, nil)
	return changed
}

// forgetAll drops every listing, and those under way.
func (ls *listings) forgetAll() {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.floor = ls.seq
	ls.kept.purge()
}

// CachedListing returns the listing of key when one younger than maxAge and begun
// after the mark after (see ListingMark; 0 for any) is kept (a failure is kept for
// 5 s at most), without asking the remote.
func (f *Fetcher) CachedListing(key ListingKey, maxAge time.Duration, after uint64) (*Listing, bool, error) {
	e, ok := f.listings.fresh(key, maxAge, after, f.now())
	switch {
	case !ok:
		return nil, false, nil
	case e.err != nil:
		return nil, true, e.err
	}
	return e.listing, true, nil
}

// List returns the listing of key.URL as auth sees it: a kept one younger than
// maxAge and begun after the mark after (see ListingMark; 0 for any), or else a new
// one it asks the remote for (one at a time per key: a caller waits for the listing
// under way when it began after the mark), bounded by timeout. It reports whether it
// asked the remote. When the new listing differs from the one before, OnChange is
// told, so that every Function on the repository is checked at once.
func (f *Fetcher) List(ctx context.Context, key ListingKey, auth *Auth, timeout, maxAge time.Duration, after uint64) (*Listing, bool, error) {
	if l, ok, err := f.CachedListing(key, maxAge, after); ok {
		return l, false, err
	}
	if auth == nil {
		auth = &Auth{}
	}
	asked := false
	kept, seq := f.listings.begin(key, maxAge, after, f.now())
	if kept != nil {
		if kept.err != nil {
			return nil, false, kept.err
		}
		return kept.listing, false, nil
	}
	v, _, _ := f.listings.flight.Do(fmt.Sprintf("%s\x00%s\x00%d", key.URL, key.Identity, seq), func() (interface{}, error) {
		defer f.listings.landed(key, seq)
		// The listing seq may have landed before this caller came: it is kept then.
		// Nothing older does: a caller waiting for seq may need one begun after its mark.
		if e, ok := f.listings.fresh(key, maxAge, seq-1, f.now()); ok {
			return e, nil
		}
		asked = true
		f.listings.remote.Add(1)
		lctx, cancel := timeoutContext(ctx, timeout)
		defer cancel()
		l, err := remoteListing(lctx, key.URL, auth, f.netOptions(key.URL, timeout, true), f.now())
		e := &listingEntry{key: key, listing: l, err: err, at: f.now(), seq: seq}
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

// ListingMark returns a mark of now: a caller that passes it to List or
// CachedListing gets a listing begun after this call, while the kept listing stays
// shared with every caller that does not (a push webhook of one namespace has that
// namespace's Functions see the push, and no other's list again).
func (f *Fetcher) ListingMark() uint64 { return f.listings.mark() }

// ForgetAll drops every kept listing: the network stance changed.
func (f *Fetcher) ForgetAll() { f.listings.forgetAll() }

func (f *Fetcher) now() time.Time {
	if f.Clock != nil {
		return f.Clock.Now()
	}
	return time.Now()
}

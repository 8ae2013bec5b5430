package git

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/rerror"
)

// TestFetcher_List checks the shared listing: one listing per (repository,
// credentials) within maxAge, never shared across credentials, a change told once,
// failures shared for a few seconds only, and ForgetAll.
func TestFetcher_List(t *testing.T) {
	g := newHTTPGit(t)
	pub, _ := g.repo(t, "pub", map[string]string{"func.yaml": funcYAML("hello", "go")})
	priv, privCommit := g.repo(t, "priv", map[string]string{"func.yaml": funcYAML("secret", "go")})
	g.srv.RequireToken(priv.Name, rightToken)
	pubURL, privURL := g.srv.URL(pub.Name), g.srv.URL(priv.Name)

	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	f := NewFetcher(t.TempDir(), 0, manifests)
	f.Clock = clk
	var (
		mu      sync.Mutex
		changes []ListingKey
	)
	f.OnChange = func(k ListingKey) {
		mu.Lock()
		defer mu.Unlock()
		changes = append(changes, k)
	}
	changed := func() []ListingKey {
		mu.Lock()
		defer mu.Unlock()
		return append([]ListingKey(nil), changes...)
	}
	const maxAge = 10 * time.Second
	ctx := context.Background()
	anon := ListingKey{URL: pubURL, Identity: Anonymous}
	other := ListingKey{URL: pubURL, Identity: "other-credentials"}

	list := func(key ListingKey, auth *Auth) (*Listing, bool, error) {
		t.Helper()
		return f.List(ctx, key, auth, gitTimeout, maxAge, 0)
	}

	// The first check lists; the next ones within maxAge share it.
	l, asked, err := list(anon, anonymous(t, pubURL))
	if err != nil || !asked {
		t.Fatalf("first List: asked %v, err %v; want a listing asked of the remote", asked, err)
	}
	for i := 0; i < 5; i++ {
		clk.Step(time.Second)
		if _, asked, err := list(anon, anonymous(t, pubURL)); err != nil || asked {
			t.Fatalf("List %d within maxAge: asked %v, err %v; want the shared listing", i, asked, err)
		}
	}
	if got := g.srv.RefAdvertisements(pub.Name); got != 1 {
		t.Errorf("the server gave %d listings for six checks within maxAge, want 1", got)
	}
	if diff := cmp.Diff(map[string]string{"main": pub.Head(t, "main")}, l.Branches); diff != "" {
		t.Errorf("Branches (-want +got):\n%s", diff)
	}

	// Other credentials never get this listing.
	if _, asked, err := list(other, anonymous(t, pubURL)); err != nil || !asked {
		t.Fatalf("List with other credentials: asked %v, err %v; want its own listing", asked, err)
	}
	if got := g.srv.RefAdvertisements(pub.Name); got != 2 {
		t.Errorf("listings after a second identity: %d, want 2", got)
	}

	// Past maxAge the listing is asked again; a new commit is a change, told once.
	if got := changed(); len(got) != 0 {
		t.Fatalf("changes before any commit: %v", got)
	}
	pub.Commit(t, "main", map[string]string{"README": "new"}, "second")
	clk.Step(maxAge)
	if _, asked, err := list(anon, anonymous(t, pubURL)); err != nil || !asked {
		t.Fatalf("List past maxAge: asked %v, err %v; want a new listing", asked, err)
	}
	if diff := cmp.Diff([]ListingKey{anon}, changed()); diff != "" {
		t.Errorf("changes after a new commit (-want +got):\n%s", diff)
	}
	clk.Step(maxAge)
	if _, _, err := list(anon, anonymous(t, pubURL)); err != nil {
		t.Fatal(err)
	}
	if got := len(changed()); got != 1 {
		t.Errorf("%d changes after a listing that found nothing new, want still 1", got)
	}

	// A private repository: the listing made with the token is never given to a
	// Function without it.
	privKey := ListingKey{URL: privURL, Identity: "token-identity"}
	pl, _, err := list(privKey, authFrom(t, privURL, map[string]string{"token": rightToken}))
	if err != nil {
		t.Fatalf("listing the private repository with its token: %v", err)
	}
	if pl.Branches["main"] != privCommit {
		t.Errorf("private main = %q, want %q", pl.Branches["main"], privCommit)
	}
	_, _, err = list(ListingKey{URL: privURL, Identity: Anonymous}, anonymous(t, privURL))
	checkError(t, &wantError{reason: v1alpha1.ReasonBranchListFailed, stalling: true, msgHas: []string{"private"}}, err)

	// A failure is shared for listingErrorAge at most: the repository back from an
	// outage is seen within it.
	g.srv.FailWith(http.StatusServiceUnavailable)
	clk.Step(maxAge)
	if _, asked, err := list(anon, anonymous(t, pubURL)); err == nil || !asked || !rerror.IsTransient(err) {
		t.Fatalf("List during an outage: asked %v, err %v; want a transient error from the remote", asked, err)
	}
	g.srv.FailWith(0)
	if _, asked, err := list(anon, anonymous(t, pubURL)); err == nil || asked {
		t.Errorf("List right after the outage: asked %v, err %v; want the shared failure", asked, err)
	}
	clk.Step(listingErrorAge)
	if _, asked, err := list(anon, anonymous(t, pubURL)); err != nil || !asked {
		t.Errorf("List %s after the outage: asked %v, err %v; want a new listing", listingErrorAge, asked, err)
	}
	if got := len(changed()); got != 1 {
		t.Errorf("%d changes after an outage over nothing new, want still 1", got)
	}

	// A change across a failure is still told: an outage, then a new commit.
	g.srv.FailWith(http.StatusServiceUnavailable)
	clk.Step(maxAge)
	if _, _, err := list(anon, anonymous(t, pubURL)); err == nil {
		t.Fatal("List during the second outage: no error")
	}
	g.srv.FailWith(0)
	pub.Commit(t, "main", map[string]string{"README": "third"}, "third")
	clk.Step(listingErrorAge)
	if _, _, err := list(anon, anonymous(t, pubURL)); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]ListingKey{anon, anon}, changed()); diff != "" {
		t.Errorf("changes after an outage and a new commit (-want +got):\n%s", diff)
	}

	// ForgetAll drops every kept listing.
	f.ForgetAll()
	for _, key := range []ListingKey{anon, other} {
		if _, asked, _ := list(key, anonymous(t, pubURL)); !asked {
			t.Errorf("List of %v after ForgetAll shared a listing, want a new one", key)
		}
	}
}

// TestFetcher_List_OneAtATime checks that concurrent checks of one repository with the
// same credentials make one listing.
func TestFetcher_List_OneAtATime(t *testing.T) {
	g := newHTTPGit(t)
	r, _ := g.repo(t, "pub", map[string]string{"func.yaml": funcYAML("hello", "go")})
	url := g.srv.URL(r.Name)
	f := NewFetcher(t.TempDir(), 0, manifests)
	key := ListingKey{URL: url, Identity: Anonymous}

	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := f.List(context.Background(), key, anonymous(t, url), gitTimeout, time.Hour, 0); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := g.srv.RefAdvertisements(r.Name); got != 1 {
		t.Errorf("20 concurrent checks made %d listings, want 1", got)
	}
	if got := f.RemoteListings(); got != 1 {
		t.Errorf("RemoteListings() = %d, want 1", got)
	}
}

// TestFetcher_List_Mark checks what a push webhook relies on: a caller with a mark
// gets a listing begun after it, one for all such callers, while the kept listing
// stays shared with the callers without (no listing of theirs); the new listing is
// then kept, a change told once, and shared with every caller.
func TestFetcher_List_Mark(t *testing.T) {
	g := newHTTPGit(t)
	r, first := g.repo(t, "pub", map[string]string{"func.yaml": funcYAML("hello", "go")})
	url := g.srv.URL(r.Name)
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	f := NewFetcher(t.TempDir(), 0, manifests)
	f.Clock = clk
	var changes atomic.Int64
	f.OnChange = func(ListingKey) { changes.Add(1) }
	key := ListingKey{URL: url, Identity: Anonymous}
	const maxAge = time.Hour
	list := func(after uint64) (string, bool) {
		t.Helper()
		l, asked, err := f.List(context.Background(), key, anonymous(t, url), gitTimeout, maxAge, after)
		if err != nil {
			t.Fatal(err)
		}
		return l.Branches["main"], asked
	}
	if _, asked := list(0); !asked {
		t.Fatal("the first List did not ask the remote")
	}
	mark := f.ListingMark()
	second := r.Commit(t, "main", map[string]string{"README": "pushed"}, "pushed")
	clk.Step(time.Second)

	type got struct {
		Main  string
		Asked bool
	}
	check := func(what string, after uint64, want got) {
		t.Helper()
		main, asked := list(after)
		if diff := cmp.Diff(want, got{main, asked}); diff != "" {
			t.Errorf("%s (-want +got):\n%s", what, diff)
		}
	}
	if _, ok, _ := f.CachedListing(key, maxAge, mark); ok {
		t.Error("CachedListing gave a caller with a mark a listing begun before it")
	}
	check("a caller without the mark", 0, got{Main: first, Asked: false})
	check("a caller with the mark", mark, got{Main: second, Asked: true})
	check("the same mark again", mark, got{Main: second, Asked: false})
	check("a caller without the mark after the new listing", 0, got{Main: second, Asked: false})
	if n := changes.Load(); n != 1 {
		t.Errorf("OnChange told %d times, want once", n)
	}
	if n := g.srv.RefAdvertisements(r.Name); n != 2 {
		t.Errorf("%d listings, want 2 (the first, and the one after the mark)", n)
	}

	// Many callers at once, with a new mark and without: one listing.
	mark = f.ListingMark()
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			after := mark
			if i%2 == 0 {
				after = 0
			}
			if _, _, err := f.List(context.Background(), key, anonymous(t, url), gitTimeout, maxAge, after); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := g.srv.RefAdvertisements(r.Name); n != 3 {
		t.Errorf("%d listings after 20 concurrent callers, half with a new mark, want 3", n)
	}
}

// TestListings_Bounds checks that kept listings stay within listingsMaxBytes, the
// least recently used going first, and that a listing over listingMaxBytes is used
// but not kept.
func TestListings_Bounds(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	ls := newListings()
	// entry i costs size bytes: its key, and a listing of one branch of the length that
	// makes up the rest.
	entry := func(i int, size int64) *listingEntry {
		key := ListingKey{URL: fmt.Sprintf("https://git.example/%d", i), Identity: Anonymous}
		l := &Listing{Branches: map[string]string{}}
		if rest := size - entryOverhead - int64(len(key.URL)+len(key.Identity)) - (&Listing{}).size() - 88; rest > 0 {
			l.Branches[strings.Repeat("b", int(rest))] = "c"
		}
		return &listingEntry{key: key, listing: l, at: now, seq: uint64(i) + 1}
	}
	per := int64(listingMaxBytes)
	n := int(listingsMaxBytes / per)
	for i := 0; i < n; i++ {
		ls.store(entry(i, per))
	}
	if ls.kept.bytes != int64(n)*per || ls.kept.len() != n {
		t.Fatalf("after %d entries of %d bytes: %d entries, %d bytes", n, per, ls.kept.len(), ls.kept.bytes)
	}
	// Entry 0 is used: entry 1 is now the least recently used, and goes.
	if _, ok := ls.fresh(entry(0, 0).key, time.Hour, 0, now); !ok {
		t.Fatal("entry 0 not kept")
	}
	ls.store(entry(n, per))
	if ls.kept.bytes > listingsMaxBytes {
		t.Errorf("kept %d bytes, over the bound of %d", ls.kept.bytes, listingsMaxBytes)
	}
	for i, want := range map[int]bool{0: true, 1: false, 2: true, n: true} {
		if _, ok := ls.fresh(entry(i, 0).key, time.Hour, 0, now); ok != want {
			t.Errorf("entry %d kept: %v, want %v", i, ok, want)
		}
	}
	// Too large to keep.
	ls.store(entry(n+1, per+1))
	if _, ok := ls.fresh(entry(n+1, 0).key, time.Hour, 0, now); ok {
		t.Errorf("a listing of %d bytes was kept, over listingMaxBytes", per+1)
	}

	// Failures count too: a flood of them stays within the bound.
	for i := 0; i < 300_000; i++ {
		e := entry(1_000_000+i, 0)
		e.listing, e.err = nil, errors.New(strings.Repeat("e", 200))
		ls.store(e)
	}
	if ls.kept.bytes > listingsMaxBytes || ls.kept.bytes <= 0 {
		t.Errorf("after a flood of failures: %d bytes kept, bound %d", ls.kept.bytes, listingsMaxBytes)
	}

	// A listing begun before the kept one is not kept: it may say what the
	// repository held before the kept one did.
	key := entry(n+2, 0).key
	older, newer := entry(n+2, 0), entry(n+2, 0)
	older.seq, newer.seq = 1, 2
	older.listing.Branches["main"] = "old"
	ls.store(newer)
	ls.store(older)
	if e, ok := ls.fresh(key, time.Hour, 0, now); !ok || e != newer {
		t.Errorf("after a listing begun earlier was stored: kept %+v, want the one begun later", e)
	}
	// Nor one begun before ForgetAll.
	ls.seq = 3
	ls.forgetAll()
	stale := entry(n+2, 0)
	stale.seq = 3
	ls.store(stale)
	if _, ok := ls.fresh(key, time.Hour, 0, now); ok {
		t.Error("a listing begun before ForgetAll was kept")
	}
	fresh := entry(n+2, 0)
	fresh.seq = 4
	ls.store(fresh)
	if _, ok := ls.fresh(key, time.Hour, 0, now); !ok {
		t.Error("a listing begun after ForgetAll was not kept (the positive control)")
	}
}

package git

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fnops/func-operator/api/v1alpha1"
)

// TestAttack_ReadsArePerIdentity: a tenant whose credentials the repository refuses
// never gets what another tenant's credentials read of it: not from the path cache,
// not by joining a read in flight, not for a fixed commit nor an older one (ReadAt).
// The positive control: the tenant with access reads, and reads again from the cache
// with no transfer. Before the path cache and the flights were keyed by credentials
// identity, the refused tenant was served the other's func.yaml each time.
func TestAttack_ReadsArePerIdentity(t *testing.T) {
	g := newHTTPGit(t)
	r, old := g.repo(t, "private", map[string]string{"fn/func.yaml": funcYAML("private", "python")})
	commit := r.Commit(t, "main", map[string]string{"fn/func.yaml": funcYAML("private", "go")}, "next")
	g.srv.RequireToken("private", rightToken)
	url := g.srv.URL("private")
	f := NewFetcher(t.TempDir(), 0, manifests)
	ctx := context.Background()
	owner := authFrom(t, url, map[string]string{KeyToken: rightToken})
	intruder := authFrom(t, url, map[string]string{KeyToken: wrongToken})
	refused := &wantError{reason: v1alpha1.ReasonGitCloneFailed, stalling: true,
		msgHas: []string{"the credentials in spec.repository.authSecretRef were refused"}}
	// A fixed commit resolves without a listing (Listing.Resolve): only the fetch
	// tells whether the caller may read it.
	fixed := Head{Commit: commit, Tip: "refs/heads/main"} // as the owner's listing resolves it

	got, err := f.Read(ctx, url, fixed, "fn", owner, gitTimeout)
	if err != nil || !cmp.Equal(got.Metadata, md("private", "go")) {
		t.Fatalf("the owner's Read: %+v, %v; want func.yaml read", got.Metadata, err)
	}
	_, err = f.Read(ctx, url, fixed, "fn", intruder, gitTimeout)
	checkError(t, refused, err)
	if got, err := f.Read(ctx, url, fixed, "fn", owner, gitTimeout); err != nil || got.Cloned {
		t.Errorf("the owner's second Read: cloned %t, %v; want it from the cache", got.Cloned, err)
	}

	// An older commit, by its full id.
	main := Head{Branch: "main", Ref: "refs/heads/main", Commit: commit}
	if got, err := f.ReadAt(ctx, url, main, old, "", "fn", owner, gitTimeout); err != nil || !cmp.Equal(got.Metadata, md("private", "python")) {
		t.Fatalf("the owner's ReadAt: %+v, %v; want the older func.yaml", got.Metadata, err)
	}
	_, err = f.ReadAt(ctx, url, main, old, "", "fn", intruder, gitTimeout)
	checkError(t, refused, err)

	// Reads in flight together: each is answered for its own credentials.
	f = NewFetcher(t.TempDir(), 0, manifests)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			auth := owner
			if i%2 == 1 {
				auth = intruder
			}
			_, errs[i] = f.Read(ctx, url, fixed, "fn", auth, gitTimeout)
		}(i)
	}
	wg.Wait()
	outcomes := make([]string, 0, len(errs))
	for i, err := range errs {
		outcomes = append(outcomes, fmt.Sprintf("%d:%t", i%2, err == nil))
	}
	want := []string{"0:true", "1:false", "0:true", "1:false", "0:true", "1:false", "0:true", "1:false"}
	if diff := cmp.Diff(want, outcomes); diff != "" {
		t.Errorf("concurrent reads, owner 0 and intruder 1, read or not (-want +got):\n%s", diff)
	}
}

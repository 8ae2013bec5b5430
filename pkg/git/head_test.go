package git

import (
	"context"
	"time"
)

// What the tests call besides the operator's own use of a Fetcher.

// RemoteListings is how many listings this Fetcher asked remotes for.
func (f *Fetcher) RemoteListings() int64 { return f.listings.remote.Load() }

// Head lists the remote now, sharing nothing, and returns the tip of branch (the
// default branch when empty), bounded by timeout.
func (f *Fetcher) Head(ctx context.Context, url, branch string, auth *Auth, timeout time.Duration) (Head, error) {
	if auth == nil {
		auth = &Auth{}
	}
	ctx, cancel := timeoutContext(ctx, timeout)
	defer cancel()
	f.listings.remote.Add(1)
	l, err := remoteListing(ctx, url, auth, f.netOptions(url, timeout, true), f.now())
	if err != nil {
		return Head{}, err
	}
	return l.Resolve(Ref{Branch: branch}, url, auth)
}

package source

import (
	"context"
	"net/http"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/fnops/func-operator/pkg/netguard"
)

// cloneObjectCache is the memory go-git may keep of decoded objects during one
// clone (its default is 96 MiB per repository).
const cloneObjectCache = 8 << 20

// maxListing caps what a branch listing may read: the references of a repository
// with a hundred thousand branches fit in a few MiB.
const maxListing = 16 << 20

// netOptions are the network bounds of one remote operation.
type netOptions struct {
	limits Limits
	// listing is a branch listing, capped at maxListing.
	listing bool
	// proxy routes SSH dials through the operator's network guard; empty for HTTP,
	// whose transport is installed once (see Fetcher).
	proxy transport.ProxyOptions
}

// context caps what HTTP responses read with ctx may carry.
func (o netOptions) context(ctx context.Context) context.Context {
	if n := o.readLimit(); n > 0 {
		return netguard.WithReadLimit(ctx, n)
	}
	return ctx
}

// readLimit is what the operation may read from the server, 0 for no cap.
func (o netOptions) readLimit() int64 {
	switch {
	case o.listing && (o.limits.MaxBytes <= 0 || o.limits.MaxBytes > maxListing):
		return maxListing
	case o.limits.MaxBytes > 0:
		return readLimit(o.limits.MaxBytes)
	}
	return 0
}

// readLimit is what a connection may read for a pack of at most maxBytes: the
// protocol frames it (side-band packets of up to 64 KiB with 5 bytes of header),
// and the references come first. The pack itself is counted exactly (budget).
func readLimit(maxBytes int64) int64 { return maxBytes + maxBytes/64 + 1<<20 }

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// InstallGuard makes go-git dial every HTTP and HTTPS connection through g, in
// this whole process (go-git's transports are process-wide), with error bodies
// cut short. SSH connections go through g by the proxy URL each operation sets.
func InstallGuard(g *netguard.Guard) {
	c := githttp.NewClient(&http.Client{Transport: g.Transport(0)})
	client.InstallProtocol("http", c)
	client.InstallProtocol("https", c)
}

package git

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/fnops/func-operator/pkg/netguard"
)

// cloneObjectCache is the memory go-git may keep of decoded objects during one
// clone (its default is 96 MiB per repository).
const cloneObjectCache = 8 << 20

// cloneStreamedObject is the size past which go-git streams an object of a clone
// from its pack (applying a delta as it streams) rather than holding it whole: a tree
// of a million entries is read through a buffer (see fits), and copied once (keep).
const cloneStreamedObject = 1 << 20

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
	// retried counts the fetches made again after go-git's close race (see
	// againAfterCloseRace).
	retried *atomic.Int64
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
// cut short and response bodies within the operation's read limit. A CA bundle
// an operation sets (ListOptions.CABundle, CloneOptions.CABundle: Auth.CABundle)
// is trusted for that operation only, in addition to the system roots. HTTP(S)
// goes through the proxy set with g.SetProxy, if any; SSH connections go through
// g by the proxy URL each operation sets, and never through an HTTP proxy.
func InstallGuard(g *netguard.Guard) {
	t := &guardedHTTP{g: g, plain: githttp.NewClient(&http.Client{Transport: g.Transport(0)})}
	client.InstallProtocol("http", t)
	client.InstallProtocol("https", t)
}

// guardedHTTP is go-git's HTTP transport over a Guard. go-git applies an
// operation's CA bundle only to a client whose transport is an *http.Transport,
// which it clones (losing the Guard's body limits and the reuse of connections):
// guardedHTTP takes the bundle off the endpoint and gives the session a client
// over the Guard's transport for that bundle instead.
type guardedHTTP struct {
	g     *netguard.Guard
	plain transport.Transport
}

func (t *guardedHTTP) NewUploadPackSession(ep *transport.Endpoint, auth transport.AuthMethod) (transport.UploadPackSession, error) {
	c, ep, err := t.client(ep)
	if err != nil {
		return nil, err
	}
	return c.NewUploadPackSession(ep, auth)
}

func (t *guardedHTTP) NewReceivePackSession(ep *transport.Endpoint, auth transport.AuthMethod) (transport.ReceivePackSession, error) {
	c, ep, err := t.client(ep)
	if err != nil {
		return nil, err
	}
	return c.NewReceivePackSession(ep, auth)
}

// client returns the go-git HTTP client of an endpoint's options, and the
// endpoint to give it.
func (t *guardedHTTP) client(ep *transport.Endpoint) (transport.Transport, *transport.Endpoint, error) {
	switch {
	case ep.InsecureSkipTLS:
		return nil, nil, errors.New("the operator never skips the verification of a server's certificate")
	case ep.Proxy.URL != "":
		return nil, nil, errors.New("an HTTP(S) operation cannot set its own proxy: the operator's HTTPS_PROXY, HTTP_PROXY and NO_PROXY apply")
	case len(ep.CaBundle) == 0:
		return t.plain, ep, nil
	}
	rt, err := t.g.TransportWithCA(0, ep.CaBundle)
	if err != nil {
		// Validated when the Secret was read: this is a bundle from elsewhere.
		return nil, nil, fmt.Errorf("key %s: %w", KeyCACert, err)
	}
	e := *ep
	e.CaBundle = nil
	return githttp.NewClient(&http.Client{Transport: rt}), &e, nil
}

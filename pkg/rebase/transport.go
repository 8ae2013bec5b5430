package rebase

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
)

// countingTransport counts, for one rebase, the blobs the target registry mounted
// from another repository and those uploaded to it, and the bytes uploaded. It
// sits under go-containerregistry's authentication, so it sees every request.
type countingTransport struct {
	next          http.RoundTripper
	mounted       atomic.Int64
	uploaded      atomic.Int64
	uploadedBytes atomic.Int64
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	upload := strings.Contains(req.URL.Path, "/blobs/uploads/")
	if upload && req.Body != nil && req.Body != http.NoBody {
		req = req.Clone(req.Context())
		req.Body = &countingBody{ReadCloser: req.Body, n: &c.uploadedBytes}
	}
	res, err := c.next.RoundTrip(req)
	if err != nil || !upload || res.StatusCode != http.StatusCreated {
		return res, err
	}
	// A blob push ends with 201 Created: a mount (POST ?mount=&from=), a
	// monolithic upload (POST ?digest=) or the commit of a chunked one (PUT ?digest=).
	q := req.URL.Query()
	switch {
	case req.Method == http.MethodPost && q.Get("mount") != "":
		c.mounted.Add(1)
	case q.Get("digest") != "":
		c.uploaded.Add(1)
	}
	return res, nil
}

// countingBody counts the bytes read from a request body.
type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

package netguard

import (
	"crypto/tls"
	"io"
	"net/http"
	"time"
)

// DefaultMaxErrorBody is how much of an error response's body is read: enough for
// a server's message, never a large body into a condition or an Event.
const DefaultMaxErrorBody = 4 << 10

// Transport returns an HTTP transport that dials through g, trusting the system
// roots (TransportWithCA adds a private CA). It sends requests through the proxy
// set with SetProxy, if any, once the policy has let the request's target host
// through (see SetProxy). Response bodies are capped by the read limit of the
// request's context (WithReadLimit), and error bodies (status 300 and up) are cut
// at maxErrorBody bytes (DefaultMaxErrorBody when 0).
func (g *Guard) Transport(maxErrorBody int64) http.RoundTripper {
	t := g.newTransport(nil)
	g.mu.Lock()
	g.transports = append(g.transports, t)
	g.mu.Unlock()
	return g.wrap(t, maxErrorBody)
}

// newTransport returns the *http.Transport under the Guard's round trippers: it
// dials through g, and takes the proxy g decided on for each request.
func (g *Guard) newTransport(tlsConfig *tls.Config) *http.Transport {
	return &http.Transport{
		Proxy:                 proxyOf,
		DialContext:           g.DialContext,
		TLSClientConfig:       tlsConfig,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 60 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

func (g *Guard) wrap(t *http.Transport, maxErrorBody int64) http.RoundTripper {
	if maxErrorBody <= 0 {
		maxErrorBody = DefaultMaxErrorBody
	}
	return &bodyLimiter{g: g, next: t, maxErrorBody: maxErrorBody}
}

// bodyLimiter routes a request (directly, or through the proxy once its target
// passed the policy) and caps its response body.
type bodyLimiter struct {
	g            *Guard
	next         http.RoundTripper
	maxErrorBody int64
}

func (b *bodyLimiter) RoundTrip(req *http.Request) (*http.Response, error) {
	req, err := b.g.route(req)
	if err != nil {
		return nil, err
	}
	res, err := b.next.RoundTrip(req)
	if err != nil || res.Body == nil {
		return res, err
	}
	switch n := readLimit(req); {
	case res.StatusCode >= 300:
		res.Body = &cutBody{r: io.LimitReader(res.Body, b.maxErrorBody), c: res.Body}
		res.ContentLength = -1
	case n > 0:
		res.Body = &limitedBody{limitReader: newLimitReader(res.Body, n), Closer: res.Body}
	}
	return res, nil
}

// cutBody ends at its limit as if the body ended there.
type cutBody struct {
	r io.Reader
	c io.Closer
}

func (c *cutBody) Read(p []byte) (int, error) { return c.r.Read(p) }
func (c *cutBody) Close() error               { return c.c.Close() }

// limitedBody is a response body whose reads fail past a limit.
type limitedBody struct {
	*limitReader
	io.Closer
}

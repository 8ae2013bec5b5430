package netguard

import (
	"io"
	"net/http"
	"time"
)

// DefaultMaxErrorBody is how much of an error response's body is read: enough for
// a server's message, never a large body into a condition or an Event.
const DefaultMaxErrorBody = 4 << 10

// Transport returns an HTTP transport that dials through g. It uses no proxy from
// the environment: a proxy would connect for the operator to hosts the policy
// cannot see. Response bodies are capped by the read limit of the request's
// context (WithReadLimit), and error bodies (status 300 and up) are cut at
// maxErrorBody bytes (DefaultMaxErrorBody when 0).
func (g *Guard) Transport(maxErrorBody int64) http.RoundTripper {
	if maxErrorBody <= 0 {
		maxErrorBody = DefaultMaxErrorBody
	}
	t := &http.Transport{
		DialContext:           g.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 60 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	g.mu.Lock()
	g.transports = append(g.transports, t)
	g.mu.Unlock()
	return &bodyLimiter{next: t, maxErrorBody: maxErrorBody}
}

// bodyLimiter caps response bodies.
type bodyLimiter struct {
	next         http.RoundTripper
	maxErrorBody int64
}

func (b *bodyLimiter) RoundTrip(req *http.Request) (*http.Response, error) {
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

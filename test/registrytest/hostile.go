package registrytest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"time"
)

// ErrorBody makes the registry answer every manifest request (GET, HEAD, PUT of
// /v2/<repo>/manifests/<ref>) with HTTP status code (4xx or 5xx) and an n-byte
// body of registry-style JSON error text (HEAD gets the status alone), as a
// hostile registry does to exhaust a client's memory; ErrorBody(0, 0) ends it.
// It answers whatever the credentials; Delay and FailWith come first. Blob and
// other requests are served as usual. Mind the order: the size comes first
// (gitserver's HTTPServer.ErrorBody takes the status first); arguments that are
// no 4xx/5xx status and size panic.
func (r *Registry) ErrorBody(n, code int) { r.faults.SetErrorBody(code, n) }

// Trickle makes the registry write every response body one byte per every,
// flushing each byte, so a client that waits for a whole body waits (almost)
// forever; 0 ends it. A trickle stops when its client goes away, and when the
// test ends.
func (r *Registry) Trickle(every time.Duration) { r.faults.Trickle(every) }

// BytesServed returns how many response body bytes the registry has handed to
// its clients, for every request (headers excluded). A client that stops
// reading early may have read less: the kernel buffers up to a few MiB per
// connection.
func (r *Registry) BytesServed() int64 { return r.faults.BytesServed() }

// isManifestRequest reports whether req is for /v2/<repo>/manifests/<ref>.
func isManifestRequest(req *http.Request) bool {
	p := req.URL.Path
	return strings.HasPrefix(p, "/v2/") && strings.Contains(p, "/manifests/")
}

// stopFaults ends trickles and error bodies in progress and, when a fault was
// ever set, closes the connections, so srv.Close does not wait for a client
// that never reads.
func (r *Registry) stopFaults(srv *httptest.Server) {
	r.faults.Close()
	if r.faults.Used() {
		srv.CloseClientConnections()
	}
}

// Package hostilehttp holds the misbehaviours the test servers (registrytest,
// gitserver) share: response writers that count the body bytes handed to
// clients and can trickle them one byte at a time, and oversized error bodies.
package hostilehttp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// errStopped is returned by writes once the server is closing.
var errStopped = errors.New("hostilehttp: server closing")

// errorBody is what SetErrorBody set: answer with code and n bytes.
type errorBody struct{ code, n int }

// Faults is the misbehaviour of one server. Its setters take effect from the
// next request (Trickle from the next byte); all are safe for concurrent use.
type Faults struct {
	served  atomic.Int64 // body bytes handed to the connection
	every   atomic.Int64 // nanoseconds between trickled bytes; 0 writes at once
	errBody atomic.Pointer[errorBody]
	used    atomic.Bool // a fault was ever set

	stop     chan struct{}
	stopOnce sync.Once
}

// New returns Faults with nothing set.
func New() *Faults { return &Faults{stop: make(chan struct{})} }

// Close ends trickles and error bodies in progress (their writes fail), so a
// server's Close need not wait for a client that never reads.
func (f *Faults) Close() { f.stopOnce.Do(func() { close(f.stop) }) }

// Used reports whether a fault was ever set: connections may then be stuck on
// a client that does not read, and the server should close them.
func (f *Faults) Used() bool { return f.used.Load() }

// BytesServed returns how many response body bytes the server handed to its
// connections (headers excluded). The kernel buffers a few MiB per connection,
// so a client that stops reading may have read less than this.
func (f *Faults) BytesServed() int64 { return f.served.Load() }

// Trickle makes every response body go out one byte per every, each flushed;
// 0 ends it (a trickle in progress speeds up after its current byte).
func (f *Faults) Trickle(every time.Duration) {
	if every > 0 {
		f.used.Store(true)
	}
	f.every.Store(int64(every))
}

// SetErrorBody makes ServeErrorBody answer with HTTP status code and an
// n-byte body; (0, 0) ends it. It panics unless code is a 4xx or 5xx status
// and n is not negative, so swapped arguments fail loudly.
func (f *Faults) SetErrorBody(code, n int) {
	if code == 0 && n == 0 {
		f.errBody.Store(nil)
		return
	}
	if code < 400 || code > 599 || n < 0 {
		panic(fmt.Sprintf("hostilehttp: error body of status %d and %d bytes: want a 4xx/5xx status and n >= 0", code, n))
	}
	f.used.Store(true)
	f.errBody.Store(&errorBody{code: code, n: n})
}

// ServeErrorBody answers the request with the status and body SetErrorBody
// set, through w (Handler's, to count the bytes), and reports whether it did.
// The body looks like a registry's JSON error, padded to exactly n bytes.
func (f *Faults) ServeErrorBody(w http.ResponseWriter) bool {
	eb := f.errBody.Load()
	if eb == nil {
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(eb.n))
	w.WriteHeader(eb.code)
	_ = writeJSONPadded(w, eb.n) // the client went away or the server is closing
	return true
}

// Handler serves h with a response writer that counts the body bytes and
// trickles them while Trickle is set. The writer fails (with an error) once the
// client went away or Close was called; the response is then aborted (the
// connection closed) after h returns, so the client never takes a cut body
// for a whole one.
func (f *Faults) Handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		fw := &writer{ResponseWriter: w, f: f, ctx: req.Context()}
		h.ServeHTTP(fw, req)
		if fw.cut {
			panic(http.ErrAbortHandler)
		}
	})
}

// writer is the http.ResponseWriter Handler serves with.
type writer struct {
	http.ResponseWriter
	f   *Faults
	ctx context.Context
	cut bool // a write failed because the client left or the server closes
}

// WriteHeader sends the header at once while trickling, so the client sees
// the status and then waits on the body.
func (w *writer) WriteHeader(code int) {
	w.ResponseWriter.WriteHeader(code)
	if w.f.every.Load() > 0 {
		w.Flush()
	}
}

// Write writes p, one byte per trickle interval while Trickle is set.
func (w *writer) Write(p []byte) (int, error) {
	written := 0
	for written < len(p) {
		if err := w.alive(); err != nil {
			w.cut = true
			return written, err
		}
		every := time.Duration(w.f.every.Load())
		if every <= 0 {
			n, err := w.ResponseWriter.Write(p[written:])
			w.f.served.Add(int64(n))
			return written + n, err
		}
		if err := w.sleep(every); err != nil {
			w.cut = true
			return written, err
		}
		n, err := w.ResponseWriter.Write(p[written : written+1])
		w.f.served.Add(int64(n))
		written += n
		if err != nil {
			return written, err
		}
		w.Flush()
	}
	return written, nil
}

// alive returns an error once the client went away or the server is closing.
func (w *writer) alive() error {
	select {
	case <-w.f.stop:
		return errStopped
	default:
		return w.ctx.Err()
	}
}

// sleep waits d, or returns an error when the client goes away or the server closes first.
func (w *writer) sleep(d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-w.ctx.Done():
		return w.ctx.Err()
	case <-w.f.stop:
		return errStopped
	}
}

// Flush sends what is buffered to the client.
func (w *writer) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

// Unwrap lets http.ResponseController reach the connection's writer (Hijack, deadlines).
func (w *writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Hijack hands the connection over, as the server's own writer does.
func (w *writer) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

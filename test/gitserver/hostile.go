package gitserver

import "time"

// ErrorBody makes the server answer every request with HTTP status code (4xx
// or 5xx) and an n-byte body of JSON-looking error text, as a hostile git host
// does to exhaust a client's memory; ErrorBody(0, 0) ends it. FailWith, when
// set, wins. Mind the order: the status comes first (Registry.ErrorBody takes
// the size first). Invalid arguments panic.
func (s *HTTPServer) ErrorBody(code, n int) { s.faults.SetErrorBody(code, n) }

// Trickle makes the server write every response body one byte per every,
// flushing each byte, so a client that waits for a whole body (a ref
// advertisement, a pack) waits (almost) forever; 0 ends it. A trickle stops
// when its client goes away (git http-backend is then killed), and when the
// test ends.
func (s *HTTPServer) Trickle(every time.Duration) { s.faults.Trickle(every) }

// BytesServed returns how many response body bytes the server has handed to
// its clients, for every request (headers excluded). A client that stops
// reading early may have read less: the kernel buffers up to a few MiB per
// connection.
func (s *HTTPServer) BytesServed() int64 { return s.faults.BytesServed() }

// stopFaults ends trickles and error bodies in progress and, when a fault was
// ever set, closes the connections, so the server's Close does not wait for a
// client that never reads.
func (s *HTTPServer) stopFaults() {
	s.faults.Close()
	if s.faults.Used() {
		s.srv.CloseClientConnections()
	}
}

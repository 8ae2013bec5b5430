package faults

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
)

// apiFront stands between the operator and the API server, where the pod's network
// would be: it passes every request on, with the operator's credentials, except the
// one a trap is set for. There it kills the operator with the request half done:
// after the API server took it and before the answer came back (the write landed,
// the operator never knew), or before passing it on (the write was lost).
type apiFront struct {
	URL       string
	upstream  *url.URL
	transport http.RoundTripper
	proxy     *httputil.ReverseProxy

	mu   sync.Mutex
	trap *trap
}

// trap is one request to kill the operator on.
type trap struct {
	match func(method, path string, body []byte) bool
	// landed: the request reaches the API server before the kill.
	landed bool
	kill   func() int
	fired  chan string
}

func startAPIFront(t *testing.T, operator *rest.Config) *apiFront {
	t.Helper()
	upstream, err := url.Parse(operator.Host)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(operator)
	if err != nil {
		t.Fatal(err)
	}
	f := &apiFront{upstream: upstream, transport: transport}
	f.proxy = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(upstream)
			r.Out.Host = upstream.Host
		},
		Transport:     transport,
		FlushInterval: -1, // watches stream
		ErrorLog:      nil,
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: f}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	f.URL = "http://" + l.Addr().String()
	return f
}

// setTrap arms a trap: the next request that matches kills the operator (kill) at
// the moment landed says. The returned channel receives what was caught.
func (f *apiFront) setTrap(landed bool, kill func() int, match func(method, path string, body []byte) bool) <-chan string {
	fired := make(chan string, 1)
	f.mu.Lock()
	f.trap = &trap{match: match, landed: landed, kill: kill, fired: fired}
	f.mu.Unlock()
	return fired
}

func (f *apiFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body []byte
	if r.Body != nil && r.Method != http.MethodGet {
		b, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		body = b
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	f.mu.Lock()
	tr := f.trap
	if tr != nil && tr.match(r.Method, r.URL.Path, body) {
		f.trap = nil
	} else {
		tr = nil
	}
	f.mu.Unlock()
	if tr == nil {
		f.proxy.ServeHTTP(w, r)
		return
	}
	status := "never sent"
	if tr.landed {
		out := r.Clone(r.Context())
		out.URL.Scheme, out.URL.Host, out.Host, out.RequestURI = f.upstream.Scheme, f.upstream.Host, f.upstream.Host, ""
		out.Body = io.NopCloser(bytes.NewReader(body))
		resp, err := f.transport.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			f.rearm(tr)
			return
		}
		defer func() { _ = resp.Body.Close() }()
		if resp.StatusCode >= 300 {
			// The write did not land (a conflict, say): the operator retries it, and
			// the trap waits for the write that does.
			for k, v := range resp.Header {
				w.Header()[k] = v
			}
			w.WriteHeader(resp.StatusCode)
			_, _ = io.Copy(w, resp.Body)
			f.rearm(tr)
			return
		}
		status = resp.Status
		_, _ = io.Copy(io.Discard, resp.Body)
	}
	pid := tr.kill()
	tr.fired <- r.Method + " " + r.URL.Path + " (API server: " + status + "), operator pid " + strconv.Itoa(pid) + " killed"
	// The operator is gone: its connection ends without an answer.
	if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
		_ = conn.Close()
	}
}

// rearm sets tr again unless another trap was set meanwhile.
func (f *apiFront) rearm(tr *trap) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.trap == nil {
		f.trap = tr
	}
}

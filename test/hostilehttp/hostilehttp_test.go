package hostilehttp

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestWriteJSONPadded(t *testing.T) {
	for _, n := range []int{0, 1, len(jsonHead) + len(jsonTail) - 1, len(jsonHead) + len(jsonTail), 100, chunk*3 + 7} {
		var buf bytes.Buffer
		if err := writeJSONPadded(&buf, n); err != nil || buf.Len() != n {
			t.Fatalf("n=%d: wrote %d bytes, %v", n, buf.Len(), err)
		}
		if n >= len(jsonHead)+len(jsonTail) && !json.Valid(buf.Bytes()) {
			t.Fatalf("n=%d: %q is not JSON", n, buf.Bytes())
		}
	}
}

func TestSetErrorBodyRefusesNonErrors(t *testing.T) {
	for _, args := range [][2]int{{200, 10}, {10 << 20, 500}, {500, -1}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("SetErrorBody(%d, %d) did not panic", args[0], args[1])
				}
			}()
			New().SetErrorBody(args[0], args[1])
		}()
	}
	f := New()
	f.SetErrorBody(0, 0)
	if f.Used() {
		t.Fatal("SetErrorBody(0, 0) counts as a fault")
	}
}

// TestWrap checks counting, trickling and hijacking through the wrapper.
func TestWrap(t *testing.T) {
	f := New()
	srv := httptest.NewServer(f.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hijack" {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close()
			}
			return
		}
		_, _ = io.WriteString(w, "hello, world")
	})))
	t.Cleanup(srv.Close)
	t.Cleanup(f.Close)

	get := func(path string) (string, error) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			return "", err
		}
		defer func() { _ = resp.Body.Close() }()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	if body, err := get("/"); err != nil || body != "hello, world" || f.BytesServed() != 12 {
		t.Fatalf("GET: %q, %v, %d served; want hello, world and 12", body, err, f.BytesServed())
	}
	f.Trickle(20 * time.Millisecond)
	start := time.Now()
	if body, err := get("/"); err != nil || body != "hello, world" || time.Since(start) < 12*20*time.Millisecond {
		t.Fatalf("trickled GET: %q, %v in %v; want hello, world in at least 240ms", body, err, time.Since(start))
	}
	if _, err := get("/hijack"); err == nil {
		t.Fatal("GET of a hijacked and closed connection succeeded")
	}
}

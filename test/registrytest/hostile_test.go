package registrytest_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/fnops/func-operator/test/registrytest"
)

// manifestURL returns the http URL of the manifest that ref (repo@digest on reg) names.
func manifestURL(t *testing.T, ref string) string {
	t.Helper()
	d, err := name.NewDigest(ref)
	if err != nil {
		t.Fatal(err)
	}
	return "http://" + d.RegistryStr() + "/v2/" + d.RepositoryStr() + "/manifests/" + d.DigestStr()
}

// get GETs url with ctx and returns the status and the body read until an error.
func get(ctx context.Context, t *testing.T, url string) (int, []byte, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

func TestErrorBody(t *testing.T) {
	reg := registrytest.Start(t)
	ref := reg.Push(t, "app", "")
	const n = 10 << 20
	reg.ErrorBody(n, http.StatusInternalServerError)

	before := reg.BytesServed()
	code, body, err := get(context.Background(), t, manifestURL(t, ref))
	if err != nil || code != http.StatusInternalServerError || len(body) != n {
		t.Fatalf("GET manifest: %d, %d bytes, %v; want 500 and %d bytes", code, len(body), err, n)
	}
	if !strings.HasPrefix(string(body), `{"errors":[{"code":"UNKNOWN"`) || !strings.HasSuffix(string(body), "\"}]}\n") {
		t.Fatalf("body %.60q…%q does not look like a registry error", body, body[len(body)-8:])
	}
	if got := reg.BytesServed() - before; got != n {
		t.Fatalf("BytesServed grew by %d, want %d", got, n)
	}

	parsed, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	before = reg.BytesServed()
	_, err = remote.Image(parsed)
	t.Logf("go-containerregistry read %d bytes of the error bodies: %.200v", reg.BytesServed()-before, err)
	if err == nil {
		t.Fatal("pulling succeeded through the error body")
	}
	if code, _, err := get(context.Background(), t, "http://"+reg.Host+"/v2/"); err != nil || code != http.StatusOK {
		t.Fatalf("GET /v2/ while manifests fail: %d, %v; want 200", code, err)
	}

	reg.ErrorBody(0, 0)
	if _, err := remote.Image(parsed); err != nil {
		t.Fatalf("pulling after ErrorBody(0, 0): %v", err)
	}
}

func TestErrorBodySwappedArgumentsPanic(t *testing.T) {
	reg := registrytest.Start(t)
	defer func() {
		if recover() == nil {
			t.Fatal("ErrorBody(500, 10 MiB) did not panic")
		}
	}()
	reg.ErrorBody(500, 10<<20)
}

func TestTrickle(t *testing.T) {
	reg := registrytest.Start(t)
	ref := reg.Push(t, "app", "")
	_, whole, err := get(context.Background(), t, manifestURL(t, ref))
	if err != nil {
		t.Fatal(err)
	}
	reg.Trickle(50 * time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	before := reg.BytesServed()
	start := time.Now()
	code, body, err := get(ctx, t, manifestURL(t, ref))
	if !errors.Is(err, context.DeadlineExceeded) || code != http.StatusOK {
		t.Fatalf("trickled GET: %d, %v; want 200 then the deadline", code, err)
	}
	if len(body) < 3 || len(body) > 12 || !strings.HasPrefix(string(whole), string(body)) {
		t.Fatalf("read %q in %v; want a few bytes of the %d-byte manifest", body, time.Since(start), len(whole))
	}
	// The handler stops once the client went away: nothing more is served.
	time.Sleep(200 * time.Millisecond)
	served := reg.BytesServed()
	time.Sleep(300 * time.Millisecond)
	if got := reg.BytesServed(); got != served || got-before > 15 {
		t.Fatalf("served %d bytes, then %d: the trickle outlived its client", served-before, got-before)
	}

	reg.Trickle(0)
	if _, body, err := get(context.Background(), t, manifestURL(t, ref)); err != nil || string(body) != string(whole) {
		t.Fatalf("GET after Trickle(0): %d bytes, %v", len(body), err)
	}
}

// TestTrickleEndsWithTheTest checks the test's end cuts a trickle whose client
// never gives up, rather than waiting for it.
func TestTrickleEndsWithTheTest(t *testing.T) {
	done := make(chan error, 1)
	t.Run("trickle", func(t *testing.T) {
		reg := registrytest.Start(t)
		ref := reg.Push(t, "app", "")
		reg.Trickle(time.Hour)
		pushed := reg.Requests()
		go func() {
			resp, err := http.Get(manifestURL(t, ref))
			if err == nil {
				_, err = io.ReadAll(resp.Body)
				_ = resp.Body.Close()
			}
			done <- err
		}()
		for reg.Requests() == pushed { // wait for the GET
			time.Sleep(10 * time.Millisecond)
		}
	})
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the trickled GET completed")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the trickled GET still runs after its test ended")
	}
}

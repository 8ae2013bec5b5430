package gitserver_test

import (
	"context"
	"errors"
	"io"
	nethttp "net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/fnops/func-operator/test/gitserver"
)

// refsURL is the ref advertisement URL of the repository at url.
func refsURL(url string) string { return url + "/info/refs?service=git-upload-pack" }

// httpGet GETs url with ctx and returns the status and the body read until an error.
func httpGet(ctx context.Context, t *testing.T, url string) (int, []byte, error) {
	t.Helper()
	req, err := nethttp.NewRequestWithContext(ctx, nethttp.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := nethttp.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

func TestHTTPErrorBody(t *testing.T) {
	root := gitserver.NewRepoRoot(t)
	gitserver.CreateRepo(t, root, "fns").Commit(t, "main", map[string]string{"func.yaml": "name: a\n"}, "init")
	srv := gitserver.StartHTTP(t, root)
	const n = 10 << 20
	srv.ErrorBody(nethttp.StatusServiceUnavailable, n)

	code, body, err := httpGet(context.Background(), t, refsURL(srv.URL("fns")))
	if err != nil || code != nethttp.StatusServiceUnavailable || len(body) != n {
		t.Fatalf("GET info/refs: %d, %d bytes, %v; want 503 and %d bytes", code, len(body), err, n)
	}
	if got := srv.BytesServed(); got != n {
		t.Fatalf("BytesServed = %d, want %d", got, n)
	}
	before := srv.BytesServed()
	_, err = clone(t, srv.URL("fns"), nil)
	t.Logf("go-git: %d bytes served to it: %.120v", srv.BytesServed()-before, err)
	if err == nil {
		t.Fatal("clone succeeded through the error body")
	}

	srv.ErrorBody(0, 0)
	mustClone(t, srv.URL("fns"), nil)
}

func TestHTTPTrickle(t *testing.T) {
	root := gitserver.NewRepoRoot(t)
	repo := gitserver.CreateRepo(t, root, "fns")
	repo.Commit(t, "main", map[string]string{"func.yaml": "name: a\n"}, "init")
	srv := gitserver.StartHTTP(t, root)
	srv.Trickle(50 * time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	_, err := git.PlainCloneContext(ctx, t.TempDir(), false, &git.CloneOptions{
		URL: srv.URL("fns"), Depth: 1, SingleBranch: true, ReferenceName: plumbing.NewBranchReferenceName("main"),
	})
	if err == nil || !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("trickled clone after %v: %v; want the deadline", time.Since(start), err)
	}
	// The trickle ends with its client, and with it git http-backend.
	time.Sleep(200 * time.Millisecond)
	served := srv.BytesServed()
	time.Sleep(300 * time.Millisecond)
	if got := srv.BytesServed(); got != served || got > 25 {
		t.Fatalf("served %d bytes, then %d: the trickle outlived its client", served, got)
	}
	if pids := gitProcessesUnder(t, root); len(pids) != 0 {
		t.Fatalf("git processes still run in %s: %v", root, pids)
	}

	srv.Trickle(0)
	mustClone(t, srv.URL("fns"), nil)
}

// gitProcessesUnder returns the processes whose working directory is under root.
func gitProcessesUnder(t *testing.T, root string) []string {
	t.Helper()
	procs, err := filepath.Glob("/proc/[0-9]*/cwd")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, p := range procs {
		if cwd, err := os.Readlink(p); err == nil && strings.HasPrefix(cwd, root) {
			found = append(found, filepath.Base(filepath.Dir(p)))
		}
	}
	return found
}

// TestHTTPTrickleEndsWithTheTest checks the test's end cuts a trickle whose
// client never gives up, rather than waiting for it.
func TestHTTPTrickleEndsWithTheTest(t *testing.T) {
	done := make(chan error, 1)
	t.Run("trickle", func(t *testing.T) {
		root := gitserver.NewRepoRoot(t)
		gitserver.CreateRepo(t, root, "fns").Commit(t, "main", map[string]string{"func.yaml": "name: a\n"}, "init")
		srv := gitserver.StartHTTP(t, root)
		srv.Trickle(time.Hour)
		go func() {
			_, _, err := httpGet(context.Background(), t, refsURL(srv.URL("fns")))
			done <- err
		}()
		for srv.RefAdvertisements("fns") == 0 {
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

// TestHTTPResetThroughFaults checks FailWith(Reset) still hijacks the connection
// through the counting writer.
func TestHTTPResetThroughFaults(t *testing.T) {
	root := gitserver.NewRepoRoot(t)
	gitserver.CreateRepo(t, root, "fns")
	srv := gitserver.StartHTTP(t, root)
	srv.FailWith(gitserver.Reset)
	if code, _, err := httpGet(context.Background(), t, refsURL(srv.URL("fns"))); err == nil {
		t.Fatalf("GET answered %d, want a reset connection", code)
	}
}

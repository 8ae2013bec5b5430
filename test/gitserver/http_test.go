package gitserver_test

import (
	"context"
	nethttp "net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/fnops/func-operator/test/gitserver"
)

func TestHTTPPublicClone(t *testing.T) {
	root := gitserver.NewRepoRoot(t)
	repo := gitserver.CreateRepo(t, root, "public")
	repo.Commit(t, "main", map[string]string{"fns/hello/func.yaml": "name: hello\n"}, "init")
	srv := gitserver.StartHTTP(t, root)

	if !strings.HasPrefix(srv.URL("public"), "http://127.0.0.1:") || !strings.HasSuffix(srv.URL("public"), "/public.git") {
		t.Fatalf("URL = %s", srv.URL("public"))
	}
	dir := mustClone(t, srv.URL("public"), nil)
	assertFile(t, dir, "fns/hello/func.yaml", "name: hello\n")
}

func TestHTTPBasicAuth(t *testing.T) {
	root := gitserver.NewRepoRoot(t)
	repo := gitserver.CreateRepo(t, root, "private")
	repo.Commit(t, "main", map[string]string{"a.txt": "secret"}, "init")
	srv := gitserver.StartHTTP(t, root)
	srv.RequireBasicAuth("private", "alice", "s3cret")

	for name, auth := range map[string]*http.BasicAuth{
		"none":           nil,
		"wrong password": {Username: "alice", Password: "nope"},
		"wrong user":     {Username: "bob", Password: "s3cret"},
	} {
		t.Run(name, func(t *testing.T) {
			var err error
			if auth == nil {
				_, err = clone(t, srv.URL("private"), nil)
			} else {
				_, err = clone(t, srv.URL("private"), auth)
			}
			if err == nil || !strings.Contains(err.Error(), "authentication required") {
				t.Fatalf("clone error = %v, want authentication required", err)
			}
		})
	}
	resp, err := nethttp.Get(srv.URL("private") + "/info/refs?service=git-upload-pack")
	if err != nil {
		t.Fatalf("GET info/refs: %v", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != nethttp.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != `Basic realm="git"` {
		t.Fatalf("unauthenticated GET: status %d, WWW-Authenticate %q; want 401 and Basic realm=\"git\"",
			resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	if n := srv.RefAdvertisements("private") + srv.UploadPacks("private"); n != 0 {
		t.Fatalf("rejected requests were counted: %d", n)
	}

	dir := mustClone(t, srv.URL("private"), &http.BasicAuth{Username: "alice", Password: "s3cret"})
	assertFile(t, dir, "a.txt", "secret")
}

func TestHTTPToken(t *testing.T) {
	root := gitserver.NewRepoRoot(t)
	repo := gitserver.CreateRepo(t, root, "tokened")
	repo.Commit(t, "main", map[string]string{"a.txt": "t"}, "init")
	gitserver.CreateRepo(t, root, "open").Commit(t, "main", map[string]string{"b.txt": "o"}, "init")
	srv := gitserver.StartHTTP(t, root)
	srv.RequireToken("tokened", "tok-123")

	dir := mustClone(t, srv.URL("tokened"), &http.BasicAuth{Username: "git", Password: "tok-123"})
	assertFile(t, dir, "a.txt", "t")

	if _, err := clone(t, srv.URL("tokened"), &http.BasicAuth{Username: "git", Password: "tok-999"}); err == nil {
		t.Fatal("clone with wrong token succeeded")
	}
	if _, err := clone(t, srv.URL("tokened"), &http.BasicAuth{Password: "tok-123"}); err == nil {
		t.Fatal("clone with empty username succeeded")
	}
	// Other repos stay public.
	mustClone(t, srv.URL("open"), nil)
}

func TestHTTPCounters(t *testing.T) {
	root := gitserver.NewRepoRoot(t)
	repo := gitserver.CreateRepo(t, root, "counted")
	sha := repo.Commit(t, "main", map[string]string{"a.txt": "a"}, "init")
	srv := gitserver.StartHTTP(t, root)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	remote := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{srv.URL("counted")}})
	refs, err := remote.ListContext(ctx, &git.ListOptions{})
	if err != nil {
		t.Fatalf("ls-remote: %v", err)
	}
	found := false
	for _, ref := range refs {
		if ref.Name().String() == "refs/heads/main" && ref.Hash().String() == sha {
			found = true
		}
	}
	if !found {
		t.Fatalf("ls-remote refs %v lack refs/heads/main at %s", refs, sha)
	}
	if got, want := srv.RefAdvertisements("counted"), 1; got != want {
		t.Fatalf("RefAdvertisements after ls-remote = %d, want %d", got, want)
	}
	if got := srv.UploadPacks("counted"); got != 0 {
		t.Fatalf("UploadPacks after ls-remote = %d, want 0", got)
	}

	mustClone(t, srv.URL("counted"), nil)
	if got, want := srv.UploadPacks("counted"), 1; got != want {
		t.Fatalf("UploadPacks after clone = %d, want %d", got, want)
	}
	if got, want := srv.RefAdvertisements("counted"), 2; got != want {
		t.Fatalf("RefAdvertisements after clone = %d, want %d", got, want)
	}
	if got := srv.RefAdvertisements("other"); got != 0 {
		t.Fatalf("RefAdvertisements(other) = %d, want 0", got)
	}
}

func TestHTTPSClone(t *testing.T) {
	root := gitserver.NewRepoRoot(t)
	repo := gitserver.CreateRepo(t, root, "tls")
	repo.Commit(t, "main", map[string]string{"func.yaml": "name: tls\n"}, "init")
	srv := gitserver.StartHTTPS(t, root)
	if !strings.HasPrefix(srv.URL("tls"), "https://127.0.0.1:") {
		t.Fatalf("URL %s, want https on 127.0.0.1", srv.URL("tls"))
	}
	// Without the certificate the clone fails; with it, it works.
	if _, err := clone(t, srv.URL("tls"), nil); err == nil {
		t.Fatalf("cloning without trusting the certificate worked")
	}
	dir, err := cloneWithCA(t, srv.URL("tls"), srv.CertificatePEM())
	if err != nil {
		t.Fatalf("cloning with the certificate: %v", err)
	}
	assertFile(t, dir, "func.yaml", "name: tls\n")
}

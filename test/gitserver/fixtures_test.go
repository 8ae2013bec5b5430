package gitserver_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

// clone shallow-clones branch main of url with go-git, as the operator does.
func clone(t *testing.T, url string, auth transport.AuthMethod) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	_, err := git.PlainCloneContext(ctx, dir, false, &git.CloneOptions{
		URL:           url,
		Auth:          auth,
		Depth:         1,
		SingleBranch:  true,
		ReferenceName: plumbing.NewBranchReferenceName("main"),
	})
	return dir, err
}

// mustClone clones url and fails the test on error.
func mustClone(t *testing.T, url string, auth transport.AuthMethod) string {
	t.Helper()
	dir, err := clone(t, url, auth)
	if err != nil {
		t.Fatalf("clone %s: %v", url, err)
	}
	return dir
}

// assertFile checks that dir/name holds want.
func assertFile(t *testing.T, dir, name, want string) {
	t.Helper()
	got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil {
		t.Fatalf("read cloned file: %v", err)
	}
	if string(got) != want {
		t.Fatalf("%s = %q, want %q", name, got, want)
	}
}

// cloneWithCA clones branch main of url trusting the CA certificate caPEM.
func cloneWithCA(t *testing.T, url string, caPEM []byte) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	_, err := git.PlainCloneContext(ctx, dir, false, &git.CloneOptions{
		URL: url, CABundle: caPEM, Depth: 1, SingleBranch: true,
		ReferenceName: plumbing.NewBranchReferenceName("main"),
	})
	return dir, err
}

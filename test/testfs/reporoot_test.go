package testfs

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestRepoRoot: the checkout's root, whether the build kept file paths or not
// (make test's -trimpath): from this test's folder, where go test runs it, the go.mod
// two levels up; its positive control, the Makefile beside it.
func TestRepoRoot(t *testing.T) {
	root := RepoRoot()
	if _, err := os.Stat(filepath.Join(root, "Makefile")); err != nil {
		t.Fatalf("RepoRoot() = %s, which has no Makefile: %v", root, err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Clean(filepath.Join(wd, "..", "..")); root != want {
		t.Errorf("RepoRoot() = %s, want %s", root, want)
	}
	_, file, _, _ := runtime.Caller(0)
	t.Logf("built with file paths: %t (%s)", filepath.IsAbs(file), file)
}

// Package testfs holds what tests share of the file system: the checkout's root
// (RepoRoot) and assertions on folders. It imports no package of the operator.
package testfs

import (
	"os"
	"testing"
)

// AssertEmptyDir fails the test when dir holds anything, naming what it holds.
func AssertEmptyDir(t testing.TB, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("reading %s: %v", dir, err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) > 0 {
		t.Errorf("temporary directory %s is not empty: %v", dir, names)
	}
}

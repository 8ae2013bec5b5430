package operator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseNamespaces(t *testing.T) {
	tests := map[string][]string{
		"":                   nil,
		"team-a":             {"team-a"},
		"team-a,team-b":      {"team-a", "team-b"},
		" team-a , ,team-b ": {"team-a", "team-b"},
	}
	for in, want := range tests {
		if diff := cmp.Diff(want, ParseNamespaces(in)); diff != "" {
			t.Errorf("ParseNamespaces(%q) (-want +got):\n%s", in, diff)
		}
	}
}

// TestRemoveLeftovers: what a killed process left in its work directory goes, and
// nothing else.
func TestRemoveLeftovers(t *testing.T) {
	work := t.TempDir()
	for _, d := range []string{"func-library-1", "clone-2", "build-3", "funcyaml-4", "history-5", "kept", "clone-file"} {
		p := filepath.Join(work, d)
		if d == "clone-file" {
			if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Join(p, "sub"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := removeLeftovers(work); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(work)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, 0, len(entries))
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if diff := cmp.Diff([]string{"clone-file", "kept"}, got); diff != "" {
		t.Errorf("left in the work directory (-want +got):\n%s", diff)
	}

	// A shared directory, as /tmp, is left alone.
	shared := t.TempDir()
	if err := os.Mkdir(filepath.Join(shared, "clone-other"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o1777); err != nil {
		t.Fatal(err)
	}
	if err := removeLeftovers(shared); err == nil || !strings.Contains(err.Error(), "is shared") {
		t.Errorf("removeLeftovers(a sticky, world-writable directory) = %v, want it refused", err)
	}
	if _, err := os.Stat(filepath.Join(shared, "clone-other")); err != nil {
		t.Errorf("another program's clone-other in a shared directory: %v", err)
	}
}

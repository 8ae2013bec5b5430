package funclib

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestVersion(t *testing.T) {
	// The version go.mod pins, which a test binary must report too.
	gomod, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatalf("reading go.mod: %v", err)
	}
	want := ""
	for _, line := range strings.Split(string(gomod), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == modulePath {
			want = f[1]
		}
	}
	if want == "" {
		t.Fatalf("go.mod does not require %s", modulePath)
	}
	if diff := cmp.Diff(want, Version()); diff != "" {
		t.Errorf("Version() (-want +got):\n%s", diff)
	}
}

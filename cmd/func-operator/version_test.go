package main

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fnops/func-operator/pkg/funclib"
)

// TestVersionFlag builds the binary as ko.yaml does for a release (the version and
// revision stamped by the linker) and runs `func-operator --version`: it prints them,
// needs no cluster and exits 0.
func TestVersionFlag(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "func-operator")
	ldflags := "-X github.com/fnops/func-operator/pkg/version.Version=v1.2.3-rc.1 -X github.com/fnops/func-operator/pkg/version.Revision=abc123"
	build := exec.Command("go", "build", "-buildvcs=false", "-ldflags", ldflags, "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the operator: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "--version")
	cmd.Env = []string{"KUBECONFIG=/nonexistent"} // no cluster: --version needs none
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("func-operator --version: %v\n%s", err, out)
	}
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	want := []string{"func-operator v1.2.3-rc.1", "revision: abc123", "go: " + runtime.Version(), "knative.dev/func: " + funclib.Version()}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("func-operator --version (-want +got):\n%s", diff)
	}
}

package hygiene

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/fnops/func-operator/test/envtest"
)

// TestCompilerFlags_Shared: ko.yaml builds the operator with the compiler flags make test
// and the tools built in the project's graph use (hack/lib/project-module.sh's
// PROJECT_GCFLAGS). Any difference is a second compile of every package on a cold run:
// the release test's images would not reuse what the tests compiled (about ten minutes
// of CPU per platform). The positive control is that both sides name a -gcflags at all.
func TestCompilerFlags_Shared(t *testing.T) {
	root := envtest.RepoRoot()
	cmd := exec.Command("bash", "-c", `. hack/lib/project-module.sh && printf %s "${PROJECT_GCFLAGS}"`)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("reading PROJECT_GCFLAGS: %v", err)
	}
	want := string(out)
	if want == "" {
		t.Fatal("hack/lib/project-module.sh sets no PROJECT_GCFLAGS")
	}

	raw, err := os.ReadFile(filepath.Join(root, "ko.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var ko struct {
		Builds []struct {
			ID    string   `json:"id"`
			Flags []string `json:"flags"`
		} `json:"builds"`
	}
	if err := yaml.Unmarshal(raw, &ko); err != nil {
		t.Fatalf("ko.yaml: %v", err)
	}
	if len(ko.Builds) == 0 {
		t.Fatal("ko.yaml has no builds")
	}
	for _, b := range ko.Builds {
		var got []string
		for _, f := range b.Flags {
			if v, ok := strings.CutPrefix(f, "-gcflags="); ok {
				got = append(got, v)
			}
		}
		if len(got) != 1 || got[0] != want {
			t.Errorf("ko.yaml build %q: -gcflags %q, want exactly %q (PROJECT_GCFLAGS)", b.ID, got, want)
		}
	}

	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(makefile), "-gcflags=$(PROJECT_GCFLAGS)") {
		t.Error("make test's GOFLAGS no longer pass -gcflags=$(PROJECT_GCFLAGS)")
	}
}

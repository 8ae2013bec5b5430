package hygiene

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fnops/func-operator/test/envtest"
)

// funcLibrary is the operator's func adapter, which links all of knative.dev/func.
const funcLibrary = "github.com/fnops/func-operator/pkg/funclib"

// maxFuzzPackages bounds the packages the fuzz targets' test binaries link, together
// (623 when this test was written; 1,947 while pkg/git and pkg/registry linked
// pkg/funclib and FuzzNormalizeURL lived in pkg/receiver).
const maxFuzzPackages = 800

// TestFuzzTargets_Lean keeps make fuzz-short cheap on a cold build cache: `go test
// -fuzz` compiles every package a test binary links again, with the fuzzer's
// instrumentation, so what the fuzz targets' packages (tests included) link is what a
// cold run compiles twice. None may link the func adapter, and together they stay
// under maxFuzzPackages. The positive control: pkg/operator links the adapter and the
// same query finds it.
func TestFuzzTargets_Lean(t *testing.T) {
	root := envtest.RepoRoot()
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	var pkgs []string
	seen := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\t(\./[\w/.-]+):(Fuzz\w+)`).FindAllStringSubmatch(string(makefile), -1) {
		pkg, target := m[1], m[2]
		src, err := exec.Command("grep", "-rlw", "--include=*_test.go", "func "+target, filepath.Join(root, pkg)).Output()
		if err != nil || len(src) == 0 {
			t.Errorf("FUZZ_TARGETS names %s:%s, which %s does not define", pkg, target, pkg)
		}
		if !seen[pkg] {
			seen[pkg] = true
			pkgs = append(pkgs, pkg)
		}
	}
	if len(pkgs) < 4 {
		t.Fatalf("found the fuzz targets of %d packages in the Makefile (%v), want at least 4: is FUZZ_TARGETS still there?", len(pkgs), pkgs)
	}
	deps := listDeps(t, root, pkgs...)
	if deps[funcLibrary] {
		for _, pkg := range pkgs {
			if listDeps(t, root, pkg)[funcLibrary] {
				t.Errorf("%s (tests included) links %s: fuzzing it compiles all of knative.dev/func with instrumentation", pkg, funcLibrary)
			}
		}
	}
	if len(deps) > maxFuzzPackages {
		t.Errorf("the fuzz targets' packages %v link %d packages, more than %d", pkgs, len(deps), maxFuzzPackages)
	}
	t.Logf("the fuzz targets' packages %v link %d packages", pkgs, len(deps))
	if !listDeps(t, root, "./pkg/operator")[funcLibrary] {
		t.Errorf("positive control: go list -deps -test ./pkg/operator does not list %s", funcLibrary)
	}
}

// listDeps is the set of packages that pkgs' test binaries link.
func listDeps(t *testing.T, root string, pkgs ...string) map[string]bool {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-deps", "-test"}, pkgs...)...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps -test %v: %v", pkgs, err)
	}
	deps := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		// A package compiled again for a test is listed as "path [path.test]".
		p, _, _ := strings.Cut(line, " ")
		deps[p] = true
	}
	return deps
}

package hygiene

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fnops/func-operator/test/envtest"
)

// testNameViolations lists the tests of dir that break the naming rule of
// docs/development.md (Tests: tiers and names): a step table (TestReconciler_<step>)
// lives in <step>_step_test.go, and a file of step tables holds nothing else; whole
// Reconcile calls are TestReconcile_<Behaviour>, never in a step file.
func testNameViolations(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		stepFile := strings.HasSuffix(name, "_step_test.go")
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Test") || fn.Name.Name == "TestMain" {
				continue
			}
			test := fn.Name.Name
			switch {
			case stepFile && !strings.HasPrefix(test, "TestReconciler_"):
				bad = append(bad, name+": "+test+" is not a step table (TestReconciler_<step>)")
			case !stepFile && strings.HasPrefix(test, "TestReconciler_reconcile"):
				bad = append(bad, name+": "+test+" is a step table outside a <step>_step_test.go")
			}
		}
	}
	return bad
}

// TestNames_ReconcilerTests holds the reconciler package's tests to the naming rule.
func TestNames_ReconcilerTests(t *testing.T) {
	for _, dir := range []string{"function", filepath.Join("function", "build")} {
		for _, v := range testNameViolations(t, filepath.Join(envtest.RepoRoot(), "pkg", "reconciler", dir)) {
			t.Error(v)
		}
	}
}

// The rule's positive control: a directory that breaks it both ways is caught.
func TestNames_CatchesMisplacedTests(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{
		"source_step_test.go": "package p\nimport \"testing\"\nfunc TestReconciler_reconcileSource(t *testing.T) {}\nfunc TestReconcile_Whole(t *testing.T) {}\n",
		"binding_test.go":     "package p\nimport \"testing\"\nfunc TestReconcile_Binding(t *testing.T) {}\nfunc TestReconciler_reconcileDeployment_X(t *testing.T) {}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got := testNameViolations(t, dir)
	want := []string{
		"binding_test.go: TestReconciler_reconcileDeployment_X is a step table outside a <step>_step_test.go",
		"source_step_test.go: TestReconcile_Whole is not a step table (TestReconciler_<step>)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("violations = %q, want %q", got, want)
	}
}

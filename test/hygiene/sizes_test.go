package hygiene

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fnops/func-operator/test/envtest"
)

// The Function reconciler's bounds: a new concern (a rebuild cause, a deployer) goes
// into a sub-reconciler or a package of its own (pkg/reconciler/function/build is
// the build's), not into the Reconciler. docs/reconcile.md says where things go.
const (
	reconcilerMaxLines   = 3000 // non-test lines of package function
	reconcilerMaxMethods = 35
	reconcilerMaxFields  = 12
)

// reconcilerSize is the size of the type named typ in the non-test files of dir:
// the files' lines, the type's methods and its fields.
func reconcilerSize(t *testing.T, dir, typ string) (lines, methods, fields int) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		lines += bytes.Count(src, []byte("\n"))
		f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch d := n.(type) {
			case *ast.FuncDecl:
				if d.Recv != nil && len(d.Recv.List) == 1 && receiverType(d.Recv.List[0].Type) == typ {
					methods++
				}
			case *ast.TypeSpec:
				if st, ok := d.Type.(*ast.StructType); ok && d.Name.Name == typ {
					for _, f := range st.Fields.List {
						fields += max(len(f.Names), 1) // an embedded field counts once
					}
				}
			}
			return true
		})
	}
	return lines, methods, fields
}

// receiverType names a method's receiver type: T for T and *T.
func receiverType(e ast.Expr) string {
	if star, ok := e.(*ast.StarExpr); ok {
		e = star.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// TestSizes_Reconciler holds the Function reconciler package and its Reconciler to
// their bounds.
func TestSizes_Reconciler(t *testing.T) {
	lines, methods, fields := reconcilerSize(t, filepath.Join(envtest.RepoRoot(), "pkg", "reconciler", "function"), "Reconciler")
	t.Logf("package function: %d non-test lines; Reconciler: %d methods, %d fields", lines, methods, fields)
	// The control: the count reads the package it bounds.
	if lines < 1000 || methods < 10 || fields < 4 {
		t.Fatalf("counted %d lines, %d methods, %d fields: not the reconciler package", lines, methods, fields)
	}
	if lines > reconcilerMaxLines {
		t.Errorf("package function has %d non-test lines, want at most %d: give the new concern a package (as build/)", lines, reconcilerMaxLines)
	}
	if methods > reconcilerMaxMethods {
		t.Errorf("Reconciler has %d methods, want at most %d: give the new concern a sub-reconciler (as build.Reconciler)", methods, reconcilerMaxMethods)
	}
	if fields > reconcilerMaxFields {
		t.Errorf("Reconciler has %d fields, want at most %d: group what a concern reads (remotes, targets, watches)", fields, reconcilerMaxFields)
	}
}

// TestSizes_Counts checks reconcilerSize on a small package of its own.
func TestSizes_Counts(t *testing.T) {
	dir := t.TempDir()
	src := "package p\n\ntype R struct {\n\ta, b int\n\tc string\n\tfmt.Stringer\n}\n\nfunc (r *R) One() {}\nfunc (r R) two() {}\nfunc (o *Other) three() {}\nfunc four() {}\n"
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "p_test.go"), []byte("package p\n\nfunc (r *R) five() {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	lines, methods, fields := reconcilerSize(t, dir, "R")
	if lines != 12 || methods != 2 || fields != 4 {
		t.Errorf("got %d lines, %d methods, %d fields; want 12, 2, 4", lines, methods, fields)
	}
}

package v1alpha1

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestReasonConstantsNameTheirValues: every Reason constant of the package is named
// after its value (Reason + value), so that code that says a reason says what users
// read. Values are API and never change: a constant is renamed instead.
func TestReasonConstantsNameTheirValues(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			spec, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for i, id := range spec.Names {
				if !strings.HasPrefix(id.Name, "Reason") || i >= len(spec.Values) {
					continue
				}
				lit, ok := spec.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				value, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				checked++
				if id.Name != "Reason"+value {
					t.Errorf("%s: constant %s = %q, want it named Reason%s", fset.Position(id.Pos()), id.Name, value, value)
				}
			}
			return true
		})
	}
	// The positive control: the constants were found.
	if checked < 40 {
		t.Errorf("checked %d Reason constants, want the package's (more than 40)", checked)
	}
}

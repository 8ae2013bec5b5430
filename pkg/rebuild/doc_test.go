package rebuild

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPackage_imports holds what doc.go says: the package does not import
// pkg/reconciler, which imports it.
func TestPackage_imports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(path, "github.com/fnops/func-operator/pkg/reconciler") {
				t.Errorf("%s imports %s: package rebuild must not import pkg/reconciler", name, path)
			}
		}
	}
}

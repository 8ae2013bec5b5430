package testfs

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
)

// module is the first line of the checkout's go.mod.
const module = "module github.com/fnops/func-operator\n"

// RepoRoot returns the root of the func-operator checkout: from this file's path
// where the build kept it, else (make test builds with -trimpath, as ko does, so that
// the two share compiled packages: no path is kept) the folder of the operator's go.mod
// at or above the working directory, where go test runs a package's tests and make
// runs go run. It panics outside a checkout: nothing that needs it can go on.
func RepoRoot() string {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
	}
	dir, err := os.Getwd()
	if err != nil {
		panic("testfs.RepoRoot: " + err.Error())
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.HasPrefix(b, []byte(module)) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			panic("testfs.RepoRoot: no go.mod of github.com/fnops/func-operator at or above the working directory")
		}
		dir = parent
	}
}

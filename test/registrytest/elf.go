package registrytest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// FuncGoVersion is the knative.dev/func-go version the build info of
// PushPaddedFuncGoELF's executable records (it must be in the module cache, or
// reachable through GOPROXY, to build it).
const FuncGoVersion = "v0.22.0"

// Sources of the executables, built once per test binary.
const (
	helloMain  = "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello\") }\n"
	funcGoMain = `package main

import (
	"net/http"

	fhttp "knative.dev/func-go/http"
)

type handler struct{}

func (handler) Handle(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }

func main() {
	if err := fhttp.Start(handler{}); err != nil {
		panic(err)
	}
}
`
)

var (
	// helloELF is a linux/amd64 Go executable whose build info names no dependency.
	helloELF = sync.OnceValues(func() ([]byte, error) { return buildGo("", helloMain) })
	// funcGoELF is a linux/amd64 Go function executable requiring knative.dev/func-go FuncGoVersion.
	funcGoELF = sync.OnceValues(func() ([]byte, error) { return funcGoELFOf(FuncGoVersion) })
)

// funcGoELFs are Go function executables by the knative.dev/func-go version their
// build info requires, each built once per test binary.
var funcGoELFs sync.Map // version -> func() ([]byte, error)

// funcGoELFOf returns a Go function executable requiring knative.dev/func-go version.
func funcGoELFOf(version string) ([]byte, error) {
	build, _ := funcGoELFs.LoadOrStore(version, sync.OnceValues(func() ([]byte, error) {
		return buildGo("require knative.dev/func-go "+version+"\n", funcGoMain)
	}))
	return build.(func() ([]byte, error))()
}

// buildGo builds mainGo in a throw-away module whose go.mod carries require, stripped
// of symbols (its build info stays), and returns the executable.
func buildGo(require, mainGo string) ([]byte, error) {
	dir, err := os.MkdirTemp("", "registrytest-elf-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }() // a temporary directory: nothing to do if it stays
	goMod := "module example.com/registrytest/fn\n\ngo 1.21\n\n" + require
	for file, content := range map[string]string{"go.mod": goMod, "main.go": mainGo} {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644); err != nil {
			return nil, err
		}
	}
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", "fn", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod -buildvcs=false", "CGO_ENABLED=0", "GOWORK=off",
		"GOOS=linux", "GOARCH=amd64", "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build (module cache or GOPROXY needed for %q): %v\n%s", require, err, out)
	}
	return os.ReadFile(filepath.Join(dir, "fn"))
}

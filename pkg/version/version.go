package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Version is the release this binary was built as, e.g. v0.3.0: set by the linker
// (-X github.com/fnops/func-operator/pkg/version.Version=v0.3.0; ko.yaml passes
// $FUNC_OPERATOR_VERSION, which `make release` sets). Empty or unset: Devel.
var Version = ""

// Revision is the git commit the build was made from, as the linker stamped it
// (ko.yaml passes ko's {{.Git.FullCommit}}, and -dirty for a changed work tree): used
// when the Go toolchain recorded none (GOFLAGS=-buildvcs=false). Empty: Unknown.
var Revision = ""

// Devel is the version of a build no release stamped (go build, go run, make install).
const Devel = "devel"

// Unknown stands for what the build information does not record (a test binary
// records no dependencies; a build outside a git checkout, or with -buildvcs=false, no
// revision).
const Unknown = "unknown"

// funcModule is the module path of the func library (pkg/funclib links it).
const funcModule = "knative.dev/func"

// Info is what identifies a build.
type Info struct {
	// Version is the release version, or Devel.
	Version string
	// Revision is the git commit the binary was built from, with "-dirty" when the
	// work tree had changes, or Unknown.
	Revision string
	// GoVersion is the Go toolchain that built the binary, e.g. go1.26.0.
	GoVersion string
	// FuncVersion is the version of the knative.dev/func module linked in (as go.mod
	// pins it, or its replacement's), or Unknown.
	FuncVersion string
}

// Get returns the Info of the running binary.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return fromBuildInfo(Version, Revision, bi, runtime.Version())
}

// fromBuildInfo makes the Info of a binary stamped with version and revision whose
// build information is bi (nil: none) and that runs on goVersion. The revision the Go
// toolchain recorded wins over the stamped one.
func fromBuildInfo(version, revision string, bi *debug.BuildInfo, goVersion string) Info {
	i := Info{Version: version, Revision: revision, GoVersion: goVersion, FuncVersion: Unknown}
	if i.Version == "" {
		i.Version = Devel
	}
	if i.Revision == "" {
		i.Revision = Unknown
	}
	if bi == nil {
		return i
	}
	if bi.GoVersion != "" {
		i.GoVersion = bi.GoVersion
	}
	var recorded string
	var modified bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			recorded = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if recorded != "" {
		i.Revision = recorded
		if modified {
			i.Revision += "-dirty"
		}
	}
	for _, d := range bi.Deps {
		if d.Path != funcModule {
			continue
		}
		switch {
		case d.Replace != nil && d.Replace.Version != "":
			i.FuncVersion = d.Replace.Version
		case d.Version != "":
			i.FuncVersion = d.Version
		}
	}
	return i
}

// String is what `func-operator --version` prints: one line per field.
func (i Info) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "func-operator %s\n", i.Version)
	fmt.Fprintf(&b, "revision: %s\n", i.Revision)
	fmt.Fprintf(&b, "go: %s\n", i.GoVersion)
	fmt.Fprintf(&b, "knative.dev/func: %s\n", i.FuncVersion)
	return b.String()
}

package funclib

import (
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"

	fn "knative.dev/func/pkg/functions"
)

const modulePath = "knative.dev/func"

var version = sync.OnceValue(func() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == modulePath {
				if d.Replace != nil && d.Replace.Version != "" {
					return d.Replace.Version
				}
				return d.Version
			}
		}
	}
	// Test binaries record no dependencies in their build info. The func library's
	// source path still names its version: module cache and -trimpath paths both
	// read .../knative.dev/func@vX.Y.Z/...
	return versionFromSourcePath()
})

func versionFromSourcePath() string {
	pc := reflect.ValueOf(fn.NewFunction).Pointer()
	f := runtime.FuncForPC(pc)
	if f == nil {
		return "unknown"
	}
	file, _ := f.FileLine(pc)
	file = filepath.ToSlash(file)
	i := strings.Index(file, modulePath+"@")
	if i < 0 {
		return "unknown"
	}
	v := file[i+len(modulePath)+1:]
	if j := strings.IndexByte(v, '/'); j >= 0 {
		v = v[:j]
	}
	return v
}

// Version returns the version of the func library linked into this binary, as go.mod pins it.
func Version() string { return version() }

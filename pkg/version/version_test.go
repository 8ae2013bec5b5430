package version

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFromBuildInfo(t *testing.T) {
	funcDep := &debug.Module{Path: funcModule, Version: "v0.50.1"}
	tests := []struct {
		name     string
		version  string
		revision string
		bi       *debug.BuildInfo
		want     Info
	}{{
		name: "no build information",
		want: Info{Version: Devel, Revision: Unknown, GoVersion: "go1.0", FuncVersion: Unknown},
	}, {
		name:    "a release built from a clean checkout",
		version: "v1.2.3",
		bi: &debug.BuildInfo{
			GoVersion: "go1.26.0",
			Deps:      []*debug.Module{{Path: "k8s.io/api", Version: "v0.34.0"}, funcDep},
			Settings: []debug.BuildSetting{
				{Key: "vcs", Value: "git"},
				{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
				{Key: "vcs.modified", Value: "false"},
			},
		},
		want: Info{Version: "v1.2.3", Revision: "0123456789abcdef0123456789abcdef01234567", GoVersion: "go1.26.0", FuncVersion: "v0.50.1"},
	}, {
		name: "a development build of a changed work tree",
		bi: &debug.BuildInfo{
			GoVersion: "go1.26.0",
			Deps:      []*debug.Module{funcDep},
			Settings: []debug.BuildSetting{
				{Key: "vcs.revision", Value: "abc"},
				{Key: "vcs.modified", Value: "true"},
			},
		},
		want: Info{Version: Devel, Revision: "abc-dirty", GoVersion: "go1.26.0", FuncVersion: "v0.50.1"},
	}, {
		name: "modified but no revision",
		bi: &debug.BuildInfo{
			Settings: []debug.BuildSetting{{Key: "vcs.modified", Value: "true"}},
		},
		want: Info{Version: Devel, Revision: Unknown, GoVersion: "go1.0", FuncVersion: Unknown},
	}, {
		name:    "the func library replaced",
		version: "v0.1.0-rc.1",
		bi: &debug.BuildInfo{
			GoVersion: "go1.26.0",
			Deps: []*debug.Module{{Path: funcModule, Version: "v0.50.1",
				Replace: &debug.Module{Path: "github.com/fork/func", Version: "v0.50.2-fix"}}},
		},
		want: Info{Version: "v0.1.0-rc.1", Revision: Unknown, GoVersion: "go1.26.0", FuncVersion: "v0.50.2-fix"},
	}, {
		name:     "no revision recorded, one stamped (GOFLAGS=-buildvcs=false)",
		version:  "v1.2.3",
		revision: "abc-dirty",
		bi:       &debug.BuildInfo{GoVersion: "go1.26.0", Deps: []*debug.Module{funcDep}},
		want:     Info{Version: "v1.2.3", Revision: "abc-dirty", GoVersion: "go1.26.0", FuncVersion: "v0.50.1"},
	}, {
		name:     "the recorded revision wins over the stamped one",
		revision: "stamped",
		bi:       &debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "recorded"}}},
		want:     Info{Version: Devel, Revision: "recorded", GoVersion: "go1.0", FuncVersion: Unknown},
	}, {
		name:     "a stamp but no build information",
		revision: "stamped",
		want:     Info{Version: Devel, Revision: "stamped", GoVersion: "go1.0", FuncVersion: Unknown},
	}, {
		name: "the func library replaced by a directory",
		bi: &debug.BuildInfo{
			GoVersion: "go1.26.0",
			Deps: []*debug.Module{{Path: funcModule, Version: "v0.50.1",
				Replace: &debug.Module{Path: "../func"}}},
		},
		want: Info{Version: Devel, Revision: Unknown, GoVersion: "go1.26.0", FuncVersion: "v0.50.1"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := fromBuildInfo(tt.version, tt.revision, tt.bi, "go1.0")
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("fromBuildInfo (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGet reads this test binary's own build information: no version stamped, the Go
// version that runs it.
func TestGet(t *testing.T) {
	got := Get()
	if got.Version != Devel {
		t.Errorf("Version = %q, want %q (nothing stamped a test binary)", got.Version, Devel)
	}
	if got.GoVersion != runtime.Version() {
		t.Errorf("GoVersion = %q, want %q", got.GoVersion, runtime.Version())
	}
	if got.Revision == "" || got.FuncVersion == "" {
		t.Errorf("Get() = %+v: empty fields", got)
	}
}

func TestString(t *testing.T) {
	i := Info{Version: "v1.2.3", Revision: "abc", GoVersion: "go1.26.0", FuncVersion: "v0.50.1"}
	want := "func-operator v1.2.3\nrevision: abc\ngo: go1.26.0\nknative.dev/func: v0.50.1\n"
	if diff := cmp.Diff(want, i.String()); diff != "" {
		t.Errorf("String (-want +got):\n%s", diff)
	}
}

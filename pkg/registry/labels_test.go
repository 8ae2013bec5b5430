package registry

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const testRevision = "0b81f3c2d4e6a8b0c1d3e5f7a9b1c3d5e7f9a1b3"

// The revision label is read with the middleware label, and with the build info.
func TestInspectRevision(t *testing.T) {
	tr := newTestRegistry(t)
	fn, _ := goBinaries(t)
	tests := []struct {
		name   string
		labels map[string]string
		want   Middleware
	}{
		{name: "with the label", labels: map[string]string{LabelMiddlewareVersion: "v0.22.0", LabelRevision: testRevision},
			want: Middleware{Version: "v0.22.0", Source: SourceLabel, Revision: testRevision}},
		{name: "with the build info", labels: map[string]string{LabelRevision: " " + testRevision + "\n"},
			want: Middleware{Version: testFuncGoVersion, Source: SourceBuildInfo, Revision: testRevision}},
		{name: "sha256 object name", labels: map[string]string{LabelMiddlewareVersion: "v0.22.0", LabelRevision: strings.Repeat("ab", 32)},
			want: Middleware{Version: "v0.22.0", Source: SourceLabel, Revision: strings.Repeat("ab", 32)}},
		{name: "too long", labels: map[string]string{LabelMiddlewareVersion: "v0.22.0", LabelRevision: strings.Repeat("a", maxRevision+1)},
			want: Middleware{Version: "v0.22.0", Source: SourceLabel}},
		{name: "not one word", labels: map[string]string{LabelMiddlewareVersion: "v0.22.0", LabelRevision: "abc def"},
			want: Middleware{Version: "v0.22.0", Source: SourceLabel}},
		{name: "not ASCII", labels: map[string]string{LabelMiddlewareVersion: "v0.22.0", LabelRevision: "abcé"},
			want: Middleware{Version: "v0.22.0", Source: SourceLabel}},
		{name: "none", labels: map[string]string{LabelMiddlewareVersion: "v0.22.0"},
			want: Middleware{Version: "v0.22.0", Source: SourceLabel}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tag := "fn/rev:v" + string(rune('a'+i))
			d := tr.push(t, tag, image(t, "amd64", tt.labels, baseLayer(t), functionLayer(t, fn)))
			got := mustInspect(t, NewInspector(10), tr.ref(tag), nil)
			tt.want.Digest = d.String()
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// func's scaffold step labels "<unknown>" when it cannot tell the version, and an
// empty label when there is none (rust): the build info answers then.
func TestInspectNoVersionLabel(t *testing.T) {
	tr := newTestRegistry(t)
	fn, _ := goBinaries(t)
	for i, v := range []string{"<unknown>", "", "  "} {
		tag := "fn/nolabel:v" + string(rune('a'+i))
		d := tr.push(t, tag, image(t, "amd64", map[string]string{LabelMiddlewareVersion: v}, baseLayer(t), functionLayer(t, fn)))
		got := mustInspect(t, NewInspector(10), tr.ref(tag), nil)
		if diff := cmp.Diff(Middleware{Digest: d.String(), Version: testFuncGoVersion, Source: SourceBuildInfo}, got); diff != "" {
			t.Errorf("label %q (-want +got):\n%s", v, diff)
		}
	}
}

// A go function built by func v0.44.0 gives func-go v0.21.3 (testFuncGoVersion), read
// from its build info or from a label: what funclib's TestFuncGoOfV044IsOutdated
// finds outdated against what the linked func builds.
func TestInspectFuncGoOfV044(t *testing.T) {
	tr := newTestRegistry(t)
	fn, _ := goBinaries(t)
	images := map[string]map[string]string{
		"fn/v044:buildinfo": nil,
		"fn/v044:label":     {LabelMiddlewareVersion: testFuncGoVersion},
	}
	for tag, labels := range images {
		tr.push(t, tag, image(t, "amd64", labels, baseLayer(t), functionLayer(t, fn)))
		m := mustInspect(t, NewInspector(10), tr.ref(tag), nil)
		if m.Version != "v0.21.3" {
			t.Errorf("%s: version %q, want v0.21.3", tag, m.Version)
		}
	}
}

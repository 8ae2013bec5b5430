package funclib

import (
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	fn "knative.dev/func/pkg/functions"
)

func TestSourceMiddlewareFiles(t *testing.T) {
	want := map[string][]string{
		"go": nil, "rust": nil, "cobol": nil,
		"node": {"package.json"}, "typescript": {"package.json"},
		"python": {"requirements.txt"}, "quarkus": {"pom.xml"}, "springboot": {"pom.xml"},
	}
	for runtime, w := range want {
		if diff := cmp.Diff(w, SourceMiddlewareFiles(runtime)); diff != "" {
			t.Errorf("SourceMiddlewareFiles(%q) (-want +got):\n%s", runtime, diff)
		}
	}
}

// TestSourceMiddleware_Templates feeds every source-managed template's own file: the
// source of a freshly created function pins what the template pins.
func TestSourceMiddleware_Templates(t *testing.T) {
	for _, runtime := range []string{"node", "typescript", "python", "quarkus", "springboot"} {
		for _, invoke := range []string{"http", "cloudevent"} {
			pin, err := AvailableMiddleware(runtime, invoke)
			if err != nil {
				t.Fatal(err)
			}
			data, err := fs.ReadFile(fn.EmbeddedTemplatesFS, pin.Template)
			if err != nil {
				t.Fatalf("reading %s: %v", pin.Template, err)
			}
			name := SourceMiddlewareFiles(runtime)[0]
			got, err := SourceMiddleware(runtime, invoke, map[string][]byte{name: data})
			if err != nil {
				t.Fatalf("SourceMiddleware(%s, %s): %v", runtime, invoke, err)
			}
			if got != pin.Version {
				t.Errorf("SourceMiddleware(%s, %s) = %q, want the template's %q", runtime, invoke, got, pin.Version)
			}
		}
	}
}

func TestSourceMiddleware(t *testing.T) {
	pom := func(prop, v string) []byte {
		return []byte("<project><properties><" + prop + ">" + v + "</" + prop + "></properties></project>")
	}
	tests := []struct {
		name, runtime string
		files         map[string][]byte
		want          string
		wantErr       string // substring
		wantNoMW      bool
	}{
		{name: "node, older", runtime: "node", files: map[string][]byte{"package.json": []byte(`{"dependencies": {"faas-js-runtime": "^2.3.0"}}`)}, want: "^2.3.0"},
		{name: "quarkus, older", runtime: "quarkus", files: map[string][]byte{"pom.xml": pom("quarkus.platform.version", "3.10.0")}, want: "3.10.0"},
		{name: "springboot", runtime: "springboot", files: map[string][]byte{"pom.xml": pom("spring-cloud.version", "2023.0.3")}, want: "2023.0.3"},
		{name: "python, exact pin", runtime: "python", files: map[string][]byte{"requirements.txt": []byte("flask\nparliament-functions==0.0.9\n")}, want: "0.0.9"},
		{name: "missing file", runtime: "node", files: map[string][]byte{}, wantErr: "has no package.json"},
		{name: "garbage", runtime: "node", files: map[string][]byte{"package.json": []byte("{not json")}, wantErr: "reading faas-js-runtime from the function's package.json"},
		{name: "dependency absent", runtime: "node", files: map[string][]byte{"package.json": []byte(`{"dependencies": {"express": "4"}}`)}, wantErr: "faas-js-runtime"},
		{name: "property absent", runtime: "quarkus", files: map[string][]byte{"pom.xml": pom("other", "1")}, wantErr: "pom.xml"},
		{name: "go builds it in", runtime: "go", wantErr: "not in the function's source"},
		{name: "rust pins none", runtime: "rust", wantNoMW: true},
		{name: "unknown runtime", runtime: "cobol", wantErr: "unknown runtime"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SourceMiddleware(tt.runtime, "http", tt.files)
			switch {
			case tt.wantNoMW:
				if !errors.Is(err, ErrNoMiddleware) {
					t.Errorf("error = %v, want ErrNoMiddleware", err)
				}
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error = %v, want one containing %q", err, tt.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case got != tt.want:
				t.Errorf("SourceMiddleware = %q, want %q", got, tt.want)
			}
		})
	}
}

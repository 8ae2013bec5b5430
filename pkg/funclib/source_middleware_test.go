package funclib

import (
	"bytes"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	fn "knative.dev/func/pkg/functions"
)

// sourceManagedRuntimes are the runtimes whose func v0.44.0 templates pin the
// middleware in a file copied into the user's source.
var sourceManagedRuntimes = []string{"node", "typescript", "python", "quarkus", "springboot"}

func TestSourceMiddlewareFiles(t *testing.T) {
	tests := []struct {
		runtime string
		want    []string
	}{
		{runtime: "node", want: []string{"package.json"}},
		{runtime: "typescript", want: []string{"package.json"}},
		{runtime: "python", want: []string{"requirements.txt"}},
		{runtime: "quarkus", want: []string{"pom.xml"}},
		{runtime: "springboot", want: []string{"pom.xml"}},
		{runtime: "go", want: nil},
		{runtime: "rust", want: nil},
		{runtime: "cobol", want: nil},
		{runtime: "", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.runtime, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, SourceMiddlewareFiles(tt.runtime)); diff != "" {
				t.Errorf("SourceMiddlewareFiles(%q) (-want +got):\n%s", tt.runtime, diff)
			}
		})
	}
}

// Every source-managed pin is read from a file SourceMiddlewareFiles names, for
// every invoke: a caller fetching those files gives SourceMiddleware what it needs.
func TestSourceMiddlewareFilesCoverTemplates(t *testing.T) {
	for _, runtime := range knownRuntimes() {
		for invoke := range templateDirs {
			pin, err := AvailableMiddleware(runtime, invoke)
			if err != nil || !pin.SourceManaged {
				continue
			}
			name := pin.Template[strings.LastIndex(pin.Template, "/")+1:]
			files := SourceMiddlewareFiles(runtime)
			found := false
			for _, f := range files {
				found = found || f == name
			}
			if !found {
				t.Errorf("%s %s pins in %s, SourceMiddlewareFiles gives %q", runtime, invoke, pin.Template, files)
			}
		}
	}
}

// templateSource returns the file a function created from runtime's invoke template
// starts with: the template's own, read from the embedded templates.
func templateSource(t *testing.T, runtime, invoke string) (MiddlewarePin, string, []byte) {
	t.Helper()
	pin, err := AvailableMiddleware(runtime, invoke)
	if err != nil {
		t.Fatalf("AvailableMiddleware(%q, %q): %v", runtime, invoke, err)
	}
	data, err := fs.ReadFile(fn.EmbeddedTemplatesFS, pin.Template)
	if err != nil {
		t.Fatalf("reading %s: %v", pin.Template, err)
	}
	files := SourceMiddlewareFiles(runtime)
	if len(files) != 1 {
		t.Fatalf("SourceMiddlewareFiles(%q) = %q, want one file", runtime, files)
	}
	return pin, files[0], data
}

// A freshly created function pins what its template pins.
func TestSourceMiddleware_Templates(t *testing.T) {
	for _, runtime := range sourceManagedRuntimes {
		for _, invoke := range []string{"", "http", "cloudevent"} {
			t.Run(runtime+"/"+invoke, func(t *testing.T) {
				pin, name, data := templateSource(t, runtime, invoke)
				got, err := SourceMiddleware(runtime, invoke, map[string][]byte{name: data})
				if err != nil {
					t.Fatalf("SourceMiddleware(%q, %q) of %s: %v", runtime, invoke, pin.Template, err)
				}
				if diff := cmp.Diff(pin.Version, got); diff != "" {
					t.Errorf("SourceMiddleware(%q, %q) of %s (-want +got):\n%s", runtime, invoke, pin.Template, diff)
				}
			})
		}
	}
}

// The template's file, with the pin changed as a user (or an older func) would have
// it, gives the changed version.
func TestSourceMiddleware_ModifiedTemplates(t *testing.T) {
	// pinText is how each file writes a pin of version.
	pinText := map[string]func(version string) string{
		"node":       func(v string) string { return `"faas-js-runtime": "` + v + `"` },
		"typescript": func(v string) string { return `"faas-js-runtime": "` + v + `"` },
		"python":     func(v string) string { return "parliament-functions==" + v },
		"quarkus":    func(v string) string { return "<quarkus.platform.version>" + v + "</quarkus.platform.version>" },
		"springboot": func(v string) string { return "<spring-cloud.version>" + v + "</spring-cloud.version>" },
	}
	tests := []struct {
		runtime string
		written string // replaces the template's pin text
		want    string
	}{
		{runtime: "node", written: `"faas-js-runtime": "^2.3.0"`, want: "^2.3.0"},
		{runtime: "node", written: `"faas-js-runtime": "2.3.0"`, want: "2.3.0"},
		{runtime: "node", written: `"faas-js-runtime": " ~2.4.1 "`, want: "~2.4.1"},
		{runtime: "typescript", written: `"faas-js-runtime": "^2.3.0"`, want: "^2.3.0"},
		{runtime: "python", written: "parliament-functions==0.0.9", want: "0.0.9"},
		{runtime: "python", written: "parliament-functions>=0.1.0", want: ">=0.1.0"},
		{runtime: "python", written: "parliament-functions ~= 0.0.9  # pinned by hand", want: "~=0.0.9"},
		{runtime: "python", written: "Parliament_Functions===0.0.9", want: "0.0.9"},
		{runtime: "quarkus", written: "<quarkus.platform.version>3.10.0</quarkus.platform.version>", want: "3.10.0"},
		{runtime: "quarkus", written: "<quarkus.platform.version>\n  3.10.0\n</quarkus.platform.version>", want: "3.10.0"},
		{runtime: "springboot", written: "<spring-cloud.version>2023.0.3</spring-cloud.version>", want: "2023.0.3"},
	}
	for _, tt := range tests {
		for _, invoke := range []string{"http", "cloudevent"} {
			t.Run(tt.runtime+"/"+invoke+"/"+tt.want, func(t *testing.T) {
				pin, name, data := templateSource(t, tt.runtime, invoke)
				old := []byte(pinText[tt.runtime](pin.Version))
				if !bytes.Contains(data, old) {
					t.Fatalf("%s does not contain %q", pin.Template, old)
				}
				data = bytes.Replace(data, old, []byte(tt.written), 1)
				got, err := SourceMiddleware(tt.runtime, invoke, map[string][]byte{name: data})
				if err != nil {
					t.Fatalf("SourceMiddleware(%q, %q) with %q: %v", tt.runtime, invoke, tt.written, err)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("SourceMiddleware(%q, %q) with %q (-want +got):\n%s", tt.runtime, invoke, tt.written, diff)
				}
			})
		}
	}
}

func TestSourceMiddleware_Errors(t *testing.T) {
	pom := func(props string) []byte {
		return []byte("<project><properties>" + props + "</properties></project>")
	}
	long := "parliament-functions[" + strings.Repeat("x", 500)
	tests := []struct {
		name, runtime, invoke string
		files                 map[string][]byte
		wantInErr             []string
		wantNotInErr          []string
		wantNoMW              bool
	}{
		// Missing file.
		{name: "node, no files", runtime: "node", files: nil, wantInErr: []string{"no package.json", "faas-js-runtime"}},
		{name: "typescript, other files only", runtime: "typescript", invoke: "cloudevent", files: map[string][]byte{"pom.xml": pom("")}, wantInErr: []string{"no package.json"}},
		{name: "python, no requirements.txt", runtime: "python", files: map[string][]byte{}, wantInErr: []string{"no requirements.txt", "parliament-functions"}},
		{name: "quarkus, no pom.xml", runtime: "quarkus", files: map[string][]byte{"package.json": []byte("{}")}, wantInErr: []string{"no pom.xml", "io.quarkus.platform"}},
		{name: "springboot, no pom.xml", runtime: "springboot", wantInErr: []string{"no pom.xml", "spring-cloud"}},
		// Unparsable.
		{name: "node, garbage", runtime: "node", files: map[string][]byte{"package.json": []byte("{not json, secret-ish content")}, wantInErr: []string{"package.json", "faas-js-runtime"}, wantNotInErr: []string{"secret-ish"}},
		{name: "node, empty", runtime: "node", files: map[string][]byte{"package.json": nil}, wantInErr: []string{"package.json", "unexpected end of JSON input"}},
		{name: "node, dependencies not an object", runtime: "node", files: map[string][]byte{"package.json": []byte(`{"dependencies": ["faas-js-runtime"]}`)}, wantInErr: []string{"package.json"}},
		{name: "quarkus, garbage", runtime: "quarkus", files: map[string][]byte{"pom.xml": []byte("<project><properties>")}, wantInErr: []string{"pom.xml", "EOF"}},
		{name: "springboot, not XML", runtime: "springboot", files: map[string][]byte{"pom.xml": []byte("plugins { id 'java' }")}, wantInErr: []string{"pom.xml"}},
		{name: "python, long malformed line is cut", runtime: "python", files: map[string][]byte{"requirements.txt": []byte(long)}, wantInErr: []string{"requirements.txt", "malformed requirement", "..."}, wantNotInErr: []string{strings.Repeat("x", maxExcerpt+1)}},
		// Dependency or property absent, or unusable.
		{name: "node, dependency absent", runtime: "node", files: map[string][]byte{"package.json": []byte(`{"dependencies": {"express": "^4"}}`)}, wantInErr: []string{"package.json", "no dependency on faas-js-runtime"}},
		// The templates list faas-js-runtime under dependencies only.
		{name: "node, devDependencies only", runtime: "node", files: map[string][]byte{"package.json": []byte(`{"devDependencies": {"faas-js-runtime": "^2.3.0"}}`)}, wantInErr: []string{"package.json", "no dependency on faas-js-runtime"}},
		{name: "node, empty range", runtime: "node", files: map[string][]byte{"package.json": []byte(`{"dependencies": {"faas-js-runtime": ""}}`)}, wantInErr: []string{"package.json", "faas-js-runtime"}},
		{name: "quarkus, property absent", runtime: "quarkus", files: map[string][]byte{"pom.xml": pom("<spring-cloud.version>2024.0.0</spring-cloud.version>")}, wantInErr: []string{"pom.xml", "no property quarkus.platform.version"}},
		{name: "springboot, property absent", runtime: "springboot", invoke: "cloudevent", files: map[string][]byte{"pom.xml": pom("<quarkus.platform.version>3.17.8</quarkus.platform.version>")}, wantInErr: []string{"pom.xml", "no property spring-cloud.version"}},
		{name: "quarkus, property a reference", runtime: "quarkus", files: map[string][]byte{"pom.xml": pom("<quarkus.platform.version>${quarkus.version}</quarkus.platform.version>")}, wantInErr: []string{"pom.xml", "quarkus.platform.version", "${quarkus.version}", "reference"}},
		{name: "springboot, property empty", runtime: "springboot", files: map[string][]byte{"pom.xml": pom("<spring-cloud.version> </spring-cloud.version>")}, wantInErr: []string{"pom.xml", "spring-cloud.version", "empty"}},
		{name: "python, requirement absent", runtime: "python", files: map[string][]byte{"requirements.txt": []byte("flask==3.0.0\n# parliament-functions==0.1.0\n")}, wantInErr: []string{"requirements.txt", "no requirement on parliament-functions"}},
		{name: "python, no version", runtime: "python", files: map[string][]byte{"requirements.txt": []byte("parliament-functions\n")}, wantInErr: []string{"requirements.txt", "without a version"}},
		{name: "python, two specifiers", runtime: "python", files: map[string][]byte{"requirements.txt": []byte("parliament-functions>=0.0.9,<0.2\n")}, wantInErr: []string{"requirements.txt", "more than one version specifier"}},
		// Runtimes without middleware in the source.
		{name: "go", runtime: "go", wantInErr: []string{"go functions", "knative.dev/func-go", "not pin", "build"}},
		{name: "go, with files", runtime: "go", invoke: "cloudevent", files: map[string][]byte{"go.mod": []byte("module f\n")}, wantInErr: []string{"go functions", "not pin"}},
		{name: "rust", runtime: "rust", wantNoMW: true, wantInErr: []string{"rust"}},
		{name: "rust cloudevent", runtime: "rust", invoke: "cloudevent", wantNoMW: true},
		// Unknown input.
		{name: "unknown runtime", runtime: "cobol", wantInErr: []string{"unknown runtime", `"cobol"`}},
		{name: "empty runtime", runtime: "", wantInErr: []string{"unknown runtime"}},
		{name: "unknown invoke", runtime: "node", invoke: "cloudevents", files: map[string][]byte{"package.json": []byte(`{"dependencies": {"faas-js-runtime": "^2.3.0"}}`)}, wantInErr: []string{"unknown invoke", `"cloudevents"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SourceMiddleware(tt.runtime, tt.invoke, tt.files)
			if err == nil {
				t.Fatalf("SourceMiddleware(%q, %q) = %q, want an error", tt.runtime, tt.invoke, got)
			}
			if diff := cmp.Diff("", got); diff != "" {
				t.Errorf("version with error (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantNoMW, errors.Is(err, ErrNoMiddleware)); diff != "" {
				t.Errorf("errors.Is(%q, ErrNoMiddleware) (-want +got):\n%s", err, diff)
			}
			for _, s := range tt.wantInErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
			for _, s := range tt.wantNotInErr {
				if strings.Contains(err.Error(), s) {
					t.Errorf("error %q contains %q", err, s)
				}
			}
		})
	}
}

func TestExcerpt(t *testing.T) {
	tests := []struct{ in, want string }{
		{in: "", want: ""},
		{in: "short", want: "short"},
		{in: strings.Repeat("a", maxExcerpt), want: strings.Repeat("a", maxExcerpt)},
		{in: strings.Repeat("a", maxExcerpt+1), want: strings.Repeat("a", maxExcerpt) + "..."},
		// Not cut inside a rune: "é" is two bytes, the cut falls in the middle.
		{in: strings.Repeat("a", maxExcerpt-1) + "éé", want: strings.Repeat("a", maxExcerpt-1) + "..."},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, excerpt(tt.in)); diff != "" {
			t.Errorf("excerpt(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

package funclib

import (
	"bytes"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	fn "knative.dev/func/pkg/functions"

	"github.com/fnops/func-operator/pkg/middleware"
)

// sourceManagedRuntimes are the runtimes whose middleware the linked func pins in a
// file of the function's own source: read from the pins, checked against what
// func v0.50.1 does (every runtime but the scaffolded go and python, and rust).
func sourceManagedRuntimes(t *testing.T) []string {
	t.Helper()
	var rs []string
	for _, r := range knownRuntimes() {
		if pin, err := AvailableMiddleware(r, "http"); err == nil && pin.SourceManaged {
			rs = append(rs, r)
		}
	}
	if version() == measuredFunc {
		if diff := cmp.Diff([]string{"node", "quarkus", "springboot", "typescript"}, rs); diff != "" {
			t.Errorf("source-managed runtimes of func %s (-want +got):\n%s", version(), diff)
		}
	}
	return rs
}

func TestSourceMiddlewareFiles(t *testing.T) {
	tests := []struct {
		runtime string
		want    []string
	}{
		{runtime: "node", want: []string{"package.json"}},
		{runtime: "typescript", want: []string{"package.json"}},
		{runtime: "quarkus", want: []string{"pom.xml"}},
		{runtime: "springboot", want: []string{"pom.xml"}},
		// Scaffolded: a rebuild decides the middleware, the image tells it.
		{runtime: "go", want: nil},
		{runtime: "python", want: nil},
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

// A freshly created function pins what func reports for its template (as written
// there: "^3.0.2" where func reports 3.0.2), and compares up to date.
func TestSourceMiddleware_Templates(t *testing.T) {
	for _, runtime := range sourceManagedRuntimes(t) {
		for _, invoke := range []string{"", "http", "cloudevent"} {
			t.Run(runtime+"/"+invoke, func(t *testing.T) {
				pin, name, data := templateSource(t, runtime, invoke)
				got, err := SourceMiddleware(runtime, invoke, map[string][]byte{name: data})
				if err != nil {
					t.Fatalf("SourceMiddleware(%q, %q) of %s: %v", runtime, invoke, pin.Template, err)
				}
				if !strings.Contains(got, pin.Version) {
					t.Errorf("SourceMiddleware(%q, %q) of %s = %q, func reports %q", runtime, invoke, pin.Template, got, pin.Version)
				}
				if c, err := middleware.Compare(got, pin.Version); err != nil || c != middleware.UpToDate {
					t.Errorf("Compare(%q, %q) = %s, %v; want UpToDate", got, pin.Version, c, err)
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
		"quarkus":    func(v string) string { return "<quarkus.platform.version>" + v + "</quarkus.platform.version>" },
		"springboot": func(v string) string { return "<spring-cloud.version>" + v + "</spring-cloud.version>" },
	}
	tests := []struct {
		runtime  string
		written  string // replaces the template's pin text
		want     string
		outdated bool // against what the linked func builds
	}{
		// func v0.44.0's template pins.
		{runtime: "node", written: `"faas-js-runtime": "^2.4.0"`, want: "^2.4.0", outdated: true},
		{runtime: "node", written: `"faas-js-runtime": "2.3.0"`, want: "2.3.0", outdated: true},
		{runtime: "node", written: `"faas-js-runtime": " ~2.4.1 "`, want: "~2.4.1", outdated: true},
		{runtime: "node", written: `"faas-js-runtime": "^99.0.0"`, want: "^99.0.0"},
		{runtime: "typescript", written: `"faas-js-runtime": "2.4.0"`, want: "2.4.0", outdated: true},
		{runtime: "quarkus", written: "<quarkus.platform.version>3.17.8</quarkus.platform.version>", want: "3.17.8", outdated: true},
		{runtime: "quarkus", written: "<quarkus.platform.version>\n  3.10.0\n</quarkus.platform.version>", want: "3.10.0", outdated: true},
		{runtime: "springboot", written: "<spring-cloud.version>2024.0.0</spring-cloud.version>", want: "2024.0.0", outdated: true},
	}
	for _, tt := range tests {
		for _, invoke := range []string{"http", "cloudevent"} {
			t.Run(tt.runtime+"/"+invoke+"/"+tt.want, func(t *testing.T) {
				pin, name, data := templateSource(t, tt.runtime, invoke)
				asWritten, err := SourceMiddleware(tt.runtime, invoke, map[string][]byte{name: data})
				if err != nil {
					t.Fatal(err)
				}
				old := []byte(pinText[tt.runtime](asWritten))
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
				c, err := middleware.Compare(got, pin.Version)
				if err != nil || (c == middleware.Outdated) != tt.outdated {
					t.Errorf("Compare(%q, %q) = %s, %v; want outdated %v", got, pin.Version, c, err, tt.outdated)
				}
			})
		}
	}
}

// pythonTemplate returns the files a python function created by the linked func
// starts with, from the module source (the embedded templates hold the same).
func pythonTemplate(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	for _, name := range []string{pyprojectFile, requirementsFile, procfileFile, "function/func.py"} {
		data, err := fs.ReadFile(fn.EmbeddedTemplatesFS, "python/"+dir+"/"+name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		files[name] = data
	}
	if _, ok := files[pyprojectFile]; !ok {
		t.Fatalf("python/%s has no %s", dir, pyprojectFile)
	}
	return files
}

// A python function of the current layout pins no middleware: func's scaffolding
// brings func-python. A func-python requirement the function adds itself is read.
func TestSourceMiddleware_Python(t *testing.T) {
	for invoke, dir := range templateDirs {
		t.Run(invoke, func(t *testing.T) {
			pin, err := AvailableMiddleware("python", invoke)
			if err != nil {
				t.Fatal(err)
			}
			if pin.SourceManaged || pin.Module != "func-python" {
				t.Fatalf("python pin %+v", pin)
			}
			files := pythonTemplate(t, dir)
			_, err = SourceMiddleware("python", invoke, files)
			if err == nil || errors.Is(err, ErrLegacyMiddleware) {
				t.Fatalf("SourceMiddleware of the python %s template: %v, want an error", dir, err)
			}
			for _, s := range []string{"python functions do not pin", "func-python", "scaffolding brings " + pin.Version} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}

			pyproject := string(files[pyprojectFile])
			withDep := strings.Replace(pyproject, `"httpx",`, `"httpx", "func-python==0.7.0",`, 1)
			if withDep == pyproject {
				t.Fatalf("python/%s/%s has no httpx dependency to add func-python after:\n%s", dir, pyprojectFile, pyproject)
			}
			for _, tt := range []struct {
				name    string
				files   map[string][]byte
				want    string
				wantErr string
			}{
				{name: "pyproject.toml", files: map[string][]byte{pyprojectFile: []byte(withDep)}, want: "0.7.0"},
				{name: "requirements.txt", files: map[string][]byte{pyprojectFile: files[pyprojectFile], requirementsFile: []byte("func-python>=0.8\n")}, want: ">=0.8"},
				{name: "pyproject.toml first", files: map[string][]byte{pyprojectFile: []byte(withDep), requirementsFile: []byte("func-python>=0.8\n")}, want: "0.7.0"},
				{name: "requirements.txt only", files: map[string][]byte{requirementsFile: []byte("func-python==0.8.1\n")}, want: "0.8.1"},
				{name: "malformed pyproject.toml", files: map[string][]byte{pyprojectFile: []byte("[project\n")}, wantErr: "function's pyproject.toml: not valid TOML"},
				{name: "unversioned", files: map[string][]byte{requirementsFile: []byte("func-python\n")}, wantErr: "function's requirements.txt: func-python is required without a version"},
			} {
				t.Run(tt.name, func(t *testing.T) {
					got, err := SourceMiddleware("python", invoke, tt.files)
					checkReadErr(t, err, tt.wantErr)
					if diff := cmp.Diff(tt.want, got); diff != "" {
						t.Errorf("(-want +got):\n%s", diff)
					}
				})
			}
		})
	}
}

// parliamentSources are the files of a parliament function in the layout func
// v0.44.0's python templates created (a Procfile running parliament, requirements.txt
// pinning parliament-functions, func.py importing it), by template directory.
var parliamentSources = map[string]map[string]string{
	"http": {
		procfileFile:     "web: python -m parliament .\n",
		requirementsFile: "parliament-functions==0.1.0\n",
		"func.py":        "from parliament import Context\n\n\ndef main(context: Context):\n    return \"ok\", 200\n",
	},
	"cloudevents": {
		procfileFile:     "web: python -m parliament .\n",
		requirementsFile: "parliament-functions==0.1.0\n",
		"func.py":        "from parliament import Context, event\n\n\n@event\ndef main(context: Context):\n    return {}\n",
	},
}

// A parliament function, as func v0.44.0's python templates created it, is
// recognised: *LegacyMiddlewareError, with the version its requirements.txt pins.
func TestSourceMiddleware_Parliament(t *testing.T) {
	for invoke, dir := range templateDirs {
		t.Run(invoke, func(t *testing.T) {
			pin, err := AvailableMiddleware("python", invoke)
			if err != nil {
				t.Fatal(err)
			}
			files := map[string][]byte{}
			for name, data := range parliamentSources[dir] {
				files[name] = []byte(data)
			}
			if len(files) != 3 {
				t.Fatalf("no parliament sources for %s", dir)
			}
			v, err := SourceMiddleware("python", invoke, files)
			if v != "" {
				t.Errorf("version %q with a legacy function, want none", v)
			}
			if !errors.Is(err, ErrLegacyMiddleware) {
				t.Fatalf("error %v, want ErrLegacyMiddleware", err)
			}
			var legacy *LegacyMiddlewareError
			if !errors.As(err, &legacy) {
				t.Fatalf("error %T is no *LegacyMiddlewareError", err)
			}
			want := &LegacyMiddlewareError{Module: "parliament-functions", Version: "0.1.0", File: procfileFile, Pin: pin}
			if diff := cmp.Diff(want, legacy); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			for _, s := range []string{"legacy parliament function", "parliament-functions 0.1.0", "rebuild keeps", "outdated against func-python " + pin.Version, "another module", "migrating"} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
		})
	}
}

// How a parliament function is told from one of the current layout: func's rule
// (Procfile, .py import), and requirements.txt without pyproject.toml.
func TestSourceMiddleware_ParliamentSignals(t *testing.T) {
	pyproject := []byte("[project]\nname = \"function\"\ndependencies = [\"httpx\"]\n")
	tests := []struct {
		name        string
		files       map[string][]byte
		wantFile    string // "" means not legacy
		wantVersion string
	}{
		{name: "Procfile", files: map[string][]byte{procfileFile: []byte("web: python3.11 -m parliament .\n")}, wantFile: procfileFile},
		{name: "Procfile, version from requirements.txt", files: map[string][]byte{procfileFile: []byte("web: python -m parliament .\n"), requirementsFile: []byte("parliament-functions==0.0.9\n")}, wantFile: procfileFile, wantVersion: "0.0.9"},
		{name: "import", files: map[string][]byte{"main.py": []byte("import os\nfrom parliament import Context\n")}, wantFile: "main.py"},
		{name: "requirements.txt alone", files: map[string][]byte{requirementsFile: []byte("parliament-functions>=0.1.0\n")}, wantFile: requirementsFile, wantVersion: ">=0.1.0"},
		{name: "requirements.txt, unusable version", files: map[string][]byte{requirementsFile: []byte("parliament-functions>=0.1,<0.2\n")}, wantFile: requirementsFile},
		// func scaffolds this one: it is of the current layout.
		{name: "requirements.txt with pyproject.toml", files: map[string][]byte{requirementsFile: []byte("parliament-functions==0.1.0\n"), pyprojectFile: pyproject}},
		{name: "other Procfile", files: map[string][]byte{procfileFile: []byte("web: gunicorn app:app\n"), pyprojectFile: pyproject}},
		{name: "other import", files: map[string][]byte{"func.py": []byte("import parliamentarian\n# from parliament import x\n"), pyprojectFile: pyproject}},
		{name: "import in a subdirectory", files: map[string][]byte{"function/func.py": []byte("from parliament import Context\n"), pyprojectFile: pyproject}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := SourceMiddleware("python", "http", tt.files)
			var legacy *LegacyMiddlewareError
			isLegacy := errors.As(err, &legacy)
			if isLegacy != (tt.wantFile != "") {
				t.Fatalf("error %v, legacy %v; want legacy %v", err, isLegacy, tt.wantFile != "")
			}
			if !isLegacy {
				return
			}
			if legacy.File != tt.wantFile || legacy.Version != tt.wantVersion {
				t.Errorf("got file %q version %q, want %q %q", legacy.File, legacy.Version, tt.wantFile, tt.wantVersion)
			}
		})
	}
}

func TestSourceMiddleware_Errors(t *testing.T) {
	pom := func(props string) []byte {
		return []byte("<project><properties>" + props + "</properties></project>")
	}
	long := "func-python[" + strings.Repeat("x", 500)
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
		{name: "quarkus, no pom.xml", runtime: "quarkus", files: map[string][]byte{"package.json": []byte("{}")}, wantInErr: []string{"no pom.xml", "io.quarkus.platform"}},
		{name: "springboot, no pom.xml", runtime: "springboot", wantInErr: []string{"no pom.xml", "spring-cloud"}},
		// Unparsable.
		{name: "node, garbage", runtime: "node", files: map[string][]byte{"package.json": []byte("{not json, secret-ish content")}, wantInErr: []string{"package.json", "faas-js-runtime"}, wantNotInErr: []string{"secret-ish"}},
		{name: "node, empty", runtime: "node", files: map[string][]byte{"package.json": nil}, wantInErr: []string{"package.json", "unexpected end of JSON input"}},
		{name: "node, dependencies not an object", runtime: "node", files: map[string][]byte{"package.json": []byte(`{"dependencies": ["faas-js-runtime"]}`)}, wantInErr: []string{"package.json"}},
		{name: "quarkus, garbage", runtime: "quarkus", files: map[string][]byte{"pom.xml": []byte("<project><properties>")}, wantInErr: []string{"pom.xml", "EOF"}},
		{name: "springboot, not XML", runtime: "springboot", files: map[string][]byte{"pom.xml": []byte("plugins { id 'java' }")}, wantInErr: []string{"pom.xml"}},
		{name: "python, long malformed line is cut", runtime: "python", files: map[string][]byte{"requirements.txt": []byte(long)}, wantInErr: []string{"requirements.txt", "malformed requirement", "..."}, wantNotInErr: []string{strings.Repeat("x", maxExcerpt+1)}},
		{name: "python, pyproject.toml not TOML", runtime: "python", files: map[string][]byte{"pyproject.toml": []byte("[project]\ndependencies = [\"secret-ish\"\n")}, wantInErr: []string{"pyproject.toml", "not valid TOML"}, wantNotInErr: []string{"secret-ish"}},
		// Dependency or property absent, or unusable.
		{name: "node, dependency absent", runtime: "node", files: map[string][]byte{"package.json": []byte(`{"dependencies": {"express": "^4"}}`)}, wantInErr: []string{"package.json", "no dependency on faas-js-runtime"}},
		// The templates list faas-js-runtime under dependencies only.
		{name: "node, devDependencies only", runtime: "node", files: map[string][]byte{"package.json": []byte(`{"devDependencies": {"faas-js-runtime": "^2.3.0"}}`)}, wantInErr: []string{"package.json", "no dependency on faas-js-runtime"}},
		{name: "node, empty range", runtime: "node", files: map[string][]byte{"package.json": []byte(`{"dependencies": {"faas-js-runtime": ""}}`)}, wantInErr: []string{"package.json", "faas-js-runtime"}},
		{name: "quarkus, property absent", runtime: "quarkus", files: map[string][]byte{"pom.xml": pom("<spring-cloud.version>2024.0.0</spring-cloud.version>")}, wantInErr: []string{"pom.xml", "no property quarkus.platform.version"}},
		{name: "springboot, property absent", runtime: "springboot", invoke: "cloudevent", files: map[string][]byte{"pom.xml": pom("<quarkus.platform.version>3.17.8</quarkus.platform.version>")}, wantInErr: []string{"pom.xml", "no property spring-cloud.version"}},
		{name: "quarkus, property a reference", runtime: "quarkus", files: map[string][]byte{"pom.xml": pom("<quarkus.platform.version>${quarkus.version}</quarkus.platform.version>")}, wantInErr: []string{"pom.xml", "quarkus.platform.version", "${quarkus.version}", "reference"}},
		{name: "springboot, property empty", runtime: "springboot", files: map[string][]byte{"pom.xml": pom("<spring-cloud.version> </spring-cloud.version>")}, wantInErr: []string{"pom.xml", "spring-cloud.version", "empty"}},
		{name: "python, two specifiers", runtime: "python", files: map[string][]byte{"requirements.txt": []byte("func-python>=0.7,<0.9\n")}, wantInErr: []string{"requirements.txt", "more than one version specifier"}},
		// Runtimes without middleware in the source.
		{name: "go", runtime: "go", wantInErr: []string{"go functions", "knative.dev/func-go", "not pin", "build"}},
		{name: "go, with files", runtime: "go", invoke: "cloudevent", files: map[string][]byte{"go.mod": []byte("module f\n")}, wantInErr: []string{"go functions", "not pin"}},
		{name: "python, no files", runtime: "python", wantInErr: []string{"python functions", "func-python", "not pin", "build"}},
		{name: "python, requirement absent", runtime: "python", files: map[string][]byte{"requirements.txt": []byte("flask==3.0.0\n# func-python==0.8.1\n"), "pyproject.toml": []byte("[project]\n")}, wantInErr: []string{"python functions", "not pin"}},
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
			if errors.Is(err, ErrLegacyMiddleware) {
				t.Errorf("error %q is ErrLegacyMiddleware", err)
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

// TestAllSourceMiddlewareFiles: every file a runtime's source pins its middleware in
// is among those a reader of a whole commit keeps.
func TestAllSourceMiddlewareFiles(t *testing.T) {
	all := map[string]bool{}
	for _, name := range AllSourceMiddlewareFiles() {
		all[name] = true
	}
	for _, runtime := range knownRuntimes() {
		for _, name := range SourceMiddlewareFiles(runtime) {
			if !all[name] {
				t.Errorf("%s of runtime %s is not in AllSourceMiddlewareFiles() = %v", name, runtime, AllSourceMiddlewareFiles())
			}
		}
	}
	if diff := cmp.Diff([]string{"package.json", "pom.xml"}, AllSourceMiddlewareFiles()); diff != "" {
		t.Errorf("AllSourceMiddlewareFiles() (-want +got):\n%s", diff)
	}
}

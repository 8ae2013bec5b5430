package funclib

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	fn "knative.dev/func/pkg/functions"
)

// The expected pins below are those of func v0.44.0, as its templates read. A func
// bump is expected to fail TestAvailableMiddleware until they are updated: that is
// the test telling what the bump changes.
func TestAvailableMiddleware(t *testing.T) {
	const pinsOf = "v0.44.0"
	tests := []struct {
		runtime, invoke string
		want            MiddlewarePin
		wantNoMW        bool
	}{
		{runtime: "go", invoke: "", want: MiddlewarePin{Runtime: "go", Invoke: "http", Module: "knative.dev/func-go", Version: "v0.21.3", Template: "go/scaffolding/instanced-http/go.mod"}},
		{runtime: "go", invoke: "http", want: MiddlewarePin{Runtime: "go", Invoke: "http", Module: "knative.dev/func-go", Version: "v0.21.3", Template: "go/scaffolding/instanced-http/go.mod"}},
		{runtime: "go", invoke: "cloudevent", want: MiddlewarePin{Runtime: "go", Invoke: "cloudevent", Module: "knative.dev/func-go", Version: "v0.21.3", Template: "go/scaffolding/instanced-cloudevents/go.mod"}},
		{runtime: "node", invoke: "", want: MiddlewarePin{Runtime: "node", Invoke: "http", Module: "faas-js-runtime", Version: "^2.4.0", SourceManaged: true, Template: "node/http/package.json"}},
		{runtime: "node", invoke: "http", want: MiddlewarePin{Runtime: "node", Invoke: "http", Module: "faas-js-runtime", Version: "^2.4.0", SourceManaged: true, Template: "node/http/package.json"}},
		{runtime: "node", invoke: "cloudevent", want: MiddlewarePin{Runtime: "node", Invoke: "cloudevent", Module: "faas-js-runtime", Version: "^2.4.0", SourceManaged: true, Template: "node/cloudevents/package.json"}},
		{runtime: "typescript", invoke: "http", want: MiddlewarePin{Runtime: "typescript", Invoke: "http", Module: "faas-js-runtime", Version: "^2.4.0", SourceManaged: true, Template: "typescript/http/package.json"}},
		// Exact, not a range, in this one template.
		{runtime: "typescript", invoke: "cloudevent", want: MiddlewarePin{Runtime: "typescript", Invoke: "cloudevent", Module: "faas-js-runtime", Version: "2.4.0", SourceManaged: true, Template: "typescript/cloudevents/package.json"}},
		// requirements.txt pins parliament-functions==0.1.0.
		{runtime: "python", invoke: "http", want: MiddlewarePin{Runtime: "python", Invoke: "http", Module: "parliament-functions", Version: "0.1.0", SourceManaged: true, Template: "python/http/requirements.txt"}},
		{runtime: "python", invoke: "cloudevent", want: MiddlewarePin{Runtime: "python", Invoke: "cloudevent", Module: "parliament-functions", Version: "0.1.0", SourceManaged: true, Template: "python/cloudevents/requirements.txt"}},
		{runtime: "quarkus", invoke: "http", want: MiddlewarePin{Runtime: "quarkus", Invoke: "http", Module: "io.quarkus.platform", Version: "3.17.8", SourceManaged: true, Template: "quarkus/http/pom.xml"}},
		{runtime: "quarkus", invoke: "cloudevent", want: MiddlewarePin{Runtime: "quarkus", Invoke: "cloudevent", Module: "io.quarkus.platform", Version: "3.17.8", SourceManaged: true, Template: "quarkus/cloudevents/pom.xml"}},
		{runtime: "springboot", invoke: "http", want: MiddlewarePin{Runtime: "springboot", Invoke: "http", Module: "spring-cloud", Version: "2024.0.0", SourceManaged: true, Template: "springboot/http/pom.xml"}},
		{runtime: "springboot", invoke: "cloudevent", want: MiddlewarePin{Runtime: "springboot", Invoke: "cloudevent", Module: "spring-cloud", Version: "2024.0.0", SourceManaged: true, Template: "springboot/cloudevents/pom.xml"}},
		// The rust templates depend on actix-web and cloudevents-sdk directly: no
		// func middleware.
		{runtime: "rust", invoke: "http", wantNoMW: true},
		{runtime: "rust", invoke: "cloudevent", wantNoMW: true},
	}
	for _, tt := range tests {
		t.Run(tt.runtime+"/"+tt.invoke, func(t *testing.T) {
			got, err := AvailableMiddleware(tt.runtime, tt.invoke)
			if tt.wantNoMW {
				if !errors.Is(err, ErrNoMiddleware) {
					t.Fatalf("AvailableMiddleware(%q, %q) error = %v, want ErrNoMiddleware", tt.runtime, tt.invoke, err)
				}
				if !strings.Contains(err.Error(), tt.runtime) {
					t.Errorf("error %q does not name runtime %q", err, tt.runtime)
				}
				return
			}
			if err != nil {
				t.Fatalf("AvailableMiddleware(%q, %q): %v", tt.runtime, tt.invoke, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("AvailableMiddleware(%q, %q) with func %s, expected pins of func %s (-want +got):\n%s", tt.runtime, tt.invoke, version(), pinsOf, diff)
			}
		})
	}
}

func TestAvailableMiddlewareUnknown(t *testing.T) {
	tests := []struct {
		name, runtime, invoke string
		wantInErr             []string
	}{
		{name: "unknown runtime", runtime: "cobol", invoke: "http", wantInErr: []string{"unknown runtime", `"cobol"`}},
		{name: "empty runtime", runtime: "", invoke: "http", wantInErr: []string{"unknown runtime", `""`}},
		{name: "runtime is case sensitive", runtime: "Go", invoke: "http", wantInErr: []string{"unknown runtime", `"Go"`}},
		{name: "unknown runtime before invoke", runtime: "cobol", invoke: "grpc", wantInErr: []string{"unknown runtime", `"cobol"`}},
		{name: "unknown invoke", runtime: "go", invoke: "grpc", wantInErr: []string{"unknown invoke", `"grpc"`, `"go"`}},
		// func.yaml spells the invoke hint singular; the directory name is no invoke.
		{name: "plural invoke", runtime: "node", invoke: "cloudevents", wantInErr: []string{"unknown invoke", `"cloudevents"`}},
		{name: "unknown invoke, no-middleware runtime", runtime: "rust", invoke: "grpc", wantInErr: []string{"unknown invoke", `"grpc"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := AvailableMiddleware(tt.runtime, tt.invoke)
			if err == nil {
				t.Fatalf("AvailableMiddleware(%q, %q) = %+v, want an error", tt.runtime, tt.invoke, got)
			}
			if errors.Is(err, ErrNoMiddleware) {
				t.Errorf("error %q is ErrNoMiddleware, want an unknown-input error", err)
			}
			for _, s := range tt.wantInErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %s", err, s)
				}
			}
			if diff := cmp.Diff(MiddlewarePin{}, got); diff != "" {
				t.Errorf("pin with error (-want +got):\n%s", diff)
			}
		})
	}
}

// Go builds use the instanced scaffolding when the function has New() and the static
// one otherwise; AvailableMiddleware reads instanced-* only, which is right as long
// as both pin the same func-go.
func TestGoStaticScaffoldingPinsSameFuncGo(t *testing.T) {
	for invoke, dir := range templateDirs {
		t.Run(invoke, func(t *testing.T) {
			instanced, err := AvailableMiddleware("go", invoke)
			if err != nil {
				t.Fatal(err)
			}
			path := "go/scaffolding/static-" + dir + "/go.mod"
			data, err := fs.ReadFile(fn.EmbeddedTemplatesFS, path)
			if err != nil {
				t.Fatal(err)
			}
			static, err := goModRequire(data, "knative.dev/func-go")
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if diff := cmp.Diff(instanced.Version, static); diff != "" {
				t.Errorf("func-go of %s vs %s (-want +got):\n%s", instanced.Template, path, diff)
			}
		})
	}
}

// The Go scaffolding is not in the module's source on disk (module zips leave out
// directories with their own go.mod), so the go pin is checked against the embedded
// file itself, with a plain text match instead of the modfile parser.
func TestGoPinMatchesEmbeddedGoMod(t *testing.T) {
	for invoke := range templateDirs {
		t.Run(invoke, func(t *testing.T) {
			pin, err := AvailableMiddleware("go", invoke)
			if err != nil {
				t.Fatal(err)
			}
			data, err := fs.ReadFile(fn.EmbeddedTemplatesFS, pin.Template)
			if err != nil {
				t.Fatal(err)
			}
			re := regexp.MustCompile(`(?m)^\s*(require\s+)?knative\.dev/func-go\s+(\S+)`)
			m := re.FindSubmatch(data)
			if m == nil {
				t.Fatalf("%s has no knative.dev/func-go requirement:\n%s", pin.Template, data)
			}
			if diff := cmp.Diff(string(m[2]), pin.Version); diff != "" {
				t.Errorf("func-go in %s (-want +got):\n%s", pin.Template, diff)
			}
		})
	}
}

// Every pin's template that the module's source on disk holds is byte for byte the
// embedded one, and holds the pinned version as text.
func TestPinsMatchModuleSource(t *testing.T) {
	root := funcModuleDir(t)
	checked := 0
	for key := range middlewarePins() {
		pin, err := AvailableMiddleware(key.runtime, key.invoke)
		if errors.Is(err, ErrNoMiddleware) {
			continue
		}
		if err != nil {
			t.Errorf("%s/%s: %v", key.runtime, key.invoke, err)
			continue
		}
		onDisk, err := os.ReadFile(filepath.Join(root, "templates", filepath.FromSlash(pin.Template)))
		if errors.Is(err, fs.ErrNotExist) && pin.Runtime == "go" {
			continue // see TestGoPinMatchesEmbeddedGoMod
		}
		if err != nil {
			t.Errorf("%s/%s: %v", key.runtime, key.invoke, err)
			continue
		}
		embedded, err := fs.ReadFile(fn.EmbeddedTemplatesFS, pin.Template)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(onDisk, embedded) {
			t.Errorf("%s differs between the module source and the embedded templates", pin.Template)
		}
		if !bytes.Contains(onDisk, []byte(pin.Version)) {
			t.Errorf("%s does not contain the pinned version %q", pin.Template, pin.Version)
		}
		checked++
	}
	if checked == 0 {
		t.Error("no pin was checked against the module source")
	}
	t.Logf("checked %d pins against %s", checked, root)
}

// funcModuleDir is the func library's source directory, found from where its code
// was compiled from; the test is skipped when that is no directory (-trimpath).
func funcModuleDir(t *testing.T) string {
	t.Helper()
	f := runtime.FuncForPC(reflect.ValueOf(fn.NewFunction).Pointer())
	if f == nil {
		t.Skip("no source location for the func library")
	}
	file, _ := f.FileLine(f.Entry())
	file = filepath.ToSlash(file)
	i := strings.Index(file, modulePath+"@")
	if i < 0 {
		t.Skipf("func library source %s is not in a module directory", file)
	}
	dir := file[:i+len(modulePath)+1]
	if j := strings.IndexByte(file[len(dir):], '/'); j >= 0 {
		dir = file[:len(dir)+j]
	}
	if _, err := os.Stat(filepath.Join(filepath.FromSlash(dir), "templates")); err != nil {
		t.Skipf("func library source is not on disk: %v", err)
	}
	return filepath.FromSlash(dir)
}

func TestAvailableMiddlewareConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := AvailableMiddleware("go", "http"); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
}

// readMiddlewarePins over templates that lack or garble a pin gives errors naming
// the runtime, invoke and file, and still reads the pins that are fine.
func TestReadMiddlewarePinsErrors(t *testing.T) {
	fsys := fstest.MapFS{
		"go/scaffolding/instanced-http/go.mod":        {Data: []byte("module s\n\nrequire knative.dev/func-go v0.99.9\n")},
		"go/scaffolding/instanced-cloudevents/go.mod": {Data: []byte("module s\nrequire (\n")},
		"node/http/package.json":                      {Data: []byte(`{"dependencies": {"other": "1.0.0"}}`)},
		"node/cloudevents/package.json":               {Data: []byte(`{`)},
		"python/http/requirements.txt":                {Data: []byte("flask==2.2.5\n")},
		"python/cloudevents/requirements.txt":         {Data: []byte("parliament-functions\n")},
		"quarkus/http/pom.xml":                        {Data: []byte(`<project><properties><other>1</other></properties></project>`)},
		"quarkus/cloudevents/pom.xml":                 {Data: []byte(`<project><properties><quarkus.platform.version>${v}</quarkus.platform.version></properties></project>`)},
		"springboot/http/pom.xml":                     {Data: []byte(`<project`)},
	}
	pins := readMiddlewarePins(fsys)
	tests := []struct {
		runtime, invoke string
		wantInErr       []string
	}{
		{"go", "cloudevent", []string{"go cloudevent", "go/scaffolding/instanced-cloudevents/go.mod"}},
		{"node", "http", []string{"node http", "node/http/package.json", "no dependency on faas-js-runtime"}},
		{"node", "cloudevent", []string{"node/cloudevents/package.json"}},
		{"typescript", "http", []string{"typescript http", "file does not exist"}},
		{"python", "http", []string{"python/http/requirements.txt", "no requirement on parliament-functions"}},
		{"python", "cloudevent", []string{"without a version"}},
		{"quarkus", "http", []string{"quarkus/http/pom.xml", "no property quarkus.platform.version"}},
		{"quarkus", "cloudevent", []string{`"${v}", a reference`}},
		{"springboot", "http", []string{"springboot/http/pom.xml"}},
		{"springboot", "cloudevent", []string{"springboot cloudevent", "file does not exist"}},
	}
	for _, tt := range tests {
		t.Run(tt.runtime+"/"+tt.invoke, func(t *testing.T) {
			r := pins[pinKey{tt.runtime, tt.invoke}]
			if r.err == nil {
				t.Fatalf("got pin %+v, want an error", r.pin)
			}
			for _, s := range tt.wantInErr {
				if !strings.Contains(r.err.Error(), s) {
					t.Errorf("error %q does not contain %q", r.err, s)
				}
			}
		})
	}
	want := MiddlewarePin{Runtime: "go", Invoke: "http", Module: "knative.dev/func-go", Version: "v0.99.9", Template: "go/scaffolding/instanced-http/go.mod"}
	if err := pins[pinKey{"go", "http"}].err; err != nil {
		t.Errorf("go/http: %v", err)
	}
	if diff := cmp.Diff(want, pins[pinKey{"go", "http"}].pin); diff != "" {
		t.Errorf("go/http pin (-want +got):\n%s", diff)
	}
}

func TestGoModRequire(t *testing.T) {
	tests := []struct {
		name, gomod, want, wantErr string
	}{
		{name: "block", gomod: "module s\nrequire (\n\tknative.dev/func-go v0.21.3\n\tother v1.0.0\n)\n", want: "v0.21.3"},
		{name: "single line", gomod: "module s\nrequire knative.dev/func-go v0.20.0 // indirect\n", want: "v0.20.0"},
		{name: "replaced by version", gomod: "module s\nrequire knative.dev/func-go v0.21.3\nreplace knative.dev/func-go => example.com/fork v0.99.0\n", want: "v0.99.0"},
		{name: "replace of other version ignored", gomod: "module s\nrequire knative.dev/func-go v0.21.3\nreplace knative.dev/func-go v0.1.0 => example.com/fork v0.99.0\n", want: "v0.21.3"},
		{name: "replaced by directory", gomod: "module s\nrequire knative.dev/func-go v0.21.3\nreplace knative.dev/func-go => ../func-go\n", wantErr: "replaced by the directory ../func-go"},
		{name: "missing", gomod: "module s\nrequire other v1.0.0\n", wantErr: "no require of knative.dev/func-go"},
		{name: "malformed", gomod: "module s\nrequire (\n", wantErr: "go.mod"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := goModRequire([]byte(tt.gomod), "knative.dev/func-go")
			checkReadErr(t, err, tt.wantErr)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestPackageJSONDependency(t *testing.T) {
	tests := []struct {
		name, pkg, want, wantErr string
	}{
		{name: "range", pkg: `{"dependencies": {"faas-js-runtime": "^2.4.0"}}`, want: "^2.4.0"},
		{name: "exact", pkg: `{"dependencies": {"faas-js-runtime": "2.4.0", "x": "1"}}`, want: "2.4.0"},
		{name: "dev dependency only", pkg: `{"devDependencies": {"faas-js-runtime": "^2.4.0"}}`, wantErr: "no dependency on faas-js-runtime"},
		{name: "empty", pkg: `{"dependencies": {"faas-js-runtime": " "}}`, wantErr: "no dependency on faas-js-runtime"},
		{name: "malformed", pkg: `{"dependencies": [`, wantErr: "unexpected end of JSON input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := packageJSONDependency([]byte(tt.pkg), "faas-js-runtime")
			checkReadErr(t, err, tt.wantErr)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestRequirementsPin(t *testing.T) {
	tests := []struct {
		name, reqs, want, wantErr string
	}{
		{name: "exact", reqs: "parliament-functions==0.1.0\n", want: "0.1.0"},
		{name: "arbitrary equality", reqs: "parliament-functions===0.1.0\n", want: "0.1.0"},
		{name: "among others with comments", reqs: "# deps\nflask==2.2.5\nparliament-functions == 0.2.0  # the middleware\n", want: "0.2.0"},
		{name: "normalized name", reqs: "Parliament_Functions==0.1.0\n", want: "0.1.0"},
		{name: "extras and marker", reqs: "parliament-functions[extra] >= 0.1.0 ; python_version >= '3.8'\n", want: ">=0.1.0"},
		{name: "compatible release", reqs: "parliament-functions~=0.1.0\n", want: "~=0.1.0"},
		{name: "prefix of another name", reqs: "parliament-functions-extra==1.0.0\n", wantErr: "no requirement on parliament-functions"},
		{name: "two specifiers", reqs: "parliament-functions>=0.1,<0.2\n", wantErr: "more than one version specifier"},
		{name: "unversioned", reqs: "parliament-functions\n", wantErr: "without a version"},
		{name: "missing", reqs: "gunicorn==22.0.0\n", wantErr: "no requirement on parliament-functions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := requirementsPin([]byte(tt.reqs), "parliament-functions")
			checkReadErr(t, err, tt.wantErr)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestPomProperty(t *testing.T) {
	const ns = `xmlns="http://maven.apache.org/POM/4.0.0"`
	tests := []struct {
		name, pom, want, wantErr string
	}{
		{name: "namespaced", pom: `<?xml version="1.0"?><project ` + ns + `><properties><a>1</a><spring-cloud.version> 2024.0.0 </spring-cloud.version></properties></project>`, want: "2024.0.0"},
		{name: "no namespace", pom: `<project><properties><spring-cloud.version>2023.0.3</spring-cloud.version></properties></project>`, want: "2023.0.3"},
		{name: "not under properties", pom: `<project><spring-cloud.version>1</spring-cloud.version><properties/></project>`, wantErr: "no property spring-cloud.version"},
		{name: "empty", pom: `<project><properties><spring-cloud.version/></properties></project>`, wantErr: "property spring-cloud.version is empty"},
		{name: "reference", pom: `<project><properties><spring-cloud.version>${x}</spring-cloud.version></properties></project>`, wantErr: "a reference"},
		{name: "malformed", pom: `<project><properties>`, wantErr: "EOF"},
	}
	read := pomProperty("spring-cloud.version")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := read([]byte(tt.pom), "spring-cloud")
			checkReadErr(t, err, tt.wantErr)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func checkReadErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("unexpected error: %v", err)
	case want != "" && err == nil:
		t.Errorf("got no error, want one containing %q", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Errorf("error %q does not contain %q", err, want)
	}
}

package funclib

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	fn "knative.dev/func/pkg/functions"

	"github.com/fnops/func-operator/pkg/middleware"
)

// What each runtime's pin is of, and where func reads it: the operator's knowledge
// of func's version detectors (pkg/scaffolding/middleware_version.go). The versions
// are not written here: TestAvailableMiddleware reads them from the templates.
var wantPins = []MiddlewarePin{
	{Runtime: "go", Invoke: "http", Module: "knative.dev/func-go", Template: "go/scaffolding/instanced-http/go.mod"},
	{Runtime: "go", Invoke: "cloudevent", Module: "knative.dev/func-go", Template: "go/scaffolding/instanced-cloudevents/go.mod"},
	// Scaffolded in func v0.50.1 (not in v0.44.0): func-python is required by the scaffolding, the
	// function's own pyproject.toml requires no middleware.
	{Runtime: "python", Invoke: "http", Module: "func-python", Template: "python/scaffolding/instanced-http/pyproject.toml"},
	{Runtime: "python", Invoke: "cloudevent", Module: "func-python", Template: "python/scaffolding/instanced-cloudevents/pyproject.toml"},
	{Runtime: "node", Invoke: "http", Module: "faas-js-runtime", SourceManaged: true, Template: "node/http/package.json"},
	{Runtime: "node", Invoke: "cloudevent", Module: "faas-js-runtime", SourceManaged: true, Template: "node/cloudevents/package.json"},
	{Runtime: "typescript", Invoke: "http", Module: "faas-js-runtime", SourceManaged: true, Template: "typescript/http/package.json"},
	{Runtime: "typescript", Invoke: "cloudevent", Module: "faas-js-runtime", SourceManaged: true, Template: "typescript/cloudevents/package.json"},
	{Runtime: "quarkus", Invoke: "http", Module: "io.quarkus.platform", SourceManaged: true, Template: "quarkus/http/pom.xml"},
	{Runtime: "quarkus", Invoke: "cloudevent", Module: "io.quarkus.platform", SourceManaged: true, Template: "quarkus/cloudevents/pom.xml"},
	{Runtime: "springboot", Invoke: "http", Module: "spring-cloud", SourceManaged: true, Template: "springboot/http/pom.xml"},
	{Runtime: "springboot", Invoke: "cloudevent", Module: "spring-cloud", SourceManaged: true, Template: "springboot/cloudevents/pom.xml"},
}

// measured are the versions func v0.50.1 reports, as measured when go.mod was bumped
// to it (v0.44.0: func-go v0.21.3, faas-js-runtime ^2.4.0, python on
// parliament-functions 0.1.0 in the source, quarkus 3.17.8, spring-cloud 2024.0.0).
// Checked only while v0.50.1 is linked: a bump shows here what it changes.
var measured = map[string]string{
	"go": "v0.22.0", "python": "0.8.1", "node": "3.0.2", "typescript": "3.0.2",
	"quarkus": "3.37.1", "springboot": "2025.0.1",
}

const measuredFunc = "v0.50.1"

// The pins are what func reports; their versions agree with what the operator's own
// readers find in the embedded file each pin names (the file a function's source
// copies, for the source-managed runtimes).
func TestAvailableMiddleware(t *testing.T) {
	for _, want := range wantPins {
		for _, invoke := range []string{want.Invoke, ""} {
			if invoke == "" && want.Invoke != invokeHTTP {
				continue
			}
			t.Run(want.Runtime+"/"+invoke, func(t *testing.T) {
				got, err := AvailableMiddleware(want.Runtime, invoke)
				if err != nil {
					t.Fatalf("AvailableMiddleware(%q, %q): %v", want.Runtime, invoke, err)
				}
				if diff := cmp.Diff(want, got, cmpIgnoreVersion); diff != "" {
					t.Errorf("AvailableMiddleware(%q, %q) with func %s (-want +got):\n%s", want.Runtime, invoke, version(), diff)
				}
				data, err := fs.ReadFile(fn.EmbeddedTemplatesFS, got.Template)
				if err != nil {
					t.Fatal(err)
				}
				fromFile, err := middlewareOfRuntime[want.Runtime].read(data, got.Module)
				if err != nil {
					t.Fatalf("reading %s: %v", got.Template, err)
				}
				if c, err := middleware.Compare(fromFile, got.Version); err != nil || c != middleware.UpToDate {
					t.Errorf("func reports %s %s, %s pins %q: %s, %v", got.Module, got.Version, got.Template, fromFile, c, err)
				}
				if c, err := middleware.Compare(got.Version, fromFile); err != nil || c != middleware.UpToDate {
					t.Errorf("func reports %s %s, %s pins %q: %s, %v", got.Module, got.Version, got.Template, fromFile, c, err)
				}
				if version() == measuredFunc && got.Version != measured[want.Runtime] {
					t.Errorf("func %s reports %s %s, measured %s", version(), got.Module, got.Version, measured[want.Runtime])
				}
			})
		}
	}
}

var cmpIgnoreVersion = cmp.FilterPath(func(p cmp.Path) bool { return p.String() == "Version" }, cmp.Ignore())

// Every runtime func knows is either pinned above or has no middleware (rust): a new
// runtime in func shows here.
func TestAvailableMiddlewareCoversFuncRuntimes(t *testing.T) {
	pinned := map[string]bool{}
	for _, p := range wantPins {
		pinned[p.Runtime] = true
	}
	for _, r := range knownRuntimes() {
		for invoke := range templateDirs {
			_, err := AvailableMiddleware(r, invoke)
			switch {
			case pinned[r] && err != nil:
				t.Errorf("%s/%s: %v", r, invoke, err)
			case !pinned[r] && !errors.Is(err, ErrNoMiddleware):
				t.Errorf("%s/%s: func has a runtime this test does not expect, error %v", r, invoke, err)
			}
		}
	}
	for r := range pinned {
		if !contains(knownRuntimes(), r) {
			t.Errorf("func %s does not know runtime %s", version(), r)
		}
	}
	if !contains(knownRuntimes(), "rust") {
		t.Errorf("func %s does not know rust: %q", version(), knownRuntimes())
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// The rust templates depend on actix-web and cloudevents-sdk directly: no func
// middleware.
func TestAvailableMiddlewareRust(t *testing.T) {
	for _, invoke := range []string{"", "http", "cloudevent"} {
		_, err := AvailableMiddleware("rust", invoke)
		if !errors.Is(err, ErrNoMiddleware) {
			t.Fatalf("AvailableMiddleware(rust, %q) error = %v, want ErrNoMiddleware", invoke, err)
		}
		if !strings.Contains(err.Error(), "rust") {
			t.Errorf("error %q does not name rust", err)
		}
	}
}

// A runtime is scaffolded at build time (not SourceManaged) exactly when func's
// templates hold scaffolding for it: derived from the templates, not from
// fn.Function.HasScaffolding, which the pins use.
func TestSourceManagedIsNotScaffolded(t *testing.T) {
	for _, r := range knownRuntimes() {
		_, err := fs.Stat(fn.EmbeddedTemplatesFS, r+"/scaffolding")
		hasScaffolding := err == nil
		for invoke := range templateDirs {
			pin, err := AvailableMiddleware(r, invoke)
			if errors.Is(err, ErrNoMiddleware) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if pin.SourceManaged == hasScaffolding {
				t.Errorf("%s/%s: SourceManaged %v, but the templates have scaffolding: %v", r, invoke, pin.SourceManaged, hasScaffolding)
			}
		}
	}
}

// What v0.44.0 built into go functions, func-go v0.21.3, and an older func-go v0.20.0
// are outdated against what the linked func builds, whether the image's label or its
// build info says it (pkg/registry's TestInspectFuncGoOfV044 and
// TestInspectBuildInfoOlder read those versions from images).
func TestFuncGoOfV044IsOutdated(t *testing.T) {
	pin, err := AvailableMiddleware("go", "http")
	if err != nil {
		t.Fatal(err)
	}
	if version() == measuredFunc && pin.Version != "v0.22.0" {
		t.Errorf("func %s builds go functions with func-go %s, want v0.22.0", version(), pin.Version)
	}
	for _, v := range []string{"v0.21.3", "v0.20.0"} {
		if c, err := middleware.Compare(v, pin.Version); err != nil || c != middleware.Outdated {
			t.Errorf("Compare(%s, %s) = %s, %v; want Outdated", v, pin.Version, c, err)
		}
	}
	if c, err := middleware.Compare(pin.Version, pin.Version); err != nil || c != middleware.UpToDate {
		t.Errorf("Compare(%s, %s) = %s, %v; want UpToDate", pin.Version, pin.Version, c, err)
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
// one otherwise, and label the image with what that one requires;
// fn.LatestMiddlewareVersions reads instanced-* only, which is right as long as both
// require the same func-go.
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

// Every pin's file that the module's source on disk holds is byte for byte the
// embedded one, and holds the pinned version as text.
func TestPinsMatchModuleSource(t *testing.T) {
	root := funcModuleDir(t)
	checked := 0
	for key := range middlewarePins().pins {
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

// The python templates a function is created from require no middleware, in the
// module source as embedded: the middleware is the scaffolding's.
func TestPythonTemplatesRequireNoMiddleware(t *testing.T) {
	root := funcModuleDir(t)
	for _, dir := range templateDirs {
		name := "python/" + dir + "/" + pyprojectFile
		data, err := os.ReadFile(filepath.Join(root, "templates", filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		for _, module := range []string{pythonModule, parliamentModule} {
			if _, err := pyprojectDependency(data, module); !errors.Is(err, errNoRequirement) {
				t.Errorf("%s: requirement on %s: %v", name, module, err)
			}
		}
		if _, err := fs.Stat(fn.EmbeddedTemplatesFS, "python/"+dir+"/"+requirementsFile); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("python/%s/%s: %v, want no such file", dir, requirementsFile, err)
		}
	}
}

// funcModuleDir is the func library's source directory in the module cache, as go
// list finds it for the version go.mod pins (not from the compiled code's file paths,
// which make test's -trimpath leaves out).
func funcModuleDir(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", modulePath).Output()
	if err != nil {
		t.Fatalf("locating %s: go list -m: %v", modulePath, err)
	}
	dir := strings.TrimSpace(string(out))
	if _, err := os.Stat(filepath.Join(dir, "templates")); err != nil {
		t.Fatalf("the func library's source (%s) has no templates: %v", dir, err)
	}
	return dir
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

// The image labels are func's own names.
func TestLabels(t *testing.T) {
	if MiddlewareVersionLabel != "middleware-version" || RevisionLabel != "org.opencontainers.image.revision" {
		t.Errorf("labels %q, %q", MiddlewareVersionLabel, RevisionLabel)
	}
}

// buildPins over what func might answer.
func TestBuildPins(t *testing.T) {
	scaffolded := func(r string) bool { return r == "go" || r == "python" }
	both := func(v string) map[string]string { return map[string]string{"http": v, "cloudevent": v} }

	t.Run("func fails", func(t *testing.T) {
		tab := buildPins([]string{"go", "node"}, nil, errors.New("no scaffolding go.mod"), scaffolded)
		for _, r := range []string{"go", "node"} {
			_, err := tab.lookup(r, "http")
			if err == nil || !strings.Contains(err.Error(), "no scaffolding go.mod") || errors.Is(err, ErrNoMiddleware) {
				t.Errorf("%s: %v", r, err)
			}
		}
		if _, err := tab.lookup("cobol", "http"); err == nil || !strings.Contains(err.Error(), "unknown runtime") {
			t.Errorf("cobol: %v", err)
		}
	})

	latest := map[string]map[string]string{
		"go":     both("v0.99.9"),
		"node":   {"http": "3.1.0", "cloudevent": " "},
		"python": {"http": "0.9.0"},
		"zig":    both("1.2.3"), // a runtime a newer func added
	}
	tab := buildPins([]string{"go", "node", "python", "rust", "", "zig"}, latest, nil, scaffolded)
	if diff := cmp.Diff([]string{"go", "node", "python", "rust", "zig"}, tab.runtimes); diff != "" {
		t.Errorf("runtimes (-want +got):\n%s", diff)
	}
	tests := []struct {
		runtime, invoke string
		want            MiddlewarePin
		wantInErr       string
		wantNoMW        bool
	}{
		{runtime: "go", invoke: "", want: MiddlewarePin{Runtime: "go", Invoke: "http", Module: "knative.dev/func-go", Version: "v0.99.9", Template: "go/scaffolding/instanced-http/go.mod"}},
		{runtime: "go", invoke: "cloudevent", want: MiddlewarePin{Runtime: "go", Invoke: "cloudevent", Module: "knative.dev/func-go", Version: "v0.99.9", Template: "go/scaffolding/instanced-cloudevents/go.mod"}},
		{runtime: "node", invoke: "http", want: MiddlewarePin{Runtime: "node", Invoke: "http", Module: "faas-js-runtime", Version: "3.1.0", SourceManaged: true, Template: "node/http/package.json"}},
		{runtime: "node", invoke: "cloudevent", wantInErr: "no version of the node cloudevent middleware"},
		{runtime: "python", invoke: "http", want: MiddlewarePin{Runtime: "python", Invoke: "http", Module: "func-python", Version: "0.9.0", Template: "python/scaffolding/instanced-http/pyproject.toml"}},
		{runtime: "python", invoke: "cloudevent", wantInErr: "no version of the python cloudevent middleware"},
		{runtime: "rust", invoke: "http", wantNoMW: true, wantInErr: "rust"},
		{runtime: "zig", invoke: "cloudevent", want: MiddlewarePin{Runtime: "zig", Invoke: "cloudevent", Module: "zig middleware", Version: "1.2.3", SourceManaged: true}},
		{runtime: "zig", invoke: "grpc", wantInErr: "unknown invoke"},
	}
	for _, tt := range tests {
		t.Run(tt.runtime+"/"+tt.invoke, func(t *testing.T) {
			got, err := tab.lookup(tt.runtime, tt.invoke)
			if tt.wantInErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantInErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantInErr)
				}
				if errors.Is(err, ErrNoMiddleware) != tt.wantNoMW {
					t.Errorf("errors.Is(%v, ErrNoMiddleware) = %v", err, !tt.wantNoMW)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
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
		{name: "range", pkg: `{"dependencies": {"faas-js-runtime": "^3.0.2"}}`, want: "^3.0.2"},
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
		{name: "exact", reqs: "func-python==0.8.1\n", want: "0.8.1"},
		{name: "arbitrary equality", reqs: "func-python===0.8.1\n", want: "0.8.1"},
		{name: "among others with comments", reqs: "# deps\nhttpx==0.27\nfunc-python == 0.8.0  # the middleware\n", want: "0.8.0"},
		{name: "normalized name", reqs: "Func_Python==0.8.1\n", want: "0.8.1"},
		{name: "extras and marker", reqs: "func-python[extra] >= 0.8.0 ; python_version >= '3.10'\n", want: ">=0.8.0"},
		{name: "compatible release", reqs: "func-python~=0.8.0\n", want: "~=0.8.0"},
		{name: "prefix of another name", reqs: "func-python-extra==1.0.0\n", wantErr: "no requirement on func-python"},
		{name: "two specifiers", reqs: "func-python>=0.8,<0.9\n", wantErr: "more than one version specifier"},
		{name: "unversioned", reqs: "func-python\n", wantErr: "without a version"},
		{name: "from a URL", reqs: "func-python @ git+https://github.com/knative-extensions/func-python\n", wantErr: "from a URL"},
		{name: "missing", reqs: "gunicorn==22.0.0\n", wantErr: "no requirement on func-python"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := requirementsPin([]byte(tt.reqs), "func-python")
			checkReadErr(t, err, tt.wantErr)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestPyprojectDependency(t *testing.T) {
	project := func(deps string) string {
		return "[project]\nname = \"function\"\ndependencies = [\n" + deps + "\n]\n[build-system]\nrequires = [\"hatchling\"]\n"
	}
	tests := []struct {
		name, toml, want, wantErr string
	}{
		{name: "exact, as func's scaffolding writes it", toml: project(`  "func-python==0.8.1",` + "\n" + `  "function @ {root:uri}/f"`), want: "0.8.1"},
		{name: "range among others", toml: project(`"httpx", "func-python >= 0.7.0; python_version >= '3.10'", "pytest"`), want: ">=0.7.0"},
		{name: "absent, as func's templates write it", toml: project(`"httpx", "pytest", "pytest-asyncio"`), wantErr: "no requirement on func-python"},
		{name: "not in [project]", toml: "[tool.poetry.dependencies]\nfunc-python = \"^0.8.1\"\n", wantErr: "no requirement on func-python"},
		{name: "unversioned", toml: project(`"func-python"`), wantErr: "without a version"},
		{name: "dependencies not a list", toml: "[project]\ndependencies = \"func-python==0.8.1\"\n", wantErr: "unexpected TOML"},
		{name: "not TOML, content not quoted", toml: "[project\nsecret-ish = 1\n", wantErr: "not valid TOML (line "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := pyprojectDependency([]byte(tt.toml), "func-python")
			checkReadErr(t, err, tt.wantErr)
			if err != nil && strings.Contains(err.Error(), "secret-ish") {
				t.Errorf("error %q quotes the file", err)
			}
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
		{name: "namespaced", pom: `<?xml version="1.0"?><project ` + ns + `><properties><a>1</a><spring-cloud.version> 2025.0.1 </spring-cloud.version></properties></project>`, want: "2025.0.1"},
		{name: "no namespace", pom: `<project><properties><spring-cloud.version>2023.0.3</spring-cloud.version></properties></project>`, want: "2023.0.3"},
		{name: "not under properties", pom: `<project><spring-cloud.version>1</spring-cloud.version><properties/></project>`, wantErr: "no property spring-cloud.version"},
		{name: "commented out", pom: `<project><properties><!-- <spring-cloud.version>1</spring-cloud.version> --></properties></project>`, wantErr: "no property spring-cloud.version"},
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

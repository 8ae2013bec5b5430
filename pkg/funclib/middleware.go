package funclib

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"
	"golang.org/x/mod/modfile"
	fn "knative.dev/func/pkg/functions"

	"github.com/fnops/func-operator/pkg/funclib/funcyaml"
)

// MiddlewarePin is the middleware a build with the linked func library brings.
type MiddlewarePin struct {
	Runtime string // go, node, typescript, python, quarkus, springboot (func's runtime names)
	Invoke  string // http or cloudevent (func.yaml's invoke; "" means http)
	// Module is what the version is of: "knative.dev/func-go", "func-python",
	// "faas-js-runtime", "io.quarkus.platform", "spring-cloud".
	Module string
	// Version as func reports it (fn.LatestMiddlewareVersions), which is also what
	// func (>= v0.48) writes into the image label middleware-version: "v0.22.0" for
	// go, bare versions for the others ("3.0.2" where package.json says "^3.0.2").
	Version string
	// SourceManaged is true when the middleware lives in the user's own source: func
	// scaffolds no main program around the function at build time for the runtime
	// (fn.Function.HasScaffolding), so a rebuild cannot change it. False for go and,
	// in func v0.50.1 (v0.44.0: go only), python (its scaffolding brings func-python); legacy
	// parliament python functions, which func still builds without scaffolding,
	// are told apart by SourceMiddleware (ErrLegacyMiddleware).
	SourceManaged bool
	// Template is the embedded file func reads the version from, for messages (and,
	// for source-managed runtimes, the file the user's source pins it in). Empty for a
	// runtime this package cannot name the file of.
	Template string
}

// ErrNoMiddleware says a runtime is known but its templates in the linked func
// library pin no middleware (rust: its templates depend on actix-web directly, with
// no func runtime library in between; fn.LatestMiddlewareVersions leaves it out).
var ErrNoMiddleware = errors.New("no middleware")

// Image labels func (>= v0.48) writes on the images it builds. pkg/registry may not
// import func and keeps its own copies of the names; TestRegistryLabelsAreFuncs asserts
// they are these.
const (
	// MiddlewareVersionLabel holds the middleware version of the build, as
	// MiddlewarePin.Version spells it.
	MiddlewareVersionLabel = fn.MiddlewareVersionLabelKey
	// RevisionLabel holds the git commit the image was built from.
	RevisionLabel = fn.CommitLabelKey
)

// Invoke types as func.yaml spells them, and as fn.LatestMiddlewareVersions keys them.
const (
	invokeHTTP       = "http"
	invokeCloudEvent = "cloudevent"
)

// templateDirs maps func.yaml's invoke to the template (and scaffolding) directory
// name; func spells the directory plural, the invoke hint singular.
var templateDirs = map[string]string{
	invokeHTTP:       "http",
	invokeCloudEvent: "cloudevents",
}

// middlewareOf says what a runtime's middleware version is of, and where.
//
// fn.LatestMiddlewareVersions gives the versions only. The module and the file are
// what func's version detectors (pkg/scaffolding/middleware_version.go) read; they
// are written here because func's API does not give them and the operator needs
// them: the module for messages, the file and a reader of its format to read the
// version from the user's own source (func's detectors read only its embedded
// templates, never a function's source).
type middlewareOf struct {
	module string
	// template returns the embedded file func's detector reads, for a template
	// directory ("http" or "cloudevents").
	template func(dir string) string
	// read returns the version a file of that format gives module, as written.
	read func(data []byte, module string) (string, error)
}

var middlewareOfRuntime = map[string]middlewareOf{
	// Go functions hold only the user's package; the main module that imports
	// func-go is scaffolding written at build time. func reads the instanced
	// scaffolding; a test asserts the static one requires the same func-go.
	"go": {module: "knative.dev/func-go", template: scaffoldingFile("go", "go.mod"), read: goModRequire},
	// Python functions are scaffolded too (func v0.50.1; not in v0.44.0): the scaffolding's
	// pyproject.toml requires func-python. The user's pyproject.toml does not.
	"python":     {module: pythonModule, template: scaffoldingFile("python", "pyproject.toml"), read: pyprojectDependency},
	"node":       {module: "faas-js-runtime", template: templateFile("node", "package.json"), read: packageJSONDependency},
	"typescript": {module: "faas-js-runtime", template: templateFile("typescript", "package.json"), read: packageJSONDependency},
	"quarkus":    {module: "io.quarkus.platform", template: templateFile("quarkus", "pom.xml"), read: pomProperty("quarkus.platform.version")},
	"springboot": {module: "spring-cloud", template: templateFile("springboot", "pom.xml"), read: pomProperty("spring-cloud.version")},
}

func templateFile(runtime, name string) func(string) string {
	return func(dir string) string { return runtime + "/" + dir + "/" + name }
}

// scaffoldingFile names a file of the instanced scaffolding, which func's detectors
// read for every function (fn.LatestMiddlewareVersions asks for the instanced signature).
func scaffoldingFile(runtime, name string) func(string) string {
	return func(dir string) string { return runtime + "/scaffolding/instanced-" + dir + "/" + name }
}

type pinKey struct{ runtime, invoke string }

type pinResult struct {
	pin MiddlewarePin
	err error
}

type pinTable struct {
	runtimes []string // sorted
	pins     map[pinKey]pinResult
}

// middlewarePins asks the linked func library once.
var middlewarePins = sync.OnceValue(func() pinTable {
	latest, err := fn.LatestMiddlewareVersions()
	return buildPins(funcRuntimes(), latest, err, scaffolded)
})

// funcRuntimes returns the runtimes of func's embedded templates repository; nil
// when it cannot be read (the runtimes fn.LatestMiddlewareVersions names are known
// all the same).
func funcRuntimes() []string {
	repo, err := fn.NewRepository("", "")
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(repo.Runtimes))
	for _, r := range repo.Runtimes {
		names = append(names, r.Name)
	}
	return names
}

// scaffolded reports whether func writes scaffolding (a main program importing the
// middleware) around functions of runtime at build time.
func scaffolded(runtime string) bool { return fn.Function{Runtime: runtime}.HasScaffolding() }

// AvailableMiddleware returns the pin for a runtime and invoke type, as the linked
// func library reports it (fn.LatestMiddlewareVersions; never hard-coded: bumping
// func in go.mod must be the only thing needed for a new answer). Unknown runtime or
// invoke → error naming it. A known runtime whose templates pin no middleware gives
// an error wrapping ErrNoMiddleware.
func AvailableMiddleware(runtime, invoke string) (MiddlewarePin, error) {
	return middlewarePins().lookup(runtime, invoke)
}

func (t pinTable) lookup(runtime, invoke string) (MiddlewarePin, error) {
	if i := sort.SearchStrings(t.runtimes, runtime); i == len(t.runtimes) || t.runtimes[i] != runtime {
		return MiddlewarePin{}, fmt.Errorf("unknown runtime %q (func %s knows %s)", runtime, version(), strings.Join(t.runtimes, ", "))
	}
	if invoke == "" {
		invoke = invokeHTTP
	}
	if _, ok := templateDirs[invoke]; !ok {
		return MiddlewarePin{}, fmt.Errorf("unknown invoke %q for runtime %q (want %q or %q)", invoke, runtime, invokeHTTP, invokeCloudEvent)
	}
	r := t.pins[pinKey{runtime, invoke}]
	return r.pin, r.err
}

func knownRuntimes() []string { return append([]string(nil), middlewarePins().runtimes...) }

// buildPins makes the pins of runtimes (and of every runtime latest names) from
// func's answer: latest, by runtime and invoke, or latestErr.
func buildPins(runtimes []string, latest map[string]map[string]string, latestErr error, scaffolded func(string) bool) pinTable {
	seen := map[string]bool{}
	for _, r := range runtimes {
		seen[r] = true
	}
	for r := range latest {
		seen[r] = true
	}
	t := pinTable{pins: make(map[pinKey]pinResult, len(seen)*len(templateDirs))}
	for r := range seen {
		if r != "" {
			t.runtimes = append(t.runtimes, r)
		}
	}
	sort.Strings(t.runtimes)
	for _, runtime := range t.runtimes {
		for invoke, dir := range templateDirs {
			pin, err := makePin(runtime, invoke, dir, latest, latestErr, scaffolded)
			t.pins[pinKey{runtime, invoke}] = pinResult{pin, err}
		}
	}
	return t
}

func makePin(runtime, invoke, dir string, latest map[string]map[string]string, latestErr error, scaffolded func(string) bool) (MiddlewarePin, error) {
	if latestErr != nil {
		return MiddlewarePin{}, fmt.Errorf("reading the middleware versions of func %s's templates: %w", version(), latestErr)
	}
	byInvoke, ok := latest[runtime]
	if !ok {
		return MiddlewarePin{}, fmt.Errorf("%w: the %s templates of func %s pin no func middleware", ErrNoMiddleware, runtime, version())
	}
	v := strings.TrimSpace(byInvoke[invoke])
	if v == "" {
		return MiddlewarePin{}, fmt.Errorf("func %s gives no version of the %s %s middleware", version(), runtime, invoke)
	}
	pin := MiddlewarePin{Runtime: runtime, Invoke: invoke, Version: v, SourceManaged: !scaffolded(runtime)}
	if m, ok := middlewareOfRuntime[runtime]; ok {
		pin.Module, pin.Template = m.module, m.template(dir)
	} else {
		// A runtime a newer func added: its version is func's all the same.
		pin.Module = runtime + " middleware"
	}
	return pin, nil
}

// The readers below parse manifests by hand: they read the user's own source
// (SourceMiddleware), which no func API reads, and tests check them against func's
// answers on its templates.

// goModRequire returns the version a go.mod requires of module, after replace
// directives.
func goModRequire(data []byte, module string) (string, error) {
	f, err := modfile.Parse("go.mod", data, nil)
	if err != nil {
		return "", err
	}
	v := ""
	for _, r := range f.Require {
		if r.Mod.Path == module {
			v = r.Mod.Version
		}
	}
	if v == "" {
		return "", fmt.Errorf("no require of %s", module)
	}
	for _, r := range f.Replace {
		if r.Old.Path != module || (r.Old.Version != "" && r.Old.Version != v) {
			continue
		}
		if r.New.Version == "" {
			return "", fmt.Errorf("%s is replaced by the directory %s", module, r.New.Path)
		}
		v = r.New.Version
	}
	return v, nil
}

// packageJSONDependency returns the version range package.json's dependencies
// give module.
func packageJSONDependency(data []byte, module string) (string, error) {
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(data, &pkg); err != nil {
		return "", err
	}
	v := strings.TrimSpace(pkg.Dependencies[module])
	if v == "" {
		return "", fmt.Errorf("no dependency on %s", module)
	}
	return v, nil
}

// pep508Name matches the distribution name at the start of a requirement line.
var pep508Name = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?`)

var pythonNameSeparators = regexp.MustCompile(`[-_.]+`)

// normalizePythonName is PEP 503 name normalization.
func normalizePythonName(n string) string {
	return strings.ToLower(pythonNameSeparators.ReplaceAllString(n, "-"))
}

// errNoRequirement: a python manifest does not require the module.
var errNoRequirement = errors.New("no requirement")

// requirementsPin returns the version specifier requirements.txt gives module: the
// bare version for an exact pin (==0.1.0 → 0.1.0), the specifier as written for
// anything else (>=0.1.0).
func requirementsPin(data []byte, module string) (string, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		v, err := requirementVersion(line, module)
		if errors.Is(err, errNoRequirement) {
			continue
		}
		return v, err
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("%w on %s", errNoRequirement, module)
}

// pyprojectDependency returns the version specifier a pyproject.toml's
// [project].dependencies (PEP 621, as func's python templates and scaffolding
// write it) gives module, normalised as requirementsPin's.
func pyprojectDependency(data []byte, module string) (string, error) {
	var py struct {
		Project struct {
			Dependencies []string `toml:"dependencies"`
		} `toml:"project"`
	}
	if _, err := toml.Decode(string(data), &py); err != nil {
		// A parse error's text quotes the file: name the place only.
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return "", fmt.Errorf("not valid TOML (line %d, column %d)", pe.Position.Line, pe.Position.Col)
		}
		return "", fmt.Errorf("unexpected TOML: %s", excerpt(err.Error()))
	}
	for _, dep := range py.Project.Dependencies {
		v, err := requirementVersion(dep, module)
		if errors.Is(err, errNoRequirement) {
			continue
		}
		return v, err
	}
	return "", fmt.Errorf("%w on %s in [project] dependencies", errNoRequirement, module)
}

// requirementVersion reads one PEP 508 requirement; errNoRequirement when it is of
// another distribution than module.
func requirementVersion(line, module string) (string, error) {
	line = strings.TrimSpace(line)
	name := pep508Name.FindString(line)
	if name == "" || normalizePythonName(name) != normalizePythonName(module) {
		return "", fmt.Errorf("%w on %s", errNoRequirement, module)
	}
	spec := line[len(name):]
	if i := strings.Index(spec, ";"); i >= 0 { // environment marker
		spec = spec[:i]
	}
	spec = strings.TrimSpace(spec)
	if strings.HasPrefix(spec, "[") { // extras
		i := strings.Index(spec, "]")
		if i < 0 {
			return "", fmt.Errorf("malformed requirement %q", excerpt(line))
		}
		spec = strings.TrimSpace(spec[i+1:])
	}
	spec = strings.Join(strings.Fields(spec), "")
	switch {
	case spec == "":
		return "", fmt.Errorf("%s is required without a version", module)
	case strings.HasPrefix(spec, "@"):
		return "", fmt.Errorf("%s is required from a URL, not by version", module)
	case strings.Contains(spec, ","):
		return "", fmt.Errorf("%s is required as %q, more than one version specifier", module, excerpt(spec))
	case strings.HasPrefix(spec, "==="):
		return spec[3:], nil
	case strings.HasPrefix(spec, "=="):
		return spec[2:], nil
	}
	return spec, nil
}

// pomProperty returns a reader of the <properties> entry name of a Maven pom.xml.
func pomProperty(name string) func([]byte, string) (string, error) {
	return func(data []byte, _ string) (string, error) {
		var pom struct {
			Properties struct {
				Entries []struct {
					XMLName xml.Name
					Value   string `xml:",chardata"`
				} `xml:",any"`
			} `xml:"properties"`
		}
		if err := xml.Unmarshal(data, &pom); err != nil {
			return "", err
		}
		for _, e := range pom.Properties.Entries {
			if e.XMLName.Local != name {
				continue
			}
			v := strings.TrimSpace(e.Value)
			switch {
			case v == "":
				return "", fmt.Errorf("property %s is empty", name)
			case strings.Contains(v, "${"):
				return "", fmt.Errorf("property %s is %q, a reference", name, excerpt(v))
			}
			return v, nil
		}
		return "", fmt.Errorf("no property %s", name)
	}
}

// maxExcerpt bounds how much of a file's content an error quotes: the files come
// from the user's source, and messages end up in status conditions.
const maxExcerpt = funcyaml.MaxExcerpt

// excerpt returns s, shortened to about maxExcerpt bytes (funcyaml.Excerpt).
func excerpt(s string) string { return funcyaml.Excerpt(s) }

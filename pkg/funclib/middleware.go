package funclib

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/mod/modfile"
	fn "knative.dev/func/pkg/functions"
)

// MiddlewarePin is the middleware a build with the linked func library brings.
type MiddlewarePin struct {
	Runtime string // go, node, typescript, python, quarkus, springboot, rust
	Invoke  string // http or cloudevent (func.yaml's invoke; "" means http)
	Module  string // what the version is of: "knative.dev/func-go", "faas-js-runtime", "io.quarkus.platform", "spring-cloud", "parliament-functions", ...
	Version string // as pinned (e.g. "v0.21.3", "^2.4.0", "3.17.8")
	// SourceManaged is true when the middleware lives in the user's own source in this
	// func version (every runtime but go): a rebuild cannot change it.
	SourceManaged bool
	// Template is the embedded file the pin was read from, for messages.
	Template string
}

// ErrNoMiddleware says a runtime is known but its templates in the linked func
// library pin no middleware (rust, in func v0.44.0: its templates depend on
// actix-web directly, with no func runtime library in between).
var ErrNoMiddleware = errors.New("no middleware")

// Invoke types as func.yaml spells them.
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

// pinSource says where in the embedded templates a runtime's middleware is pinned
// and how to read it. Only the places are written here; the versions are always
// read from the templates.
type pinSource struct {
	module string
	// path returns the file, in the embedded templates, that pins the middleware for
	// a template directory ("http" or "cloudevents").
	path func(dir string) string
	// read returns the version the file pins for module.
	read func(data []byte, module string) (string, error)
	// sourceManaged: the file is copied into the user's source when the function is
	// created, so a rebuild keeps whatever the user has there.
	sourceManaged bool
}

// pinSources lists every runtime func v0.44.0 ships templates for. A nil entry is a
// runtime whose templates pin no middleware.
var pinSources = map[string]*pinSource{
	// Go functions hold only the user's package; the main module that imports
	// func-go is scaffolding written at build time, so a rebuild brings the
	// scaffolding's func-go. The instanced and static scaffoldings (function with or
	// without New()) require the same func-go; a test asserts they agree.
	"go": {
		module: "knative.dev/func-go",
		path:   func(dir string) string { return "go/scaffolding/instanced-" + dir + "/go.mod" },
		read:   goModRequire,
	},
	"node": {
		module:        "faas-js-runtime",
		path:          templateFile("node", "package.json"),
		read:          packageJSONDependency,
		sourceManaged: true,
	},
	"typescript": {
		module:        "faas-js-runtime",
		path:          templateFile("typescript", "package.json"),
		read:          packageJSONDependency,
		sourceManaged: true,
	},
	"python": {
		module:        "parliament-functions",
		path:          templateFile("python", "requirements.txt"),
		read:          requirementsPin,
		sourceManaged: true,
	},
	"quarkus": {
		module:        "io.quarkus.platform",
		path:          templateFile("quarkus", "pom.xml"),
		read:          pomProperty("quarkus.platform.version"),
		sourceManaged: true,
	},
	"springboot": {
		module:        "spring-cloud",
		path:          templateFile("springboot", "pom.xml"),
		read:          pomProperty("spring-cloud.version"),
		sourceManaged: true,
	},
	"rust": nil,
}

func templateFile(runtime, name string) func(string) string {
	return func(dir string) string { return runtime + "/" + dir + "/" + name }
}

type pinKey struct{ runtime, invoke string }

type pinResult struct {
	pin MiddlewarePin
	err error
}

// middlewarePins reads every pin from the embedded templates once.
var middlewarePins = sync.OnceValue(func() map[pinKey]pinResult {
	return readMiddlewarePins(fn.EmbeddedTemplatesFS)
})

// AvailableMiddleware returns the pin for a runtime and invoke type, read from the
// embedded templates of the linked func library (never hard-coded: bumping func in
// go.mod must be the only thing needed for a new answer). Unknown runtime or invoke → error naming it.
// A known runtime whose templates pin no middleware gives an error wrapping ErrNoMiddleware.
func AvailableMiddleware(runtime, invoke string) (MiddlewarePin, error) {
	if _, ok := pinSources[runtime]; !ok {
		return MiddlewarePin{}, fmt.Errorf("unknown runtime %q (func %s knows %s)", runtime, version(), strings.Join(knownRuntimes(), ", "))
	}
	if invoke == "" {
		invoke = invokeHTTP
	}
	if _, ok := templateDirs[invoke]; !ok {
		return MiddlewarePin{}, fmt.Errorf("unknown invoke %q for runtime %q (want %q or %q)", invoke, runtime, invokeHTTP, invokeCloudEvent)
	}
	r := middlewarePins()[pinKey{runtime, invoke}]
	return r.pin, r.err
}

func knownRuntimes() []string {
	rs := make([]string, 0, len(pinSources))
	for r := range pinSources {
		rs = append(rs, r)
	}
	sort.Strings(rs)
	return rs
}

func readMiddlewarePins(fsys fs.FS) map[pinKey]pinResult {
	pins := make(map[pinKey]pinResult, len(pinSources)*len(templateDirs))
	for runtime, src := range pinSources {
		for invoke, dir := range templateDirs {
			pin, err := readPin(fsys, runtime, invoke, dir, src)
			pins[pinKey{runtime, invoke}] = pinResult{pin, err}
		}
	}
	return pins
}

func readPin(fsys fs.FS, runtime, invoke, dir string, src *pinSource) (MiddlewarePin, error) {
	if src == nil {
		return MiddlewarePin{}, fmt.Errorf("%w: the %s templates of func %s pin no func middleware", ErrNoMiddleware, runtime, version())
	}
	path := src.path(dir)
	data, err := fs.ReadFile(fsys, path)
	if err != nil {
		return MiddlewarePin{}, fmt.Errorf("reading the %s %s middleware pin from func %s's embedded templates: %w", runtime, invoke, version(), err)
	}
	v, err := src.read(data, src.module)
	if err != nil {
		return MiddlewarePin{}, fmt.Errorf("reading the %s %s middleware pin from func %s's embedded template %s: %w", runtime, invoke, version(), path, err)
	}
	return MiddlewarePin{
		Runtime:       runtime,
		Invoke:        invoke,
		Module:        src.module,
		Version:       v,
		SourceManaged: src.sourceManaged,
		Template:      path,
	}, nil
}

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

// requirementsPin returns the version specifier requirements.txt gives module: the
// bare version for an exact pin (==0.1.0 → 0.1.0), the specifier as written for
// anything else (>=0.1.0).
func requirementsPin(data []byte, module string) (string, error) {
	want := normalizePythonName(module)
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		name := pep508Name.FindString(line)
		if name == "" || normalizePythonName(name) != want {
			continue
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
		case strings.Contains(spec, ","):
			return "", fmt.Errorf("%s is required as %q, more than one version specifier", module, excerpt(spec))
		case strings.HasPrefix(spec, "==="):
			return spec[3:], nil
		case strings.HasPrefix(spec, "=="):
			return spec[2:], nil
		}
		return spec, nil
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("no requirement on %s", module)
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
const maxExcerpt = 64

// excerpt returns s, shortened to about maxExcerpt bytes (on a rune boundary) with
// "..." when longer.
func excerpt(s string) string {
	if len(s) <= maxExcerpt {
		return s
	}
	i := maxExcerpt
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "..."
}

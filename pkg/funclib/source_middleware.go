package funclib

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
)

// Python sources. In func v0.50.1 (not v0.44.0) a python function's own pyproject.toml requires
// no middleware: the scaffolding written at build time requires func-python. Before,
// the templates pinned parliament-functions in requirements.txt, with a Procfile
// running "python -m parliament"; func v0.50.1 still builds such functions, the
// legacy way (no scaffolding: pkg/buildpacks and pkg/s2i, fn.Function.IsLegacyParliament).
const (
	pythonModule     = "func-python"
	parliamentModule = "parliament-functions"

	pyprojectFile    = "pyproject.toml"
	requirementsFile = "requirements.txt"
	procfileFile     = "Procfile"
)

// What func's fn.Function.IsLegacyParliament looks for (pkg/functions/legacy_parliament.go),
// which reads a directory; SourceMiddleware has the files' contents only.
var (
	procfileParliament = regexp.MustCompile(`python[0-9.]*\s+-m\s+parliament\b`)
	pyImportParliament = regexp.MustCompile(`(?m)^[ \t]*(from|import)[ \t]+parliament\b`)
)

// ErrLegacyMiddleware says a function's source holds a middleware of another module
// than the one func builds its runtime with now, which func still builds the old way;
// errors.As gives the *LegacyMiddlewareError.
var ErrLegacyMiddleware = errors.New("legacy middleware")

// LegacyMiddlewareError is a python function on parliament-functions (created from
// func's templates up to v0.44.0 at least). func v0.50.1 builds it without its func-python
// scaffolding, from the function's own requirements.txt and Procfile, so a rebuild
// keeps parliament-functions.
//
// How it compares: outdated, whatever the versions say. It is another module than
// the pin's (func-python), which func calls deprecated and will stop building; only
// migrating the source to the current python layout brings the pin's middleware.
// Its Version must not be compared with the pin's.
//
// Images: func v0.50.1 labels the image of a parliament function it builds with
// func-python's version (its version detector knows no legacy layout), so the label
// middleware-version of such an image is no evidence; only the source tells.
type LegacyMiddlewareError struct {
	Module  string // "parliament-functions"
	Version string // as the source pins it ("0.1.0"); "" when it pins none
	File    string // the file that shows it: "requirements.txt", "Procfile" or a .py file
	// Pin is what a function of the current layout gets.
	Pin MiddlewarePin
}

func (e *LegacyMiddlewareError) Error() string {
	pinned := e.Module
	if e.Version != "" {
		pinned += " " + e.Version
	}
	return fmt.Sprintf("the function is a legacy parliament function (%s, from its %s): func %s builds it without scaffolding, so a rebuild keeps %s; "+
		"it is outdated against %s %s, another module, which only migrating the source to the current %s layout brings",
		pinned, e.File, version(), e.Module, e.Pin.Module, e.Pin.Version, e.Pin.Runtime)
}

// Is makes errors.Is(err, ErrLegacyMiddleware) true.
func (e *LegacyMiddlewareError) Is(target error) bool { return target == ErrLegacyMiddleware }

// SourceMiddlewareFiles returns the files, relative to the function's directory, in
// which a runtime whose middleware is source-managed (MiddlewarePin.SourceManaged)
// pins it: the file func reads in its own template, which is copied into the
// function when it is created (["package.json"] for node and typescript,
// ["pom.xml"] for quarkus and springboot). Nil for scaffolded runtimes (go, python:
// a rebuild decides their middleware, which the image tells), rust and unknown
// runtimes.
func SourceMiddlewareFiles(runtime string) []string {
	var names []string
	seen := map[string]bool{}
	for _, invoke := range []string{invokeHTTP, invokeCloudEvent} {
		pin, err := AvailableMiddleware(runtime, invoke)
		if err != nil || !pin.SourceManaged || pin.Template == "" {
			continue
		}
		if name := path.Base(pin.Template); !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// SourceMiddleware returns the middleware version the function's own source pins,
// read from the file that func's template for runtime and invoke ("" means http)
// pins it in. files holds the content of files, keyed by their name relative to the
// function's directory; a missing file is absent from the map.
//
// The version is as written: "^3.0.2" from package.json, "3.37.1" from a pom.xml
// property, "0.8.1" for a python "==0.8.1" (">=0.8.1" stays ">=0.8.1").
// middleware.Compare reads all of these against MiddlewarePin.Version.
//
// Python (scaffolded): files may hold pyproject.toml, requirements.txt, Procfile and
// top-level .py files. A legacy parliament function (the Procfile runs parliament, a
// .py file imports it, or, without pyproject.toml, requirements.txt requires
// parliament-functions; the version is read from requirements.txt) gives
// a *LegacyMiddlewareError (ErrLegacyMiddleware), never a version. Otherwise the
// func-python requirement the function adds itself, from [project] dependencies of
// pyproject.toml, else requirements.txt: what the scaffolding requires is what a
// build installs, the function's requirement can only constrain it. Without one, an
// error as for go.
//
// Errors: unknown runtime or invoke (as AvailableMiddleware); go, whose middleware
// func's build brings; rust, wrapping ErrNoMiddleware; the file missing, unparsable,
// or without the dependency or property, each naming the file.
func SourceMiddleware(runtime, invoke string, files map[string][]byte) (string, error) {
	pin, err := AvailableMiddleware(runtime, invoke)
	if err != nil {
		return "", err
	}
	if pin.Module == pythonModule {
		return pythonSourceMiddleware(pin, files)
	}
	if !pin.SourceManaged {
		return "", notInSource(pin)
	}
	m, ok := middlewareOfRuntime[runtime]
	if !ok || pin.Template == "" {
		return "", fmt.Errorf("the operator does not know where %s functions pin %s (func %s)", runtime, pin.Module, version())
	}
	name := path.Base(pin.Template)
	data, ok := files[name]
	if !ok {
		return "", fmt.Errorf("the function has no %s, where %s functions pin %s", name, runtime, pin.Module)
	}
	v, err := m.read(data, m.module)
	if err != nil {
		return "", fmt.Errorf("reading the %s version from the function's %s: %w", pin.Module, name, err)
	}
	return v, nil
}

func notInSource(pin MiddlewarePin) error {
	return fmt.Errorf("%s functions do not pin their middleware (%s) in their source: func %s's build scaffolding brings %s",
		pin.Runtime, pin.Module, version(), pin.Version)
}

func pythonSourceMiddleware(pin MiddlewarePin, files map[string][]byte) (string, error) {
	if legacy := parliamentOf(files); legacy != nil {
		legacy.Pin = pin
		return "", legacy
	}
	for _, name := range []string{pyprojectFile, requirementsFile} {
		data, ok := files[name]
		if !ok {
			continue
		}
		read := requirementsPin
		if name == pyprojectFile {
			read = pyprojectDependency
		}
		v, err := read(data, pin.Module)
		if errors.Is(err, errNoRequirement) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("reading the %s version from the function's %s: %w", pin.Module, name, err)
		}
		return v, nil
	}
	return "", notInSource(pin)
}

// parliamentOf recognises a legacy parliament function; nil when files show none.
// func's rule (fn.Function.IsLegacyParliament): the Procfile runs parliament, or a
// top-level .py file imports it. A requirements.txt requiring parliament-functions
// in a function without pyproject.toml (the layout of func's v0.44.0 templates)
// counts too: it is what a function checked out without its Procfile still shows.
func parliamentOf(files map[string][]byte) *LegacyMiddlewareError {
	required, v := false, ""
	if data, ok := files[requirementsFile]; ok {
		var err error
		v, err = requirementsPin(data, parliamentModule)
		// Required, with a usable version or not.
		required = err == nil || !errors.Is(err, errNoRequirement)
	}
	legacy := func(file string) *LegacyMiddlewareError {
		return &LegacyMiddlewareError{Module: parliamentModule, Version: v, File: file}
	}
	if procfileParliament.Match(files[procfileFile]) {
		return legacy(procfileFile)
	}
	names := make([]string, 0, len(files))
	for name := range files {
		if strings.HasSuffix(name, ".py") && !strings.Contains(name, "/") {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		if pyImportParliament.Match(files[name]) {
			return legacy(name)
		}
	}
	if _, modern := files[pyprojectFile]; required && !modern {
		return legacy(requirementsFile)
	}
	return nil
}

// AllSourceMiddlewareFiles is every name SourceMiddlewareFiles gives for a runtime
// func knows, sorted: what a reader of a whole commit keeps so that any function
// directory of it can be read later without the commit's other files.
func AllSourceMiddlewareFiles() []string {
	seen := map[string]bool{}
	var names []string
	for _, runtime := range knownRuntimes() {
		for _, name := range SourceMiddlewareFiles(runtime) {
			if !seen[name] {
				seen[name] = true
				names = append(names, name)
			}
		}
	}
	sort.Strings(names)
	return names
}

// SourceManifests reads a function's source middleware for git.Fetcher (git.Manifests):
// SourceMiddlewareFiles, AllSourceMiddlewareFiles and SourceMiddleware, so that
// pkg/git reads func's rules without linking the func library.
type SourceManifests struct{}

// Files is SourceMiddlewareFiles.
func (SourceManifests) Files(runtime string) []string { return SourceMiddlewareFiles(runtime) }

// All is AllSourceMiddlewareFiles.
func (SourceManifests) All() []string { return AllSourceMiddlewareFiles() }

// Version is SourceMiddleware.
func (SourceManifests) Version(runtime, invoke string, files map[string][]byte) (string, error) {
	return SourceMiddleware(runtime, invoke, files)
}

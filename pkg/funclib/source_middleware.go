package funclib

import (
	"fmt"
	"path"
	"sort"
)

// SourceMiddlewareFiles returns the files, relative to the function's directory, that
// SourceMiddleware reads for runtime: the ones func's templates pin the middleware in
// and copy into the user's source (["package.json"] for node and typescript,
// ["pom.xml"] for quarkus and springboot, ["requirements.txt"] for python). Nil for
// runtimes whose middleware is not in the user's source (go, rust) and for unknown
// runtimes.
func SourceMiddlewareFiles(runtime string) []string {
	src := pinSources[runtime]
	if src == nil || !src.sourceManaged {
		return nil
	}
	dirs := make([]string, 0, len(templateDirs))
	for _, dir := range templateDirs {
		dirs = append(dirs, dir)
	}
	sort.Strings(dirs)
	var names []string
	seen := map[string]bool{}
	for _, dir := range dirs {
		name := path.Base(src.path(dir))
		if !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	return names
}

// SourceMiddleware returns the middleware version the function's own source pins,
// read from the same file and key, with the same reader, as AvailableMiddleware's pin
// for runtime and invoke ("" means http). files holds the content of the files
// SourceMiddlewareFiles names, keyed by name; a missing file is absent from the map.
//
// The version is as written, normalised like the template's pin: "^2.4.0" from
// package.json, "3.17.8" from a pom.xml property, "0.1.0" for a requirements.txt
// "==0.1.0" (">=0.1.0" stays ">=0.1.0").
//
// Errors: unknown runtime or invoke (as AvailableMiddleware); go, whose middleware
// func's build brings; rust, wrapping ErrNoMiddleware; the file missing, unparsable,
// or without the dependency or property, each naming the file.
func SourceMiddleware(runtime, invoke string, files map[string][]byte) (string, error) {
	pin, err := AvailableMiddleware(runtime, invoke)
	if err != nil {
		return "", err
	}
	if !pin.SourceManaged {
		return "", fmt.Errorf("%s functions do not pin their middleware (%s) in their source: func %s's build scaffolding brings %s", runtime, pin.Module, version(), pin.Version)
	}
	src := pinSources[runtime]
	name := path.Base(pin.Template)
	data, ok := files[name]
	if !ok {
		return "", fmt.Errorf("the function has no %s, where %s functions pin %s", name, runtime, pin.Module)
	}
	v, err := src.read(data, src.module)
	if err != nil {
		return "", fmt.Errorf("reading the %s version from the function's %s: %w", pin.Module, name, err)
	}
	return v, nil
}

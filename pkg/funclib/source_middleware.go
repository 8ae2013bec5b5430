package funclib

import (
	"fmt"
	"path"
)

// SourceMiddlewareFiles returns the files, relative to the function's directory, that
// SourceMiddleware reads for runtime: the ones func's templates pin the middleware in
// and copy into the user's source (package.json, pom.xml, requirements.txt). None for
// runtimes whose middleware is not in the user's source.
func SourceMiddlewareFiles(runtime string) []string {
	src := pinSources[runtime]
	if src == nil || !src.sourceManaged {
		return nil
	}
	return []string{path.Base(src.path(templateDirs[invokeHTTP]))}
}

// SourceMiddleware returns the middleware version the function's own source pins,
// read from the same file and key as func's template for runtime and invoke. files
// holds the content of the files SourceMiddlewareFiles names that exist.
func SourceMiddleware(runtime, invoke string, files map[string][]byte) (string, error) {
	pin, err := AvailableMiddleware(runtime, invoke)
	if err != nil {
		return "", err
	}
	if !pin.SourceManaged {
		return "", fmt.Errorf("the %s middleware is not in the function's source: func builds it in", runtime)
	}
	src := pinSources[runtime]
	name := path.Base(pin.Template)
	data, ok := files[name]
	if !ok {
		return "", fmt.Errorf("the function has no %s, where %s functions pin %s", name, runtime, src.module)
	}
	v, err := src.read(data, src.module)
	if err != nil {
		return "", fmt.Errorf("reading %s from the function's %s: %w", src.module, name, err)
	}
	return v, nil
}

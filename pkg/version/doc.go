// Package version says which build of the operator is running: the release version
// the build stamped (ldflags -X, see ko.yaml and hack/release.sh), the git revision
// (as the Go toolchain recorded it in the binary's build information, else as stamped),
// the knative.dev/func module version the build information records, and the Go
// version it was built with. `func-operator --version`
// prints it, the start-up log line names it and the func_operator_build_info gauge
// exports it.
//
// It imports no other package of the operator (and not knative.dev/func: the func
// library's version is read from the build information, by module path): depguard
// rule floor.
package version

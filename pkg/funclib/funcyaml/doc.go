// Package funcyaml reads a function's func.yaml, untrusted input from a tenant's
// repository, with func's own loader (knative.dev/func/pkg/functions) and the operator's
// bounds and checks around it: size and shape, no {{ env:... }} template that would
// read the operator's environment, the fields the operator uses (Metadata).
//
// It is part of the func adapter (package funclib re-exports what the operator uses)
// and apart from the rest of it so that its fuzz targets build, instrumented, only
// func's functions package and not every package funclib links (about 470 packages
// instead of 1,900: make test's fuzz phase on a cold machine). It imports no package of
// the operator, and of func only pkg/functions.
package funcyaml

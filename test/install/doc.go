// Package install proves that `ko apply -f config/` installs the operator: ko resolves config/ against a local registry and the result is applied to a real API server.
// It proves `make release` the same way: multi-platform images pinned by digest, the CRDs in a file of their own, the version in the binary.
package install

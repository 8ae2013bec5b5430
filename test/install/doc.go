// Package install proves that `ko apply -f config/` installs the operator: ko resolves config/ against a local registry and the result is applied to a real API server.
package install

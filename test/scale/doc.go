// Package scale is the scale benchmark of the operator binary: N Functions on R
// repositories against a real control plane, git server and registry. It runs with
// `make bench-scale` (build tag scale), not with `make test`.
package scale

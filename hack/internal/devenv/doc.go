// Package devenv is what make run (hack/run) and make demo (hack/demo) share: the
// embedded control plane and a kubeconfig for kubectl, a git repository served on
// loopback by git http-backend, and the logger, quiet unless asked.
//
// It is development support: no package of the operator's binary imports it. It may
// import test/ (the control plane of the tests) and the operator's API types, never
// pkg/operator: the commands wire the operator themselves.
package devenv

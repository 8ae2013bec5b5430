// Package knative runs the real Knative Serving controller (knative.dev/serving's
// cmd/controller, at the version func pins) against envtest's API server, for tests
// and make demo, with what a cluster adds around it: the workload controllers of
// kube-controller-manager (real), Knative's defaults and validation (its own code,
// served in-process: webhook.go), and — because they need a data plane or pods that
// run somewhere — simulations of the kubelet, of Knative's autoscaler and of its
// networking layer (test/envtest), each of which says so in its logs.
//
// It owns the wiring of one Serving stack (Start); the simulations belong to
// test/envtest and the process to test/sharedmain. It must not import the
// operator's packages.
package knative

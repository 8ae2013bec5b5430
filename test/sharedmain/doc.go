// Package sharedmain runs, for tests, a controller built on knative.dev/pkg's
// sharedmain (the Tekton Pipelines controller, Knative Serving's controller) as a
// process against envtest's API server, as its release's Deployment runs it: the
// container's arguments and environment read from the release's YAML of the
// module go.mod pins, its ConfigMaps, a kubeconfig, ports free when it starts, and
// no way out of the machine.
//
// It owns the process (start, readiness, stop by pid, log); what the controller
// reconciles, and what a cluster would add around it, belong to its caller's package
// (test/tekton, test/knative). It must not import them.
package sharedmain

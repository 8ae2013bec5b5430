// Package function owns the reconcile of a Function: an ordered list of steps whose
// outcome is patched into the status once, and the watches that bring a Function
// back to it.
//
// # Where things are
//
//   - reconciler.go: the Reconciler; Reconcile runs the checks in order (check:
//     stopping at the first error, then stopping a build whose Service binding
//     changed), the rebuild step when they all succeeded, summarize (the kstatus
//     conditions) and the one status patch.
//   - One file per step, named after it: build_observe.go (observeBuild, first, so a
//     build is followed even while the source cannot be read), source.go
//     (reconcileSource), deployment.go (reconcileDeployment: what func deployed,
//     whichever of its deployers, knative, raw or keda; reconcileServiceReady;
//     binding.go holds who may act on it), middleware.go
//     (reconcileMiddleware), rebuild.go (reconcileRebuild, after every check
//     succeeded). Steps hand what they observed on through result.go's observation.
//   - The build's life is pkg/rebuild's state machine: build_observe.go and
//     rebuild.go turn what they see into its Events and apply its Transitions;
//     build_stop.go stops a build, build_history.go prunes finished runs,
//     finalize.go cleans up after a deleted Function, pull_secret.go readies the
//     function's ServiceAccount for a build.
//   - outcome.go: a failure's condition and its error are one value (markedBy);
//     outage.go: last known good through an outage of git or the registry.
//   - Watches: controller.go (SetupWithManager and the maps from watched objects to
//     Functions), wakeups.go, repositories.go (which Functions read which
//     repository), late_apis.go (Tekton, Knative, Eventing or the KEDA HTTP add-on
//     installed later).
//   - events.go and messages.go: Events on transitions, bounded messages; rbac.go:
//     the operator's permissions (kubebuilder markers).
//
// Behaviour never keys on a reason string users read: it keys on error types
// (lanes.IsHostBusy, tenancy.IsNotOnboarded, git.IsTimeout) and on rerror's kinds
// (stalling, waiting, transient).
//
// What it must not hold: the rebuild machinery (pkg/rebuild), tenancy (pkg/tenancy),
// host lanes (pkg/lanes), git (pkg/git), image reads (pkg/registry), reads of what
// func deployed (pkg/knative for Knative Services, pkg/workload for the raw and keda
// deployers' Deployments) and everything of knative.dev/func (pkg/funclib, the only package that imports it). None of those
// may import this package.
//
// # Tests
//
//   - TestReconciler_<method>: a table calling one method; a step's tables live in
//     <step>_step_test.go, and such a file holds nothing else (test/hygiene checks).
//   - TestReconcile_<Behaviour>: whole Reconcile calls, in <concern>_test.go.
//   - Test<Type>_<Method> and TestSummarize-like names: pure units.
//   - Shared fixtures live in fixtures_test.go. A test that needs an API server gets
//     the package's control plane from apiServer/newNamespace (envtest.Shared: started
//     on first use, skipped under -short), so `go test -short` (make test-unit) runs
//     the pure tests without one. Integration tests of the wired manager are
//     pkg/operator's (TestOperator_*); the shipped binary's are test/faults'.
package function

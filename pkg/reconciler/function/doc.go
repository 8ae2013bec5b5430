// Package function owns the reconcile of a Function: an ordered list of steps whose
// outcome is patched into the status once, and the watches that bring a Function
// back to it.
//
// # Where things are
//
//   - reconciler.go: Deps, New and the Reconciler; Reconcile runs the checks in order
//     (check: stopping at the first error, then stopping a build whose binding
//     changed), the build sub-reconciler's Rebuild when they all succeeded, summarize
//     (the kstatus conditions) and the one status patch.
//   - One file per check, named after it: source.go (reconcileSource), deployment.go
//     (reconcileDeployment: what func deployed, whichever of its deployers — the
//     deployed interface, knativeTarget or workloadTarget; reconcileServiceReady;
//     binding.go holds who may act on it), middleware.go (reconcileMiddleware;
//     rebuild_from.go, the commit a rebuild builds), deploy_on_commit.go and base_step.go
//     (the source and base policies' checks, packages oncommit and base, which
//     also holds the rebaser of a Base build). Steps hand what they observed
//     on through observation.go; forBuild is what the build sub-reconciler reads.
//   - A build's life is package build (./build): its cause, plan and admission,
//     following and stopping it, what it leaves; the states are pkg/rebuild's
//     Machine. Package step holds the steps' Result and MarkedBy (a failure's
//     condition and its error are one value); outage.go: last known good through an
//     outage of git or the registry; finalize.go: a deleted Function.
//   - Watches: controller.go (SetupWithManager, and watches: the maps from watched
//     objects to Functions), wakeups.go, repositories.go (which Functions read which
//     repository), late_apis.go (Tekton, Knative, Eventing or the KEDA HTTP add-on
//     installed later); cache_slim.go: what the manager's cache keeps of them.
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
//   - Shared fixtures live in fixtures_test.go. Step tables run on controller-runtime's
//     fake client (onFakeClient, fake_test.go), in the quick tier; a test that needs
//     an API server (a whole Reconcile's optimistic-lock patch, RBAC) gets the
//     package's control plane from apiServer/newNamespace (envtest.Shared: started on
//     first use, skipped under -short). Integration tests of the wired manager are
//     pkg/operator's (TestOperator_*); the shipped binary's are test/faults'.
package function

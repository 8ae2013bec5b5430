// Package build is the Function reconciler's build sub-reconciler: everything of a
// rebuild's life, from its cause to its PipelineRun's end and what it leaves behind.
//
//   - reconciler.go: the Reconciler, what it depends on (Deps, and the small
//     interfaces it calls: Sources, Access), and what it reads of the checks that ran
//     before it (Observed).
//   - cause.go: why a rebuild is due. A new cause (a new commit on the branch, a
//     patched base image) is a new case of dueCause (as Request was), worded by describe;
//     the plan, the machine, the status (status.build.cause) and the Events carry it.
//   - rebuild.go: the rebuild step: plan (the preconditions, each a stall that
//     gives the Function's place in the queue up), then admit (the machine, the
//     fleet's queue, the launch after the status is written); verify follows a
//     build that succeeded until its image serves.
//   - observe.go: Observe follows the build in flight through its PipelineRun;
//     stop.go stops one; history.go prunes finished runs and ended builds' git
//     credentials; pull_secret.go readies the function's ServiceAccount;
//     finalize.go cleans up after a deleted Function; events.go: Events on a
//     build's transitions.
//
// The build's states and transitions are pkg/rebuild's Machine; this package turns
// what it sees into the machine's Events and applies its Transitions.
//
// It must not import the Function reconciler (pkg/reconciler/function), which calls
// it, nor knative.dev/func (pkg/funclib wraps it); it reads git, the registry and
// namespaces' grants only through the interfaces of reconciler.go.
package build

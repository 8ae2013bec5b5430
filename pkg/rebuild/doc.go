// Package rebuild owns the life of a Function's rebuild: the fleet-wide queue that
// admits rebuilds under a budget in a fair order (Queue), the launcher that runs
// them off the reconcile path (Launcher), the seeder that refills the queue from the
// Functions' statuses after a restart (QueueSeeder), the leadership clock (Leading),
// the extraction of where a build failed (FailedTask, TailLines), and one build
// state machine (Machine.Next): every phase change of status.build (Queued,
// Starting, Running, Succeeded, Failed, none) in one function, pure, tested by a
// table without a control plane.
//
// The Function reconciler (pkg/reconciler/function) observes — PipelineRuns, the
// launch, the queue, the Knative Service — feeds what it saw to the machine as an
// Event, and applies the Transition it returns (the status, Builds.Apply for the
// queue and the launcher). This package must not import pkg/reconciler: the
// reconciler imports it (depguard rule rebuild).
package rebuild

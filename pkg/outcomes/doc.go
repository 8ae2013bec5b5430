// Package outcomes sends what became of Functions' builds and deploys as CloudEvents
// (docs/events.md): a build started, succeeded or failed, a new image seen deployed.
//
// It owns the events' types and data (outcome.go), where they go (sink.go: the
// ConfigMap's eventSink, or a namespace's eventSink.<namespace>; a URL, or a Knative
// Broker's address) and the Sender (sender.go): a bounded queue that a reconcile
// hands outcomes to without ever waiting, and one worker, a manager Runnable, that
// sends them in order, each within eventTimeout, through the operator's network
// guard. What it drops (a full queue, a sink the network stance refuses, a Broker
// without an address) and what a sink refuses it counts, for package metrics.
//
// It must not import the Function reconciler (pkg/reconciler/...), which emits
// through it: it is handed outcomes, never reads Functions' state itself. It sends
// nothing of a Secret: the data is what a Function's status says.
package outcomes

// Command demo shows func-operator's job on an embedded control plane (make demo): a
// Knative Function deployed with old middleware, found outdated and rebuilt through
// the real Tekton controller, and served by the real Knative Serving controller (with
// kube-controller-manager's workload controllers), with what would need a node or
// Knative's data plane simulated — the kubelet, Knative's autoscaler and its
// networking layer — and named so on screen. See docs/demo.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	verbose := flag.Bool("v", false, "show the operator's logs (debug level) on stderr too")
	exit := flag.Bool("exit", false, "stop everything once the loop is shown, instead of waiting for Ctrl-C")
	flag.Parse()
	// The first Ctrl-C (or SIGTERM) ends the demo, and every later one is ignored
	// until it has stopped what it started: controller-runtime's handler exits at the
	// second, which would leave etcd, kube-apiserver and the kubeconfig behind. The
	// clean-up is bounded (each process is stopped by its id, then killed).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	o := options{Out: os.Stdout, Verbose: *verbose, Logs: os.Stderr, Exit: *exit, CaptureStderr: !*verbose}
	if _, err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		stop()
		os.Exit(1) //nolint:gocritic // stop() ran: nothing else is deferred
	}
}

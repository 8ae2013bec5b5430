// Command demo shows func-operator's job on an embedded control plane (make demo): a
// Knative Function deployed with old middleware, found outdated and rebuilt through
// the real Tekton controller, with the kubelet and Knative Serving simulated (and
// named so on screen). See docs/demo.md.
package main

import (
	"flag"
	"fmt"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
)

func main() {
	verbose := flag.Bool("v", false, "show the operator's logs (debug level) on stderr too")
	exit := flag.Bool("exit", false, "stop everything once the loop is shown, instead of waiting for Ctrl-C")
	flag.Parse()
	ctx := ctrl.SetupSignalHandler()
	o := options{Out: os.Stdout, Verbose: *verbose, Logs: os.Stderr, Exit: *exit, CaptureStderr: !*verbose}
	if _, err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

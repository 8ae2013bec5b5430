// Command func-operator runs the operator that keeps Knative Functions deployed from
// git healthy: it parses the flags and the environment into operator.Options and
// runs the manager pkg/operator assembles. Nothing imports it.
package main

import (
	"flag"
	"fmt"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/operator"
	"github.com/fnops/func-operator/pkg/version"
)

// Leader election, and the operator's own ConfigMap: only in its own namespace
// (a Role; config/ installs the operator in func-operator).
//
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=func-operator,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",namespace=func-operator,resources=configmaps,verbs=get;list;watch

func main() {
	var o operator.Options
	flag.StringVar(&o.MetricsAddr, "metrics-bind-address", ":8443", "address the Prometheus metrics are served on; 0 disables them")
	flag.BoolVar(&o.MetricsSecure, "metrics-secure", true, "serve the metrics over HTTPS to scrapers the API server authenticates (TokenReview) and authorizes "+
		"(SubjectAccessReview of get on /metrics: ClusterRole func-operator-metrics-reader); false: plain HTTP, open to anyone who reaches the port")
	flag.StringVar(&o.MetricsCertDir, "metrics-cert-dir", "", "directory of the metrics server's certificate (tls.crt, tls.key; reloaded when they change) with --metrics-secure; "+
		"empty: a self-signed certificate made in memory at start")
	functionConditions := flag.Bool("function-condition-metrics", true, "export func_operator_function_condition, a series per condition of each Function "+
		"(5 to 10 a Function); false at fleet scale: func_operator_functions still counts the Functions of each namespace by condition, status and reason")
	flag.StringVar(&o.ProbeAddr, "health-probe-bind-address", ":8081", "address /healthz and /readyz are served on; 0 disables them")
	flag.StringVar(&o.PprofAddr, "pprof-bind-address", "0", "address Go's profiles are served on (/debug/pprof/, plain HTTP, unauthenticated: bind it to 127.0.0.1 "+
		"and port-forward), e.g. 127.0.0.1:6060; 0 disables them")
	flag.StringVar(&o.WebhookAddr, "webhook-bind-address", "0", "address the push webhook receivers are served on (/hook/<namespace>/<secret>), e.g. :9292; 0 disables them")
	flag.BoolVar(&o.AllowLoopback, "host-allow-loopback", false, "let Functions name git hosts and registries on the operator's own host (127.0.0.0/8, ::1), "+
		"refused otherwise: for tests and a developer's machine; the operator's own listeners and the func library's API proxy stay refused")
	flag.StringVar(&o.WatchLabelSelector, "watch-label-selector", "", "reconcile only the Functions this label selector selects (one shard of several, e.g. functions.dev/shard=a); empty: all")
	flag.StringVar(&o.LeaderElectionID, "leader-election-id", operator.LeaderElectionID, "name of the leader election Lease; give each shard its own")
	flag.BoolVar(&o.LeaderElection, "leader-elect", false, "elect a leader so that only one replica reconciles")
	flag.IntVar(&o.Concurrency, "concurrency", 4, "how many Functions are reconciled at once")
	flag.StringVar(&o.WorkDir, "work-dir", "", "directory of this operator's own for temporary clones (an emptyDir when the root "+
		"filesystem is read-only); what a killed process left there is removed at start. Default: a new directory under $TMPDIR")
	var qps float64
	var burst int
	// How the default was chosen, with its measurement: docs/scale.md#cold-start.
	flag.Float64Var(&qps, "kube-api-qps", 200, "requests a second the operator sends the API server at most (client-go's QPS), a cap on a runaway loop; "+
		"it bounds how soon a new fleet or a push to a monorepo is written, as each Function's first check writes its status once. "+
		"A negative value: no cap, the API server's priority and fairness alone (controller-runtime's default); 0: client-go's 5")
	flag.IntVar(&burst, "kube-api-burst", 500, "requests the operator may send the API server in a burst above kube-api-qps")
	printVersion := flag.Bool("version", false, "print the version, git revision, Go version and func library version, and exit")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	if *printVersion {
		fmt.Print(version.Get())
		return
	}
	o.NoFunctionConditionMetrics = !*functionConditions

	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("setup")
	if !loopbackOnly(o.PprofAddr) {
		log.Info("WARNING: Go's profiles are served without authentication on an address other than loopback: "+
			"bind --pprof-bind-address to 127.0.0.1 and port-forward", "address", o.PprofAddr)
	}
	applyMemoryLimit(log)

	o.WatchNamespaces = operator.ParseNamespaces(os.Getenv("WATCH_NAMESPACE"))
	o.SystemNamespace = os.Getenv("SYSTEM_NAMESPACE")
	if o.SystemNamespace == "" {
		o.SystemNamespace = "func-operator"
	}

	ctx := ctrl.SetupSignalHandler()
	restConfig, err := ctrl.GetConfig()
	if err != nil {
		fmt.Fprintf(os.Stderr, "func-operator: no cluster configured (KUBECONFIG, ~/.kube/config or in-cluster): %v\n", err)
		os.Exit(1)
	}
	restConfig.QPS, restConfig.Burst = float32(qps), burst
	mgr, err := operator.New(ctx, restConfig, o)
	if err != nil {
		log.Error(err, "setting up the operator")
		os.Exit(1)
	}
	v := version.Get()
	log.Info("starting func-operator", "version", v.Version, "revision", v.Revision, "goVersion", v.GoVersion, "funcLibrary", funclib.Version(),
		"watchNamespaces", o.WatchNamespaces, "systemNamespace", o.SystemNamespace)
	if err := mgr.Start(ctx); err != nil {
		log.Error(err, "running the operator")
		os.Exit(1)
	}
}

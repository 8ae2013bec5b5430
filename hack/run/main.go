// Command run starts func-operator from source for development: on an embedded
// control plane, or, with -cluster, against the cluster in KUBECONFIG (or
// ~/.kube/config), taking part in the installed operator's leader election there.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/fnops/func-operator/hack/internal/devenv"
	"github.com/fnops/func-operator/pkg/operator"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "run:", err)
		os.Exit(1)
	}
}

func run() error {
	onCluster := flag.Bool("cluster", false, "run against the cluster in KUBECONFIG (or ~/.kube/config), "+
		"as one more candidate of the installed operator's leader election, instead of on an embedded control plane")
	metricsAddr := flag.String("metrics-bind-address", "127.0.0.1:8080", "where the operator serves metrics")
	probeAddr := flag.String("health-probe-bind-address", "127.0.0.1:8081", "where the operator serves its probes")
	verbose := flag.Bool("v", false, "log at debug level too: the embedded control plane's start (envtest), the operator's line per reconcile")
	flag.Parse()
	ctrl.SetLogger(devenv.Logger(os.Stderr, *verbose))
	ctx := ctrl.SetupSignalHandler()

	cfg, stop, err := clusterConfig(*onCluster)
	if err != nil {
		return err
	}
	embeddedPlane := stop != nil
	if embeddedPlane {
		defer stop()
	}
	o := operator.Options{
		WatchNamespaces: operator.ParseNamespaces(os.Getenv("WATCH_NAMESPACE")),
		SystemNamespace: envOr("SYSTEM_NAMESPACE", "func-operator"),
		MetricsAddr:     *metricsAddr,
		ProbeAddr:       *probeAddr,
		// On a real cluster an installed operator may run: this process leads only
		// when none does (the Deployment's Lease), never beside it, which would start
		// builds twice.
		LeaderElection: !embeddedPlane,
		// The installed operator's Lease: config/ runs it with the default one; an
		// install with --leader-election-id of its own needs LEADER_ELECTION_ID.
		LeaderElectionID: envOr("LEADER_ELECTION_ID", operator.LeaderElectionID),
		// The embedded plane's sample repository is on loopback; on a cluster,
		// loopback is refused as by the installed operator.
		AllowLoopback: embeddedPlane,
	}
	if err := ensureNamespace(ctx, cfg, o.SystemNamespace); err != nil {
		return err
	}
	mgr, err := operator.New(ctx, cfg, o)
	if err != nil {
		return err
	}
	if embeddedPlane {
		// Something to look at: a sample function in a git repository served here.
		root, err := repoRoot()
		if err != nil {
			return err
		}
		dir, err := os.MkdirTemp("", "func-operator-sample-")
		if err != nil {
			return err
		}
		defer func() { _ = os.RemoveAll(dir) }()
		url, stopServer, err := serveSample(dir)
		if err != nil {
			return err
		}
		defer stopServer()
		if err := applySample(ctx, cfg, root, url); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "run: sample Function default/sample created from %s; watch it with:\n\n    kubectl get functions -A -w\n\n", url)
	}
	fmt.Fprintf(os.Stderr, "run: operator running; metrics on http://%s/metrics, Ctrl-C stops it\n", o.MetricsAddr)
	return mgr.Start(ctx)
}

// clusterConfig returns the config of the cluster to run on: the configured one
// when onCluster, else an embedded control plane, with the function that stops it.
// A configured cluster is never used unless asked for: an admin who types make run
// beside an installed operator must not start a second one by accident.
func clusterConfig(onCluster bool) (*rest.Config, func(), error) {
	if !onCluster {
		if clusterConfigured() {
			fmt.Fprintln(os.Stderr, "run: a cluster is configured, but make run uses an embedded control plane; make run CLUSTER=1 runs against the configured cluster")
		}
		return startControlPlane()
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("reading the configured cluster's config: %w", err)
	}
	fmt.Fprintf(os.Stderr, "run: using the cluster at %s (from KUBECONFIG or ~/.kube/config); this process acts only while it holds "+
		"the leader election Lease %s/%s, so not while an installed operator leads\n",
		cfg.Host, envOr("SYSTEM_NAMESPACE", "func-operator"), envOr("LEADER_ELECTION_ID", operator.LeaderElectionID))
	return cfg, nil, nil
}

// startControlPlane starts the embedded control plane (devenv.StartControlPlane)
// and writes a kubeconfig for kubectl.
func startControlPlane() (*rest.Config, func(), error) {
	root, err := repoRoot()
	if err != nil {
		return nil, nil, err
	}
	env, err := devenv.StartControlPlane(root, &prefixWriter{prefix: "run: ", w: os.Stderr})
	if err != nil {
		return nil, nil, err
	}
	stop := func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "run: stopping the control plane:", err)
		}
	}
	path := filepath.Join(root, "bin", "embedded.kubeconfig")
	if err := devenv.WriteKubeconfig(env, path); err != nil {
		stop()
		return nil, nil, err
	}
	fmt.Fprintf(os.Stderr, "run: embedded control plane up; use it with:\n\n    export KUBECONFIG=%s\n\n", path)
	return env.Config, stop, nil
}

// prefixWriter writes each write of w's prefixed.
type prefixWriter struct {
	prefix string
	w      io.Writer
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	if _, err := fmt.Fprintf(p.w, "%s%s", p.prefix, b); err != nil {
		return 0, err
	}
	return len(b), nil
}

func ensureNamespace(ctx context.Context, cfg *rest.Config, name string) error {
	return devenv.EnsureNamespace(ctx, cfg, name)
}

// clusterConfigured is true when KUBECONFIG, ~/.kube/config or an in-cluster
// service account names a cluster.
func clusterConfigured() bool {
	if os.Getenv("KUBECONFIG") != "" || os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		return true
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return false
	}
	_, err = os.Stat(filepath.Join(home, ".kube", "config"))
	return err == nil
}

func repoRoot() (string, error) { return devenv.RepoRoot() }

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

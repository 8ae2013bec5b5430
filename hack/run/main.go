// Command run starts func-operator from source for development: on an embedded
// control plane, or, with -cluster, against the cluster in KUBECONFIG (or
// ~/.kube/config), taking part in the installed operator's leader election there.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/fnops/func-operator/pkg/operator"
	fotenv "github.com/fnops/func-operator/test/envtest"
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
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
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

// startControlPlane starts etcd and kube-apiserver (built by hack/control-plane.sh)
// with the operator's CRDs, and writes a kubeconfig for kubectl.
func startControlPlane() (*rest.Config, func(), error) {
	root, err := repoRoot()
	if err != nil {
		return nil, nil, err
	}
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		fmt.Fprintln(os.Stderr, "run: no cluster configured; building (once, cached) the embedded control plane")
		cmd := exec.Command(filepath.Join(root, "hack", "control-plane.sh"))
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, nil, fmt.Errorf("building the control plane: %w", err)
		}
		assets = strings.TrimSpace(string(out))
	}
	if err := os.Setenv(fotenv.AssetsEnv, assets); err != nil {
		return nil, nil, err
	}
	// The same control plane as the tests, Tekton's CRDs without their conversion webhook.
	env, err := fotenv.Start(fotenv.KnativeServingCRDs, fotenv.KnativeEventingCRDs, fotenv.TektonCRDs)
	if err != nil {
		return nil, nil, fmt.Errorf("starting the embedded control plane: %w", err)
	}
	cfg := env.Config
	stop := func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "run: stopping the control plane:", err)
		}
	}
	user, err := env.AddUser(envtest.User{Name: "developer", Groups: []string{"system:masters"}})
	if err == nil {
		err = writeKubeconfig(root, user)
	}
	if err != nil {
		stop()
		return nil, nil, err
	}
	return cfg, stop, nil
}

func writeKubeconfig(root string, user *envtest.AuthenticatedUser) error {
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return fmt.Errorf("writing the kubeconfig: %w", err)
	}
	path := filepath.Join(root, "bin", "embedded.kubeconfig")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("writing the kubeconfig: %w", err)
	}
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		return fmt.Errorf("writing the kubeconfig: %w", err)
	}
	fmt.Fprintf(os.Stderr, "run: embedded control plane up; use it with:\n\n    export KUBECONFIG=%s\n\n", path)
	return nil
}

func ensureNamespace(ctx context.Context, cfg *rest.Config, name string) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating a client: %w", err)
	}
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
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

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "hack", "control-plane.sh")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run from inside the func-operator checkout")
		}
		dir = parent
	}
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

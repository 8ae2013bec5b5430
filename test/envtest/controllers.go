package envtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ControllerManagerBinary is the kube-controller-manager of the control plane's
// binaries ($KUBEBUILDER_ASSETS, or StartFrom's), which hack/control-plane.sh builds
// with the rest of the control plane.
const ControllerManagerBinary = "kube-controller-manager"

// Names of kube-controller-manager's controllers (its --controllers flag) that
// StartControllers knows when each is ready.
const (
	// GarbageCollectorController deletes the dependents of a deleted owner.
	GarbageCollectorController = "garbagecollector"
	// PVCProtectionController removes a deleted PVC's kubernetes.io/pvc-protection
	// finalizer once no running pod uses it.
	PVCProtectionController = "pvc-protection"
	// DeploymentController makes a Deployment's ReplicaSets, rolls them and writes
	// its status (availableReplicas, the Available and Progressing conditions).
	DeploymentController = "deployment"
	// ReplicaSetController makes a ReplicaSet's pods and counts the ready and
	// available ones in its status.
	ReplicaSetController = "replicaset"
	// ClusterRoleAggregationController folds the rules of ClusterRoles labelled
	// rbac.authorization.k8s.io/aggregate-to-<role> into that role (admin, edit, view).
	ClusterRoleAggregationController = "clusterrole-aggregation"
)

// WorkloadControllers are the controllers that drive Deployments as on a cluster,
// but for the kubelet's part (SimulateKubelet): deployment and replicaset, and the
// garbage collector (GarbageCollectorControllers), so that what a Deployment owns
// (its ReplicaSets and pods, the Services and HTTPScaledObjects func's raw and keda
// deployers write) goes with it.
func WorkloadControllers() []string {
	return append(GarbageCollectorControllers(), DeploymentController, ReplicaSetController)
}

// controllerReadyLines are what kube-controller-manager logs (at --v=2), matched
// without case, once a controller has synced the caches it works from. The
// deployment and replicaset controllers of 1.35 log only "Caches are synced", with no
// controller's name: a probe tells when they work (probeWorkloadControllers). A
// controller with neither is ready when the process has started.
var controllerReadyLines = map[string]string{
	// "All resource monitors have synced" up to Kubernetes 1.31, "Garbage collector:
	// all resource monitors have synced" in 1.35: the collector watches every
	// resource discovery listed at its start. Its workers resume a few milliseconds
	// later, with whatever the watches saw queued.
	GarbageCollectorController: "all resource monitors have synced",
}

const (
	// controllersReadyTimeout bounds the start: for the garbage collector,
	// discovery, then a list and watch of every deletable resource.
	controllersReadyTimeout = 60 * time.Second
	// controllersStopTimeout is how long kube-controller-manager may take to stop on
	// SIGTERM before it is killed.
	controllersStopTimeout = 10 * time.Second
	// controllersLogTail is how many lines of its log an error or a failed test shows.
	controllersLogTail = 60
)

// controllerManager is a running kube-controller-manager.
type controllerManager struct {
	controllers []string
	cmd         *exec.Cmd
	dir         string // kubeconfig and log
	logPath     string
	exited      chan struct{}
	waitErr     error // set before exited closes

	once    sync.Once
	stopErr error
}

// StartControllers starts, against the control plane,
// $KUBEBUILDER_ASSETS/kube-controller-manager with only the controllers named (e.g.
// WorkloadControllers, GarbageCollectorControllers), as the admin user of e.Config.
// It returns once each has synced its caches (see StartGarbageCollector for the
// garbage collector's). stop stops it (SIGTERM, SIGKILL after 10s), waits for it, and
// fails when it had exited before; it may be called more than once.
func (e *Environment) StartControllers(controllers ...string) (stop func() error, err error) {
	dir, err := os.MkdirTemp("", "func-operator-kcm-")
	if err != nil {
		return nil, fmt.Errorf("creating kube-controller-manager's directory: %w", err)
	}
	cm, err := e.startControllerManager(dir, controllers)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if err := e.waitReady(cm, controllersReadyTimeout); err != nil {
		_ = cm.stop()
		return nil, err
	}
	return cm.stop, nil
}

// StartControllersT starts the controllers named for one test (StartControllers)
// and stops them when the test ends, after logging the last of
// kube-controller-manager's log when the test failed. The stop it returns stops them
// sooner.
func (e *Environment) StartControllersT(t testing.TB, controllers ...string) (stop func() error) {
	t.Helper()
	cm, err := e.startControllerManager(t.TempDir(), controllers)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the last of kube-controller-manager's log (%s, pid %d):\n%s", cm.name(), cm.cmd.Process.Pid, cm.tail())
		}
		if err := cm.stop(); err != nil {
			t.Error(err)
		}
	})
	if err := e.waitReady(cm, controllersReadyTimeout); err != nil {
		t.Fatal(err)
	}
	return cm.stop
}

// startControllerManager starts kube-controller-manager with its kubeconfig and log
// in dir, which stop removes.
func (e *Environment) startControllerManager(dir string, controllers []string) (*controllerManager, error) {
	if len(controllers) == 0 {
		return nil, errors.New("kube-controller-manager needs at least one controller to run")
	}
	for _, c := range controllers {
		if c == "" || c == "*" || strings.HasPrefix(c, "-") || strings.Contains(c, ",") {
			return nil, fmt.Errorf("controller %q: name each controller to run (no '*', '-name' or lists)", c)
		}
	}
	bin := filepath.Join(e.assets, ControllerManagerBinary)
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("the controllers need %s: rebuild the control plane with hack/control-plane.sh: %w", ControllerManagerBinary, err)
	}
	kubeconfig, err := Kubeconfig(e.Config)
	if err != nil {
		return nil, err
	}
	kubeconfigPath := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		return nil, fmt.Errorf("writing kube-controller-manager's kubeconfig: %w", err)
	}
	logPath := filepath.Join(dir, "kube-controller-manager.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("creating kube-controller-manager's log: %w", err)
	}
	cmd := exec.Command(bin, controllerManagerArgs(kubeconfigPath, controllers)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	cm := &controllerManager{controllers: slices.Clone(controllers), cmd: cmd, dir: dir, logPath: logPath, exited: make(chan struct{})}
	go func() {
		cm.waitErr = cmd.Wait()
		_ = logFile.Close()
		close(cm.exited)
	}()
	return cm, nil
}

// controllerManagerArgs are kube-controller-manager's flags for the controllers
// named alone, with the kubeconfig given.
func controllerManagerArgs(kubeconfig string, controllers []string) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		// Without '*' in the list, only the controllers named run ('-*' is refused:
		// '*' is no controller's name). The service account token controller, always
		// started first, is off too: it is not named (and has no signing key here).
		"--controllers=" + strings.Join(controllers, ","),
		// One process, and no Lease to acquire (nor wait 15s for after a restart).
		"--leader-elect=false",
		// No HTTPS server (healthz, metrics): 0 turns it off, and with it the
		// delegated authentication and authorization that would read kube-system's
		// extension-apiserver-authentication ConfigMap.
		"--secure-port=0",
		// The controllers use the kubeconfig's admin, not ServiceAccount tokens
		// (which would need the token controller and a signing key).
		"--use-service-account-credentials=false",
		// Workers deleting dependents (20 by default): a test has a handful.
		"--concurrent-gc-syncs=5",
		// The collector's deletions take 2 requests each, at twice this rate.
		"--kube-api-qps=100", "--kube-api-burst=200",
		// Level 2 logs each item the collector processes and deletes, and each
		// Deployment and ReplicaSet sync, for failures.
		"--v=2",
	}
}

// waitReady waits for the controllers of cm to work: their ready lines in its log,
// then the probe of the workload controllers among them.
func (e *Environment) waitReady(cm *controllerManager, timeout time.Duration) error {
	began := time.Now()
	if err := cm.waitReadyLines(timeout); err != nil {
		return err
	}
	deployment, replicaSet := slices.Contains(cm.controllers, DeploymentController), slices.Contains(cm.controllers, ReplicaSetController)
	if !deployment && !replicaSet {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout-time.Since(began))
	defer cancel()
	if err := probeWorkloadControllers(ctx, e.Config, deployment, replicaSet, cm.exited); err != nil {
		return fmt.Errorf("kube-controller-manager (%s) was not ready: %w; the last of its log:\n%s", cm.name(), err, cm.tail())
	}
	return nil
}

// name says which controllers it runs, for messages.
func (cm *controllerManager) name() string { return strings.Join(cm.controllers, ",") }

// waitReadyLines waits for every controller with a ready line to log it, and fails
// if kube-controller-manager exits first or timeout passes.
func (cm *controllerManager) waitReadyLines(timeout time.Duration) error {
	var lines []string
	for _, c := range cm.controllers {
		if line, ok := controllerReadyLines[c]; ok {
			lines = append(lines, strings.ToLower(line))
		}
	}
	deadline := time.After(timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		missing := lines
		if content, err := os.ReadFile(cm.logPath); err == nil {
			content = bytes.ToLower(content)
			missing = slices.DeleteFunc(slices.Clone(lines), func(l string) bool { return bytes.Contains(content, []byte(l)) })
		}
		if len(missing) == 0 {
			return nil
		}
		select {
		case <-cm.exited:
			return fmt.Errorf("kube-controller-manager (%s) exited before it was ready: %v; the last of its log:\n%s", cm.name(), cm.waitErr, cm.tail())
		case <-deadline:
			return fmt.Errorf("kube-controller-manager (%s) was not ready within %v (no %q in its log); the last of its log:\n%s",
				cm.name(), timeout, missing, cm.tail())
		case <-tick.C:
		}
	}
}

// stop stops kube-controller-manager by its pid: SIGTERM, then SIGKILL after
// controllersStopTimeout. It fails when the process had exited before; later calls
// return what the first did.
func (cm *controllerManager) stop() error {
	cm.once.Do(func() {
		select {
		case <-cm.exited:
			cm.stopErr = fmt.Errorf("kube-controller-manager (%s) had exited: %v; the last of its log:\n%s", cm.name(), cm.waitErr, cm.tail())
		default:
			if err := cm.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
				cm.stopErr = fmt.Errorf("stopping kube-controller-manager: %w", err)
			}
			select {
			case <-cm.exited:
			case <-time.After(controllersStopTimeout):
				_ = cm.cmd.Process.Kill()
				<-cm.exited
			}
		}
		if err := os.RemoveAll(cm.dir); err != nil && cm.stopErr == nil {
			cm.stopErr = err
		}
	})
	return cm.stopErr
}

// tail returns the last controllersLogTail lines of the log.
func (cm *controllerManager) tail() string {
	content, err := os.ReadFile(cm.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(content), "\n"), "\n")
	if len(lines) > controllersLogTail {
		lines = lines[len(lines)-controllersLogTail:]
	}
	return strings.Join(lines, "\n")
}

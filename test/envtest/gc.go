package envtest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ControllerManagerBinary is the kube-controller-manager of the control plane's
// binaries ($KUBEBUILDER_ASSETS, or StartFrom's), which hack/control-plane.sh builds
// with the rest of the control plane.
const ControllerManagerBinary = "kube-controller-manager"

// GarbageCollectorResync is how often the garbage collector asks discovery for the
// resources to watch, a period kube-controller-manager fixes (no flag sets it). A
// dependent of a CRD installed after StartGarbageCollector, or owned by one, is
// collected only once its resource is watched: up to this long after the install.
// Stopping the collector and starting it again (under a second) is quicker.
const GarbageCollectorResync = 30 * time.Second

const (
	// gcReadyTimeout bounds the start: discovery, then a list and watch of every
	// deletable resource.
	gcReadyTimeout = 60 * time.Second
	// gcStopTimeout is how long kube-controller-manager may take to stop on SIGTERM
	// before it is killed.
	gcStopTimeout = 10 * time.Second
	// gcReadyLine is what kube-controller-manager logs (at any -v) once the garbage
	// collector watches every resource discovery listed at its start, matched
	// without case: "All resource monitors have synced" up to Kubernetes 1.31,
	// "Garbage collector: all resource monitors have synced" in 1.35. Its workers
	// resume a few milliseconds later, with whatever the watches saw queued.
	gcReadyLine = "all resource monitors have synced"
	// gcLogTail is how many lines of its log an error or a failed test shows.
	gcLogTail = 60
)

// garbageCollector is a running kube-controller-manager.
type garbageCollector struct {
	cmd     *exec.Cmd
	dir     string // kubeconfig and log
	logPath string
	exited  chan struct{}
	waitErr error // set before exited closes

	once    sync.Once
	stopErr error
}

// StartGarbageCollector starts, against the control plane, the Kubernetes garbage
// collector: $KUBEBUILDER_ASSETS/kube-controller-manager with only its
// garbagecollector controller, as the admin user of e.Config. It returns once the
// collector watches every resource discovery lists (CRDs included: install them
// before, or see GarbageCollectorResync for one installed after). Deleting an owner
// then deletes, in the background, every object whose ownerReferences name it (by
// UID) and no other live owner. stop stops it (SIGTERM, SIGKILL after 10s), waits for
// it, and fails when it had exited before; it may be called more than once.
func (e *Environment) StartGarbageCollector() (stop func() error, err error) {
	dir, err := os.MkdirTemp("", "func-operator-gc-")
	if err != nil {
		return nil, fmt.Errorf("creating the garbage collector's directory: %w", err)
	}
	gc, err := e.startGarbageCollector(dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if err := gc.waitReady(gcReadyTimeout); err != nil {
		_ = gc.stop()
		return nil, err
	}
	return gc.stop, nil
}

// StartGarbageCollectorT starts the garbage collector for one test
// (StartGarbageCollector) and stops it when the test ends, after logging the last of
// its log when the test failed. The stop it returns stops it sooner.
func (e *Environment) StartGarbageCollectorT(t testing.TB) (stop func() error) {
	t.Helper()
	gc, err := e.startGarbageCollector(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the last of kube-controller-manager's log (garbage collector, pid %d):\n%s", gc.cmd.Process.Pid, gc.tail())
		}
		if err := gc.stop(); err != nil {
			t.Error(err)
		}
	})
	if err := gc.waitReady(gcReadyTimeout); err != nil {
		t.Fatal(err)
	}
	return gc.stop
}

// startGarbageCollector starts kube-controller-manager with its kubeconfig and log in
// dir, which stop removes.
func (e *Environment) startGarbageCollector(dir string) (*garbageCollector, error) {
	bin := filepath.Join(e.assets, ControllerManagerBinary)
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("the garbage collector needs %s: rebuild the control plane with hack/control-plane.sh: %w", ControllerManagerBinary, err)
	}
	kubeconfig, err := Kubeconfig(e.Config)
	if err != nil {
		return nil, err
	}
	kubeconfigPath := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		return nil, fmt.Errorf("writing the garbage collector's kubeconfig: %w", err)
	}
	logPath := filepath.Join(dir, "kube-controller-manager.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("creating the garbage collector's log: %w", err)
	}
	cmd := exec.Command(bin, garbageCollectorArgs(kubeconfigPath)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	gc := &garbageCollector{cmd: cmd, dir: dir, logPath: logPath, exited: make(chan struct{})}
	go func() {
		gc.waitErr = cmd.Wait()
		_ = logFile.Close()
		close(gc.exited)
	}()
	return gc, nil
}

// garbageCollectorArgs are kube-controller-manager's flags for a garbage collector
// alone, with the kubeconfig given.
func garbageCollectorArgs(kubeconfig string) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		// Without '*' in the list, only the controllers named run ('-*' is refused:
		// '*' is no controller's name). The service account token controller, always
		// started first, is off too: it is not named (and has no signing key here).
		// pvc-protection removes the kubernetes.io/pvc-protection finalizer of a
		// deleted PVC no running pod uses, as on a cluster: without it, a PVC the
		// collector deletes stays Terminating.
		"--controllers=garbagecollector,pvc-protection",
		// One process, and no Lease to acquire (nor wait 15s for after a restart).
		"--leader-elect=false",
		// No HTTPS server (healthz, metrics): 0 turns it off, and with it the
		// delegated authentication and authorization that would read kube-system's
		// extension-apiserver-authentication ConfigMap.
		"--secure-port=0",
		// The garbage collector uses the kubeconfig's admin, not a ServiceAccount
		// token (which would need the token controller and a signing key).
		"--use-service-account-credentials=false",
		// Workers deleting dependents (20 by default): a test has a handful.
		"--concurrent-gc-syncs=5",
		// The collector's deletions take 2 requests each, at twice this rate.
		"--kube-api-qps=100", "--kube-api-burst=200",
		// Level 2 logs each item the collector processes and deletes, for failures.
		"--v=2",
	}
}

// waitReady waits for the garbage collector to watch every resource, and fails if
// kube-controller-manager exits first or timeout passes.
func (gc *garbageCollector) waitReady(timeout time.Duration) error {
	deadline := time.After(timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if content, err := os.ReadFile(gc.logPath); err == nil && bytes.Contains(bytes.ToLower(content), []byte(gcReadyLine)) {
			return nil
		}
		select {
		case <-gc.exited:
			return fmt.Errorf("kube-controller-manager (garbage collector) exited before it was ready: %v; the last of its log:\n%s", gc.waitErr, gc.tail())
		case <-deadline:
			return fmt.Errorf("the garbage collector was not ready within %v (no %q in its log); the last of kube-controller-manager's log:\n%s",
				timeout, gcReadyLine, gc.tail())
		case <-tick.C:
		}
	}
}

// stop stops kube-controller-manager by its pid: SIGTERM, then SIGKILL after
// gcStopTimeout. It fails when the process had exited before; later calls return
// what the first did.
func (gc *garbageCollector) stop() error {
	gc.once.Do(func() {
		select {
		case <-gc.exited:
			gc.stopErr = fmt.Errorf("kube-controller-manager (garbage collector) had exited: %v; the last of its log:\n%s", gc.waitErr, gc.tail())
		default:
			if err := gc.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
				gc.stopErr = fmt.Errorf("stopping kube-controller-manager: %w", err)
			}
			select {
			case <-gc.exited:
			case <-time.After(gcStopTimeout):
				_ = gc.cmd.Process.Kill()
				<-gc.exited
			}
		}
		if err := os.RemoveAll(gc.dir); err != nil && gc.stopErr == nil {
			gc.stopErr = err
		}
	})
	return gc.stopErr
}

// tail returns the last gcLogTail lines of the log.
func (gc *garbageCollector) tail() string {
	content, err := os.ReadFile(gc.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(content), "\n"), "\n")
	if len(lines) > gcLogTail {
		lines = lines[len(lines)-gcLogTail:]
	}
	return strings.Join(lines, "\n")
}

// Kubeconfig writes cfg as a kubeconfig, for a process the tests start (the garbage
// collector, the Tekton controller): the server and its CA, and whichever credentials
// cfg has (client certificate, token, basic auth, exec or auth provider), inline or
// as files, with its impersonation.
func Kubeconfig(cfg *rest.Config) ([]byte, error) {
	server, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("the API server's URL: %w", err)
	}
	const name = "envtest"
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{
		Server:                   server.String(),
		TLSServerName:            cfg.ServerName,
		InsecureSkipTLSVerify:    cfg.Insecure,
		CertificateAuthority:     cfg.CAFile,
		CertificateAuthorityData: cfg.CAData,
	}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{
		ClientCertificate:     cfg.CertFile,
		ClientCertificateData: cfg.CertData,
		ClientKey:             cfg.KeyFile,
		ClientKeyData:         cfg.KeyData,
		Token:                 cfg.BearerToken,
		TokenFile:             cfg.BearerTokenFile,
		Username:              cfg.Username,
		Password:              cfg.Password,
		Impersonate:           cfg.Impersonate.UserName,
		ImpersonateUID:        cfg.Impersonate.UID,
		ImpersonateGroups:     cfg.Impersonate.Groups,
		ImpersonateUserExtra:  cfg.Impersonate.Extra,
		AuthProvider:          cfg.AuthProvider,
		Exec:                  cfg.ExecProvider,
	}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	kc.CurrentContext = name
	content, err := clientcmd.Write(*kc)
	if err != nil {
		return nil, fmt.Errorf("writing a kubeconfig: %w", err)
	}
	return content, nil
}

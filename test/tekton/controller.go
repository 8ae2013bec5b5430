// Package tekton runs the real Tekton Pipelines controller against envtest, with a kubelet simulation, for tests.
package tekton

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/test/envtest"
)

// ControllerEnv names the Tekton controller binary that hack/tekton-controller.sh
// builds; `make test` sets it.
const ControllerEnv = "FUNC_OPERATOR_TEKTON_CONTROLLER"

// SystemNamespace is the namespace the controller reads its ConfigMaps from, as
// Tekton's release installs it.
const SystemNamespace = "tekton-pipelines"

// tektonModule is the Go module whose config/config-*.yaml are the controller's
// ConfigMaps.
const tektonModule = "github.com/tektoncd/pipeline"

// featureFlags are the values of the feature-flags ConfigMap that differ from
// Tekton's release, and why.
var featureFlags = map[string]string{
	// envtest runs no StatefulSet controller, so an affinity assistant (a
	// StatefulSet per PipelineRun with a PVC workspace, as func's) would never
	// start. (Tekton v1 dropped the older disable-affinity-assistant flag.)
	"coschedule": "disabled",
}

// releaseEnvSkipped are the variables of the release's controller container that
// are not set here, and why: they name files of volumes the release mounts
// (config-registry-cert, the image's CA bundle), which do not exist here.
var releaseEnvSkipped = map[string]bool{"SSL_CERT_FILE": true, "SSL_CERT_DIR": true}

// stopTimeout is how long the controller may take to stop on SIGTERM before it
// is killed.
const stopTimeout = 10 * time.Second

// startTimeout bounds the controller's start, until its controllers run.
const startTimeout = 60 * time.Second

// startedMarker is what knative.dev/pkg's sharedmain logs once the informers
// have synced, just before it starts the reconcilers.
const startedMarker = "Starting controllers..."

// Controller is a running Tekton Pipelines controller process.
type Controller struct {
	cmd *exec.Cmd
	// LogFile holds the controller's stdout and stderr.
	LogFile string
	// dir holds the kubeconfig, and the log when removeDir is set.
	dir       string
	removeDir bool
	// Ports the controller listens on (all interfaces), each free when it started.
	MetricsPort, ProbesPort, ProfilingPort int

	exited  chan struct{}
	waitErr error
	stop    sync.Once
	stopErr error
}

// StartController starts the Tekton controller of $FUNC_OPERATOR_TEKTON_CONTROLLER
// against the API server of cfg, as Tekton's release runs it (the arguments and
// environment of the container of config/controller.yaml, read from the module
// go.mod pins; see releaseCommand), and returns once its reconcilers run. It first
// creates the namespace tekton-pipelines and the controller's ConfigMaps there:
// those of Tekton's config/config-*.yaml, with the affinity assistant off (see
// featureFlags). No resolvers deployment runs: a remote reference (hub, bundles,
// git…) stays unresolved. The controller logs to tekton-controller.log in logDir, or
// in a directory of its own that Stop removes when logDir is empty; it runs without
// leader election (-disable-ha), one replica.
//
// It serves its metrics (on 127.0.0.1), probes and profiling on ports free when it
// starts, so that the controllers of test processes running at once do not clash.
// knative.dev/pkg's sharedmain serves a second probes server on port 8080 that no
// setting moves: when that port is taken (by another controller), sharedmain logs
// "address already in use" only when it stops, and the reconcilers run on — as in
// Tekton's release, whose own probes server takes 8080 first.
func StartController(cfg *rest.Config, logDir string) (*Controller, error) {
	bin := os.Getenv(ControllerEnv)
	if bin == "" {
		return nil, fmt.Errorf("%s is not set: run `make test`, or export %s=$(hack/tekton-controller.sh)", ControllerEnv, ControllerEnv)
	}
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%s: %w (build it with hack/tekton-controller.sh)", ControllerEnv, err)
	}
	if err := installConfig(context.Background(), cfg); err != nil {
		return nil, err
	}
	c := &Controller{exited: make(chan struct{})}
	if logDir == "" {
		dir, err := os.MkdirTemp("", "tekton-controller-")
		if err != nil {
			return nil, fmt.Errorf("creating the controller's directory: %w", err)
		}
		logDir, c.removeDir = dir, true
	}
	c.dir, c.LogFile = logDir, filepath.Join(logDir, "tekton-controller.log")
	kubeconfig := filepath.Join(logDir, "tekton-controller.kubeconfig")
	content, err := envtest.Kubeconfig(cfg)
	if err == nil {
		err = os.WriteFile(kubeconfig, content, 0o600)
	}
	if err != nil {
		c.cleanup()
		return nil, fmt.Errorf("writing the controller's kubeconfig: %w", err)
	}
	ports, err := freePorts(3)
	if err != nil {
		c.cleanup()
		return nil, err
	}
	c.MetricsPort, c.ProbesPort, c.ProfilingPort = ports[0], ports[1], ports[2]
	logFile, err := os.Create(c.LogFile)
	if err != nil {
		c.cleanup()
		return nil, fmt.Errorf("creating the controller's log: %w", err)
	}
	// The child has its own descriptor once started; ours is closed either way.
	defer func() { _ = logFile.Close() }()

	release, err := releaseCommand()
	if err != nil {
		c.cleanup()
		return nil, err
	}
	args := append([]string{"-kubeconfig", kubeconfig, "-disable-ha"}, release.args...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), release.env...)
	cmd.Env = append(cmd.Env,
		// Ports: knative.dev/pkg observability/metrics/prometheus (METRICS_PROMETHEUS_PORT,
		// METRICS_PROMETHEUS_HOST), Tekton's cmd/controller/main.go (PROBES_PORT) and
		// knative.dev/pkg observability/runtime (PROFILING_PORT).
		"METRICS_PROMETHEUS_PORT="+strconv.Itoa(c.MetricsPort),
		"METRICS_PROMETHEUS_HOST=127.0.0.1",
		"PROBES_PORT="+strconv.Itoa(c.ProbesPort),
		"PROFILING_PORT="+strconv.Itoa(c.ProfilingPort),
	)
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		c.cleanup()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	c.cmd = cmd
	go func() {
		c.waitErr = cmd.Wait()
		close(c.exited)
	}()
	if err := c.waitStarted(); err != nil {
		tail := c.LogTail(40)
		_ = c.Stop()
		return nil, fmt.Errorf("%w; the controller's log ends with:\n%s", err, tail)
	}
	return c, nil
}

// StartControllerT starts the controller (StartController) for one test, logging
// to a directory of the test's, and stops it when the test ends. The end of its
// log is in the test's output when the test failed.
func StartControllerT(t testing.TB, cfg *rest.Config) *Controller {
	t.Helper()
	c, err := StartController(cfg, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the Tekton controller's log ends with:\n%s", c.LogTail(60))
		}
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// waitStarted waits until the controller's reconcilers run, or it exits.
func (c *Controller) waitStarted() error {
	deadline := time.After(startTimeout)
	for {
		content, err := os.ReadFile(c.LogFile)
		if err != nil {
			return fmt.Errorf("reading the controller's log: %w", err)
		}
		if bytes.Contains(content, []byte(startedMarker)) {
			return nil
		}
		select {
		case <-c.exited:
			return fmt.Errorf("the Tekton controller exited while starting: %v", c.waitErr)
		case <-deadline:
			return fmt.Errorf("the Tekton controller did not start its reconcilers within %s", startTimeout)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Pid returns the controller process's id.
func (c *Controller) Pid() int { return c.cmd.Process.Pid }

// Exited reports whether the controller process has ended, and how.
func (c *Controller) Exited() (bool, error) {
	select {
	case <-c.exited:
		return true, c.waitErr
	default:
		return false, nil
	}
}

// Stop stops the controller: SIGTERM, then SIGKILL after stopTimeout. It removes
// the kubeconfig, and the log when StartController made its directory.
func (c *Controller) Stop() error {
	c.stop.Do(func() {
		if c.cmd != nil {
			c.stopErr = c.terminate()
		}
		c.cleanup()
	})
	return c.stopErr
}

// terminate ends the process by its pid and waits for it.
func (c *Controller) terminate() error {
	select {
	case <-c.exited:
		return nil // it had exited; Exited tells how
	default:
	}
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stopping the Tekton controller (pid %d): %w", c.cmd.Process.Pid, err)
	}
	select {
	case <-c.exited:
		return nil
	case <-time.After(stopTimeout):
	}
	if err := c.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("killing the Tekton controller (pid %d): %w", c.cmd.Process.Pid, err)
	}
	<-c.exited
	return nil
}

// cleanup removes what StartController wrote.
func (c *Controller) cleanup() {
	if c.dir == "" {
		return
	}
	if c.removeDir {
		_ = os.RemoveAll(c.dir)
		return
	}
	_ = os.Remove(filepath.Join(c.dir, "tekton-controller.kubeconfig"))
}

// LogTail returns the last n lines of the controller's log.
func (c *Controller) LogTail(n int) string {
	content, err := os.ReadFile(c.LogFile)
	if err != nil {
		return fmt.Sprintf("(reading %s: %v)", c.LogFile, err)
	}
	lines := strings.Split(strings.TrimRight(string(content), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// freePorts returns n distinct ports free on every interface now.
func freePorts(n int) ([]int, error) {
	var ports []int
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", ":0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// installConfig creates the namespace tekton-pipelines and the controller's
// ConfigMaps; those that exist are left as they are.
func installConfig(ctx context.Context, cfg *rest.Config) error {
	cms, err := configMaps()
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return fmt.Errorf("creating a client: %w", err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: SystemNamespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", SystemNamespace, err)
	}
	for _, cm := range cms {
		if err := c.Create(ctx, cm.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
		}
	}
	return nil
}

// configMaps returns the ConfigMaps of Tekton's config/config-*.yaml, read once,
// in SystemNamespace and with featureFlags applied.
var configMaps = sync.OnceValues(func() ([]*corev1.ConfigMap, error) {
	dir, err := moduleDir(tektonModule)
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(dir, "config", "config-*.yaml"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no config/config-*.yaml in %s (%v)", dir, err)
	}
	objs, err := envtest.Read(files...)
	if err != nil {
		return nil, err
	}
	var cms []*corev1.ConfigMap
	flagsFound := false
	for _, o := range objs {
		if o.GetKind() != "ConfigMap" {
			continue
		}
		cm := &corev1.ConfigMap{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, cm); err != nil {
			return nil, fmt.Errorf("decoding ConfigMap %s: %w", o.GetName(), err)
		}
		cm.Namespace = SystemNamespace
		if cm.Name == "feature-flags" {
			flagsFound = true
			if cm.Data == nil {
				cm.Data = map[string]string{}
			}
			for k, v := range featureFlags {
				cm.Data[k] = v
			}
		}
		cms = append(cms, cm)
	}
	if !flagsFound {
		return nil, fmt.Errorf("no ConfigMap feature-flags in %s/config", dir)
	}
	return cms, nil
})

// moduleDir returns the directory of a module the repository requires, as the
// go command resolves it from the repository's go.mod.
func moduleDir(module string) (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module)
	cmd.Dir = envtest.RepoRoot()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list -m %s: %w: %s", module, err, stderr.String())
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", fmt.Errorf("go list -m %s: the module is not in the module cache", module)
	}
	return dir, nil
}

// releaseRun is how Tekton's release runs the controller: its container's arguments
// and environment.
type releaseRun struct {
	args, env []string
}

// imageFlagValue is what every image flag of the controller is given: no container
// runs, so any names do (the flags are required).
func imageFlagValue(flagName string) string {
	return "tekton-test.invalid/" + flagName + ":simulated"
}

// releaseCommand reads the controller's container from Tekton's config/controller.yaml
// (the module go.mod pins) and returns its arguments, with every image flag
// (-entrypoint-image, -nop-image, ..., -shell-image-win) given imageFlagValue, and
// its environment: the literal values (e.g. KUBERNETES_MIN_VERSION, the lowest
// Kubernetes the release accepts, and the ConfigMaps' names) but releaseEnvSkipped,
// and SYSTEM_NAMESPACE, which the release takes from the Pod's namespace.
var releaseCommand = sync.OnceValues(func() (releaseRun, error) {
	dir, err := moduleDir(tektonModule)
	if err != nil {
		return releaseRun{}, err
	}
	file := filepath.Join(dir, "config", "controller.yaml")
	objs, err := envtest.Read(file)
	if err != nil {
		return releaseRun{}, err
	}
	var ctr *corev1.Container
	for _, o := range objs {
		if o.GetKind() != "Deployment" || o.GetName() != "tekton-pipelines-controller" {
			continue
		}
		d := &appsv1.Deployment{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, d); err != nil {
			return releaseRun{}, fmt.Errorf("decoding the controller's Deployment of %s: %w", file, err)
		}
		if d.Namespace != SystemNamespace {
			return releaseRun{}, fmt.Errorf("%s: the controller runs in namespace %q, not %s", file, d.Namespace, SystemNamespace)
		}
		for i := range d.Spec.Template.Spec.Containers {
			if d.Spec.Template.Spec.Containers[i].Name == "tekton-pipelines-controller" {
				ctr = &d.Spec.Template.Spec.Containers[i]
			}
		}
	}
	if ctr == nil {
		return releaseRun{}, fmt.Errorf("%s: no container tekton-pipelines-controller in Deployment tekton-pipelines-controller", file)
	}
	var run releaseRun
	images := 0
	for i := 0; i < len(ctr.Args); i++ {
		arg := ctr.Args[i]
		run.args = append(run.args, arg)
		flagName := strings.TrimLeft(arg, "-")
		if strings.HasPrefix(arg, "-") && (strings.HasSuffix(flagName, "-image") || strings.HasSuffix(flagName, "-image-win")) && i+1 < len(ctr.Args) {
			run.args = append(run.args, imageFlagValue(flagName))
			images++
			i++
		}
	}
	if images == 0 {
		return releaseRun{}, fmt.Errorf("%s: no image flags in the controller's arguments %v", file, ctr.Args)
	}
	for _, e := range ctr.Env {
		switch {
		case e.Name == "SYSTEM_NAMESPACE":
			run.env = append(run.env, e.Name+"="+SystemNamespace)
		case releaseEnvSkipped[e.Name]:
		case e.ValueFrom != nil:
			return releaseRun{}, fmt.Errorf("%s: the controller's variable %s comes from %+v, which StartController does not know", file, e.Name, e.ValueFrom)
		default:
			run.env = append(run.env, e.Name+"="+e.Value)
		}
	}
	return run, nil
})

package faults

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fnops/func-operator/test/envtest"
	"github.com/fnops/func-operator/test/syncbuffer"
)

// deployment is how config/500-controller.yaml runs the operator: its container's
// arguments and environment, with what only a pod has made local to this test.
type deployment struct {
	args, env []string
	// workDir is the directory the Deployment's emptyDir stands for: like an
	// emptyDir it outlives a restart of the container.
	workDir          string
	metrics, probes  string
	webhook          string
	systemNamespace  string
	kubeconfigForPod string
	// memoryLimit is the container's memory limit, in bytes.
	memoryLimit int64
}

// readDeployment reads the Deployment of config/ and maps it onto this machine: the
// emptyDir becomes a directory of the test's, ports become loopback addresses of
// their own, SYSTEM_NAMESPACE (a fieldRef) the Deployment's namespace, and
// KUBECONFIG stands for the in-cluster configuration. Nothing else of the test's
// environment reaches the operator.
func readDeployment(t *testing.T, root shippedRoot, kubeconfig string) deployment {
	t.Helper()
	d, err := envtest.ShippedDeployment()
	if err != nil {
		t.Fatal(err)
	}
	if n := len(d.Spec.Template.Spec.Containers); n != 1 {
		t.Fatalf("the Deployment has %d containers, want 1", n)
	}
	c := d.Spec.Template.Spec.Containers[0]
	if len(c.VolumeMounts) != 1 || len(d.Spec.Template.Spec.Volumes) != 1 || d.Spec.Template.Spec.Volumes[0].EmptyDir == nil {
		t.Fatalf("the Deployment mounts %v, want one emptyDir", c.VolumeMounts)
	}
	mount := c.VolumeMounts[0].MountPath
	out := deployment{
		workDir: root.workDir(t), systemNamespace: d.Namespace,
		metrics: freeAddr(t), probes: freeAddr(t), kubeconfigForPod: kubeconfig,
	}
	local := func(v string) string {
		if rest, ok := strings.CutPrefix(v, mount); ok {
			return out.workDir + rest
		}
		return v
	}
	for _, a := range c.Args {
		switch {
		case strings.HasPrefix(a, "--metrics-bind-address="):
			a = "--metrics-bind-address=" + out.metrics
		case strings.HasPrefix(a, "--health-probe-bind-address="):
			a = "--health-probe-bind-address=" + out.probes
		case strings.HasPrefix(a, "--webhook-bind-address="):
			out.webhook = freeAddr(t)
			a = "--webhook-bind-address=" + out.webhook
		default:
			name, value, ok := strings.Cut(a, "=")
			if ok {
				a = name + "=" + local(value)
			}
		}
		out.args = append(out.args, a)
	}
	// Every server of the suite is on loopback, which the Deployment's binary refuses.
	out.args = append(out.args, "--host-allow-loopback")
	for _, e := range c.Env {
		v, err := envtest.EnvValue(d, c, e)
		if err != nil {
			t.Fatal(err)
		}
		if f := e.ValueFrom; f != nil && f.ResourceFieldRef != nil {
			out.memoryLimit = c.Resources.Limits.Memory().Value()
		}
		out.env = append(out.env, e.Name+"="+local(v))
	}
	out.env = append(out.env, "KUBECONFIG="+kubeconfig)
	// The root filesystem is read-only: the process temporary directory (/tmp, as the
	// Deployment sets no TMPDIR) is not writable. Here it is a directory the
	// operator's user cannot write.
	if hasEnv(out.env, "TMPDIR") {
		t.Fatalf("the Deployment sets TMPDIR: the test stands in for a read-only /tmp with it")
	}
	out.env = append(out.env, "TMPDIR="+root.readOnlyDir(t))
	return out
}

func hasEnv(env []string, name string) bool {
	for _, e := range env {
		if strings.HasPrefix(e, name+"=") {
			return true
		}
	}
	return false
}

// shippedUID is the user the operator's image runs as: ko's default base image
// (distroless static, nonroot) has user 65532, which the Deployment's
// runAsNonRoot requires to be other than root.
const shippedUID = 65532

// shippedRoot is a directory for what the operator process runs with as shipped:
// its binary and kubeconfig (readable, not writable, by it), its work dir (the only
// directory it may write), and a read-only stand-in for /tmp.
type shippedRoot string

func newShippedRoot(t *testing.T) shippedRoot {
	t.Helper()
	dir, err := os.MkdirTemp("", "func-operator-shipped-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	// Traversable by the operator's user; t.TempDir's parents are not (0700).
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return shippedRoot(dir)
}

func (r shippedRoot) path(name string) string { return filepath.Join(string(r), name) }

// workDir is the emptyDir: the operator's user owns it.
func (r shippedRoot) workDir(t *testing.T) string {
	t.Helper()
	dir := r.path("work")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if asRoot() {
		if err := os.Chown(dir, shippedUID, shippedUID); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// readOnlyDir is a directory the operator's user may read but not write.
func (r shippedRoot) readOnlyDir(t *testing.T) string {
	t.Helper()
	dir := r.path("read-only")
	if err := os.Mkdir(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	return dir
}

// asRoot is true when the tests run as root: the operator then runs as shippedUID,
// for whom only its work dir is writable. Run as another user, the operator runs
// as that user, who cannot write the read-only directory either.
func asRoot() bool { return os.Geteuid() == 0 }

// shippedCredential is the identity the operator process gets.
func shippedCredential() *syscall.SysProcAttr {
	if !asRoot() {
		return nil
	}
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: shippedUID, Gid: shippedUID}}
}

// kubeletSim runs the operator binary as the kubelet runs the Deployment's
// container: it starts it again whenever it exits, after a back-off that doubles
// from 1s to 8s (reset after 20s of running). It is a simulation: no kubelet runs
// here.
type kubeletSim struct {
	t    *testing.T
	bin  string
	dep  deployment
	Logs *syncbuffer.Buffer

	mu      sync.Mutex
	cmd     *exec.Cmd
	starts  int
	exits   []string
	stopped bool
	done    chan struct{}
}

func startKubeletSim(t *testing.T, bin string, dep deployment) *kubeletSim {
	k := &kubeletSim{t: t, bin: bin, dep: dep, Logs: &syncbuffer.Buffer{}, done: make(chan struct{})}
	go k.run()
	t.Cleanup(k.stop)
	return k
}

func (k *kubeletSim) run() {
	defer close(k.done)
	backoff := time.Second
	for {
		cmd := exec.Command(k.bin, k.dep.args...)
		cmd.Env = k.dep.env
		cmd.SysProcAttr = shippedCredential()
		cmd.Stdout, cmd.Stderr = k.Logs, k.Logs
		k.mu.Lock()
		if k.stopped {
			k.mu.Unlock()
			return
		}
		err := cmd.Start()
		if err == nil {
			k.cmd = cmd
			k.starts++
		}
		k.mu.Unlock()
		if err != nil {
			k.t.Errorf("starting the operator: %v", err)
			return
		}
		started := time.Now()
		err = cmd.Wait()
		k.mu.Lock()
		k.cmd = nil
		k.exits = append(k.exits, fmt.Sprintf("pid %d after %s: %v", cmd.Process.Pid, time.Since(started).Round(time.Millisecond), err))
		stopped := k.stopped
		k.mu.Unlock()
		if stopped {
			return
		}
		if time.Since(started) > 20*time.Second {
			backoff = time.Second
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, 8*time.Second)
	}
}

// kill sends SIGKILL to the running operator process, by its id, and returns that id
// (0 when none runs).
func (k *kubeletSim) kill() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cmd == nil {
		return 0
	}
	pid := k.cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		k.t.Errorf("SIGKILL to the operator (pid %d): %v", pid, err)
	}
	return pid
}

// pid is the id of the running operator process, 0 when none runs.
func (k *kubeletSim) pid() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cmd == nil {
		return 0
	}
	return k.cmd.Process.Pid
}

// running reports whether an operator process runs.
func (k *kubeletSim) running() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.cmd != nil
}

// Starts is how many times the operator was started.
func (k *kubeletSim) Starts() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.starts
}

// stop ends the simulation: SIGTERM to the running process, SIGKILL after 30s.
func (k *kubeletSim) stop() {
	k.mu.Lock()
	k.stopped = true
	cmd := k.cmd
	k.mu.Unlock()
	if cmd != nil {
		_ = syscall.Kill(cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-k.done:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
			<-k.done
		}
	} else {
		<-k.done
	}
	if k.t.Failed() {
		k.mu.Lock()
		k.t.Logf("operator exits: %s", strings.Join(k.exits, "; "))
		k.mu.Unlock()
		k.t.Logf("operator output:\n%s", k.Logs.String())
	}
}

//go:build scale

package scale

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fnops/func-operator/test/envtest"
)

// This file runs the operator binary as config/500-controller.yaml ships it, after
// test/faults (process_test.go, fixture_test.go), kept small: one process, no restarts.

// shippedUID is the user of the operator's image (distroless static, nonroot).
const shippedUID = 65532

// deployment is how config/500-controller.yaml runs the operator, mapped onto this
// machine: the emptyDir is a directory of the test's, ports are loopback addresses.
type deployment struct {
	args, env       []string
	workDir         string
	metrics, probes string
	// pprof serves the operator's profiles when the benchmark takes one ("": not).
	pprof            string
	systemNamespace  string
	kubeconfigForPod string
}

// shippedRoot holds what the operator process runs with: its binary and kubeconfig
// (readable by it), its work dir (the only one it may write) and a read-only /tmp.
type shippedRoot string

func newShippedRoot(t *testing.T) shippedRoot {
	t.Helper()
	dir, err := os.MkdirTemp("", "func-operator-scale-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil { // traversable by the operator's user
		t.Fatal(err)
	}
	return shippedRoot(dir)
}

func (r shippedRoot) path(name string) string { return filepath.Join(string(r), name) }

func asRoot() bool { return os.Geteuid() == 0 }

// mkdir makes a directory of the root; owned by the operator's user when mine.
func (r shippedRoot) mkdir(t *testing.T, name string, mode os.FileMode, mine bool) string {
	t.Helper()
	dir := r.path(name)
	if err := os.Mkdir(dir, mode); err != nil {
		t.Fatal(err)
	}
	if mine && asRoot() {
		if err := os.Chown(dir, shippedUID, shippedUID); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// writeKubeconfig writes the operator's kubeconfig (its client certificate), readable
// by the operator's user only.
func (r shippedRoot) writeKubeconfig(t *testing.T, content []byte) string {
	t.Helper()
	path := r.path("kubeconfig")
	if err := os.WriteFile(path, content, 0o600); err != nil {
		t.Fatal(err)
	}
	if asRoot() {
		if err := os.Chown(path, shippedUID, shippedUID); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// readDeployment reads the Deployment of config/ and maps it onto this machine.
func readDeployment(t *testing.T, root shippedRoot, kubeconfig string) deployment {
	t.Helper()
	d, err := envtest.ShippedDeployment()
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Spec.Template.Spec.Containers) != 1 || len(d.Spec.Template.Spec.Containers[0].VolumeMounts) != 1 {
		t.Fatalf("the Deployment has %d containers, want 1 with one emptyDir", len(d.Spec.Template.Spec.Containers))
	}
	c := d.Spec.Template.Spec.Containers[0]
	mount := c.VolumeMounts[0].MountPath
	out := deployment{
		workDir: root.mkdir(t, "work", 0o700, true), systemNamespace: d.Namespace,
		metrics: freeAddr(t), probes: freeAddr(t), kubeconfigForPod: kubeconfig,
	}
	local := func(v string) string {
		if rest, ok := strings.CutPrefix(v, mount); ok {
			return out.workDir + rest
		}
		return v
	}
	for _, a := range c.Args {
		name, value, ok := strings.Cut(a, "=")
		switch {
		case name == "--metrics-bind-address":
			a = name + "=" + out.metrics
		case name == "--health-probe-bind-address":
			a = name + "=" + out.probes
		case strings.HasSuffix(name, "-bind-address") && value != "0":
			// Any other listener (a pod's port): a loopback address of its own.
			a = name + "=" + freeAddr(t)
		case ok:
			a = name + "=" + local(value)
		}
		out.args = append(out.args, a)
	}
	// Every server of the benchmark is on loopback, which the Deployment's binary refuses.
	out.args = append(out.args, "--host-allow-loopback")
	for _, e := range c.Env {
		v, err := envtest.EnvValue(d, c, e)
		if err != nil {
			t.Fatal(err)
		}
		out.env = append(out.env, e.Name+"="+local(v))
	}
	// The root filesystem is read-only: /tmp is a directory the operator cannot write.
	out.env = append(out.env, "KUBECONFIG="+kubeconfig, "TMPDIR="+root.mkdir(t, "read-only", 0o555, false))
	return out
}

// plainRun is how a user runs the binary by hand: no flags but the addresses of the
// listeners the benchmark reads (metrics, probes) and the loopback its servers are
// on, and only KUBECONFIG,
// SYSTEM_NAMESPACE, an empty WATCH_NAMESPACE, HOME and PATH in the environment; its
// default work directory under a writable TMPDIR. FUNC_OPERATOR_SCALE_PLAIN=1 measures
// it against the Deployment's run.
func plainRun(t *testing.T, root shippedRoot, kubeconfig string) deployment {
	t.Helper()
	out := deployment{systemNamespace: "func-operator", metrics: freeAddr(t), probes: freeAddr(t), kubeconfigForPod: kubeconfig}
	out.args = []string{"--metrics-bind-address=" + out.metrics, "--health-probe-bind-address=" + out.probes, "--host-allow-loopback"}
	home := root.mkdir(t, "home", 0o700, true)
	out.workDir = root.mkdir(t, "tmp", 0o700, true)
	out.env = []string{"KUBECONFIG=" + kubeconfig, "SYSTEM_NAMESPACE=" + out.systemNamespace, "WATCH_NAMESPACE=",
		"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TMPDIR=" + out.workDir}
	return out
}

// withPprof serves the operator's profiles on a loopback address of its own.
func (d deployment) withPprof(t *testing.T) deployment {
	t.Helper()
	d.pprof = freeAddr(t)
	d.args = append(d.args, "--pprof-bind-address="+d.pprof)
	return d
}

// buildOperator builds cmd/func-operator with go build (as the faults suite does; ko
// builds the same main package into the image).
func buildOperator(t *testing.T, root shippedRoot) string {
	t.Helper()
	bin := root.path("func-operator")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/func-operator")
	cmd.Dir = envtest.RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the operator: %v\n%s", err, out)
	}
	return bin
}

// operatorProcess is the one operator process of the benchmark.
type operatorProcess struct {
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	err     error // set before exited closes
}

// startOperator starts the binary as the Deployment's container, as the operator's
// user when the test runs as root; its output goes to a file. It is stopped by its
// pid (SIGTERM, SIGKILL after 30s) when the test ends.
func startOperator(t *testing.T, root shippedRoot, bin string, dep deployment) *operatorProcess {
	t.Helper()
	logPath := root.path("operator.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, dep.args...)
	cmd.Env = dep.env
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if asRoot() {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: shippedUID, Gid: shippedUID}}
	}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		t.Fatalf("starting the operator: %v", err)
	}
	p := &operatorProcess{cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = logFile.Close()
		close(p.exited)
	}()
	t.Cleanup(func() {
		if !p.hasExited() {
			_ = syscall.Kill(cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-p.exited:
			case <-time.After(30 * time.Second):
				_ = syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
				<-p.exited
			}
		}
		if t.Failed() {
			t.Logf("operator (pid %d) exit: %v; the last of its output:\n%s", cmd.Process.Pid, p.err, p.tail(100))
		}
	})
	return p
}

func (p *operatorProcess) pid() int { return p.cmd.Process.Pid }

func (p *operatorProcess) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// alive says why the operator process is gone, "" while it runs.
func (p *operatorProcess) alive() string {
	if p.hasExited() {
		return fmt.Sprintf("the operator (pid %d) exited: %v", p.pid(), p.err)
	}
	return ""
}

// tail returns the last n lines of the operator's output.
func (p *operatorProcess) tail(n int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

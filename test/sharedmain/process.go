package sharedmain

import (
	"bytes"
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
	"time"

	"k8s.io/client-go/rest"

	"github.com/fnops/func-operator/test/envtest"
)

// StartedMarker is what knative.dev/pkg's sharedmain logs once the informers have
// synced, just before it starts the reconcilers.
const StartedMarker = "Starting controllers..."

const (
	// stopTimeout is how long a controller may take to stop on SIGTERM before it
	// is killed.
	stopTimeout = 10 * time.Second
	// startTimeout bounds a controller's start, until its reconcilers run.
	startTimeout = 60 * time.Second
)

// NoEgressProxy is the proxy a controller is given for every request that does not
// go to a loopback address (Go never proxies those: the API server is reached
// directly): the discard port of 127.0.0.1, where nothing listens here. A request
// for any other host (Knative resolving an image's tag at a registry, for one) is
// refused on this machine instead of leaving it, and no name is looked up.
const NoEgressProxy = "http://127.0.0.1:9"

// Options say which controller to run and how.
type Options struct {
	// Name names the controller in errors (e.g. "the Tekton controller").
	Name string
	// Binary is the controller's executable.
	Binary string
	// Args and Env are its release's (see ReleaseContainer), and what the caller adds.
	Args, Env []string
	// LogDir holds its log (<LogName>.log) and kubeconfig; a directory of its own,
	// removed by Stop, when empty.
	LogDir string
	// LogName is the base name of the log and kubeconfig files.
	LogName string
}

// Process is a running controller.
type Process struct {
	name string
	cmd  *exec.Cmd
	// LogFile holds the controller's stdout and stderr.
	LogFile string
	// kubeconfig is the file the controller reads its API server from.
	kubeconfig string
	// dir holds the kubeconfig, and the log; removeDir when Start made it.
	dir       string
	removeDir bool
	// Ports the controller listens on (all interfaces), each free when it started.
	MetricsPort, ProbesPort, ProfilingPort int

	exited  chan struct{}
	waitErr error
	stop    sync.Once
	stopErr error
}

// Start starts the controller against the API server of cfg, as its admin, and
// returns once its reconcilers run (StartedMarker in its log), or fails with the
// end of its log. It serves its metrics (on 127.0.0.1), probes and profiling on
// ports free when it starts (knative.dev/pkg's METRICS_PROMETHEUS_PORT and
// METRICS_PROMETHEUS_HOST, PROFILING_PORT, and PROBES_PORT, which Tekton reads), so
// that the controllers of test processes running at once do not clash. sharedmain
// serves a second probes server on port 8080 that no setting moves: when that port
// is taken (by another controller), sharedmain logs "address already in use" only
// when it stops, and the reconcilers run on. Its requests to anything but loopback
// go to NoEgressProxy.
func Start(cfg *rest.Config, opts Options) (*Process, error) {
	p := &Process{name: opts.Name, exited: make(chan struct{})}
	if opts.LogDir == "" {
		dir, err := os.MkdirTemp("", opts.LogName+"-")
		if err != nil {
			return nil, fmt.Errorf("creating %s's directory: %w", opts.Name, err)
		}
		opts.LogDir, p.removeDir = dir, true
	}
	p.dir, p.LogFile = opts.LogDir, filepath.Join(opts.LogDir, opts.LogName+".log")
	p.kubeconfig = filepath.Join(opts.LogDir, opts.LogName+".kubeconfig")
	content, err := envtest.Kubeconfig(cfg)
	if err == nil {
		err = os.WriteFile(p.kubeconfig, content, 0o600)
	}
	if err != nil {
		p.cleanup()
		return nil, fmt.Errorf("writing %s's kubeconfig: %w", opts.Name, err)
	}
	ports, err := freePorts(3)
	if err != nil {
		p.cleanup()
		return nil, err
	}
	p.MetricsPort, p.ProbesPort, p.ProfilingPort = ports[0], ports[1], ports[2]
	logFile, err := os.Create(p.LogFile)
	if err != nil {
		p.cleanup()
		return nil, fmt.Errorf("creating %s's log: %w", opts.Name, err)
	}
	// The child has its own descriptor once started; ours is closed either way.
	defer func() { _ = logFile.Close() }()

	cmd := exec.Command(opts.Binary, append([]string{"-kubeconfig", p.kubeconfig}, opts.Args...)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(withoutProxy(os.Environ()), opts.Env...)
	cmd.Env = append(cmd.Env,
		"METRICS_PROMETHEUS_PORT="+strconv.Itoa(p.MetricsPort),
		"METRICS_PROMETHEUS_HOST=127.0.0.1",
		"PROBES_PORT="+strconv.Itoa(p.ProbesPort),
		"PROFILING_PORT="+strconv.Itoa(p.ProfilingPort),
		"HTTP_PROXY="+NoEgressProxy, "HTTPS_PROXY="+NoEgressProxy, "NO_PROXY=",
	)
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		p.cleanup()
		return nil, fmt.Errorf("starting %s: %w", opts.Binary, err)
	}
	p.cmd = cmd
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	if err := p.waitStarted(); err != nil {
		tail := p.LogTail(40)
		_ = p.Stop()
		return nil, fmt.Errorf("%w; %s's log ends with:\n%s", err, opts.Name, tail)
	}
	return p, nil
}

// withoutProxy drops the proxy settings of env: Start sets its own.
func withoutProxy(env []string) []string {
	out := make([]string, 0, len(env))
	for _, e := range env {
		k, _, _ := strings.Cut(e, "=")
		switch strings.ToUpper(k) {
		case "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY":
			continue
		}
		out = append(out, e)
	}
	return out
}

// waitStarted waits until the controller's reconcilers run, or it exits.
func (p *Process) waitStarted() error {
	deadline := time.After(startTimeout)
	for {
		content, err := os.ReadFile(p.LogFile)
		if err != nil {
			return fmt.Errorf("reading %s's log: %w", p.name, err)
		}
		if bytes.Contains(content, []byte(StartedMarker)) {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited while starting: %v", p.name, p.waitErr)
		case <-deadline:
			return fmt.Errorf("%s did not start its reconcilers within %s", p.name, startTimeout)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Pid returns the controller process's id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited reports whether the controller process has ended, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.exited:
		return true, p.waitErr
	default:
		return false, nil
	}
}

// Stop stops the controller: SIGTERM, then SIGKILL after stopTimeout. It removes
// the kubeconfig, and the log when Start made its directory. It may be called more
// than once.
func (p *Process) Stop() error {
	p.stop.Do(func() {
		if p.cmd != nil {
			p.stopErr = p.terminate()
		}
		p.cleanup()
	})
	return p.stopErr
}

// terminate ends the process by its pid and waits for it.
func (p *Process) terminate() error {
	select {
	case <-p.exited:
		return nil // it had exited; Exited tells how
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stopping %s (pid %d): %w", p.name, p.cmd.Process.Pid, err)
	}
	select {
	case <-p.exited:
		return nil
	case <-time.After(stopTimeout):
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("killing %s (pid %d): %w", p.name, p.cmd.Process.Pid, err)
	}
	<-p.exited
	return nil
}

// cleanup removes what Start wrote.
func (p *Process) cleanup() {
	if p.dir == "" {
		return
	}
	if p.removeDir {
		_ = os.RemoveAll(p.dir)
		return
	}
	_ = os.Remove(p.kubeconfig)
}

// LogTail returns the last n lines of the controller's log.
func (p *Process) LogTail(n int) string {
	content, err := os.ReadFile(p.LogFile)
	if err != nil {
		return fmt.Sprintf("(reading %s: %v)", p.LogFile, err)
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

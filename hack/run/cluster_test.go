package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/operator"
	fotenv "github.com/fnops/func-operator/test/envtest"
)

// TestRun_ClusterOnlyWhenAsked runs make run's command as an admin would beside an
// installed operator. Without -cluster it never talks to the configured cluster (it
// starts its embedded control plane). With -cluster it waits while the installed
// operator holds the leader election Lease, writing nothing; the positive control:
// once the Lease is released, it leads and reconciles the Function.
func TestRun_ClusterOnlyWhenAsked(t *testing.T) {
	ctrl.SetLogger(logr.Discard()) // the test's own clients; the command logs to its output
	bin := filepath.Join(t.TempDir(), "run")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	t.Run("without -cluster", func(t *testing.T) {
		// The configured cluster: a listener on the loopback that counts connections.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		var conns atomic.Int64
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				conns.Add(1)
				_ = c.Close()
			}
		}()
		t.Cleanup(func() { _ = l.Close() })
		kubeconfig := writeFile(t, "kubeconfig", `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://`+l.Addr().String()+`", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`)
		out := start(t, bin, kubeconfig)
		out.waitFor(t, "operator running", 3*time.Minute)
		if !strings.Contains(out.String(), "a cluster is configured, but make run uses an embedded control plane") {
			t.Errorf("make run did not say that it left the configured cluster alone:\n%s", out)
		}
		if n := conns.Load(); n != 0 {
			t.Errorf("make run connected %d times to the configured cluster, want never", n)
		}
		// Quiet by default: none of the debug lines of envtest starting the control
		// plane, nor the operator's.
		if n := strings.Count(out.String(), "\tDEBUG\t"); n != 0 {
			t.Errorf("make run printed %d DEBUG lines, want none without -v:\n%s", n, out)
		}
	})

	t.Run("-v", func(t *testing.T) {
		out := start(t, bin, writeFile(t, "kubeconfig", ""), "-v")
		out.waitFor(t, "operator running", 3*time.Minute)
		// The positive control of the quiet run: -v brings envtest's debug lines back.
		if !strings.Contains(out.String(), "DEBUG\tcontroller-runtime.test-env") {
			t.Errorf("make run -v printed no DEBUG line of envtest:\n%s", out)
		}
	})

	t.Run("with -cluster, beside an installed operator", func(t *testing.T) {
		env := fotenv.StartT(t)
		kc, err := fotenv.Kubeconfig(env.Config)
		if err != nil {
			t.Fatal(err)
		}
		kubeconfig := writeFile(t, "kubeconfig", string(kc))
		scheme, err := operator.NewScheme()
		if err != nil {
			t.Fatal(err)
		}
		c, err := client.New(env.Config, client.Options{Scheme: scheme})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if err := ensureNamespace(ctx, env.Config, "func-operator"); err != nil {
			t.Fatal(err)
		}
		// The installed operator's Lease, held and renewed.
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "func-operator", Name: operator.LeaderElectionID},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("installed-operator"), LeaseDurationSeconds: ptr.To[int32](3600),
				AcquireTime: &metav1.MicroTime{Time: time.Now()}, RenewTime: &metav1.MicroTime{Time: time.Now()}}}
		if err := c.Create(ctx, lease); err != nil {
			t.Fatal(err)
		}
		fn := &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "probe"},
			Spec: v1alpha1.FunctionSpec{Repository: v1alpha1.Repository{URL: "http://127.0.0.1:1/none.git"}}}
		if err := c.Create(ctx, fn); err != nil {
			t.Fatal(err)
		}
		out := start(t, bin, kubeconfig, "-cluster")
		out.waitFor(t, "Attempting to acquire leader lease", time.Minute)
		time.Sleep(5 * time.Second) // long enough for a reconcile, had it led
		if got := status(t, c, fn); len(got.Conditions) != 0 {
			t.Fatalf("make run CLUSTER=1 reconciled beside the installed operator: status %+v", got)
		}
		if err := c.Delete(ctx, lease); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(time.Minute)
		for len(status(t, c, fn).Conditions) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("make run CLUSTER=1 did not reconcile once the Lease was free:\n%s", out)
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
}

func status(t *testing.T, c client.Client, fn *v1alpha1.Function) v1alpha1.FunctionStatus {
	t.Helper()
	got := &v1alpha1.Function{}
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: fn.Namespace, Name: fn.Name}, got); err != nil {
		t.Fatal(err)
	}
	return got.Status
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// output is a process's combined output, safe to read while it runs.
type output struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(p)
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

func (o *output) waitFor(t *testing.T, s string, bound time.Duration) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !strings.Contains(o.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the output within %s:\n%s", s, bound, o)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// start runs the command with KUBECONFIG and free loopback ports, in a work
// directory of its own, and stops it by its process id when the test ends.
func start(t *testing.T, bin, kubeconfig string, args ...string) *output {
	t.Helper()
	args = append(args, "-metrics-bind-address", freeAddr(t), "-health-probe-bind-address", freeAddr(t))
	cmd := exec.Command(bin, args...)
	cmd.Dir = fotenv.RepoRoot()
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "SYSTEM_NAMESPACE=func-operator")
	out := &output{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	return out
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

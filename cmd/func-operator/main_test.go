package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/operator"
	"github.com/fnops/func-operator/test/envtest"
	"github.com/fnops/func-operator/test/gitserver"
	"github.com/fnops/func-operator/test/syncbuffer"
)

// TestBinary builds cmd/func-operator and runs it as a user would, against a real
// control plane: flags, WATCH_NAMESPACE and SYSTEM_NAMESPACE, leader election,
// probes and metrics, a Function reconciled, and a clean stop on SIGTERM.
func TestBinary(t *testing.T) {
	env := envtest.StartT(t) // first: under -short it skips the test, before the build
	bin := filepath.Join(t.TempDir(), "func-operator")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building the operator: %v\n%s", err, out)
	}
	scheme, err := operator.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// The operator runs as a user with no groups, bound to the generated ClusterRole
	// only: that proves the ClusterRole is enough for what the binary does.
	kubeconfig := writeKubeconfig(t, env, "func-operator")
	for _, ns := range []string{"func-system", "team-a"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	bindClusterRole(t, c, "func-operator", "func-system")

	root := gitserver.NewRepoRoot(t)
	srv := gitserver.StartHTTP(t, root)
	repo := gitserver.CreateRepo(t, root, "hello")
	commit := repo.Commit(t, "main", map[string]string{"func.yaml": "specVersion: 0.36.0\nname: hello\nruntime: go\n"}, "hello")
	if err := c.Create(ctx, &v1alpha1.Function{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "hello"},
		Spec:       v1alpha1.FunctionSpec{Repository: v1alpha1.Repository{URL: srv.URL("hello")}},
	}); err != nil {
		t.Fatal(err)
	}

	metrics, probes := freeAddr(t), freeAddr(t)
	// Plain HTTP metrics, to read them here without a token: pkg/operator's
	// TestOperator_MetricsSecure scrapes the HTTPS endpoint, the binary's default.
	// The git server is on loopback, which the binary refuses unless told.
	cmd := exec.Command(bin, "--metrics-bind-address="+metrics, "--metrics-secure=false", "--health-probe-bind-address="+probes, "--leader-elect",
		"--host-allow-loopback")
	// The binary's default --work-dir is a new directory under $TMPDIR: a folder of
	// this test's, to look into.
	tmp := t.TempDir()
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "WATCH_NAMESPACE=team-a", "SYSTEM_NAMESPACE=func-system", "TMPDIR="+tmp)
	logs := &syncbuffer.Buffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = cmd.Process.Kill()
			t.Logf("operator stopped: %v", <-exited)
		}
		if t.Failed() {
			t.Logf("operator output:\n%s", logs.String())
		}
	})

	waitFor(t, "readiness", func() string { return httpStatus("http://" + probes + "/readyz") })
	waitFor(t, "the Function", func() string {
		fn := &v1alpha1.Function{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: "team-a", Name: "hello"}, fn); err != nil {
			return err.Error()
		}
		if fn.Status.Git == nil || fn.Status.Git.ObservedCommit != commit || !fn.Status.GetCondition(v1alpha1.FunctionConditionSourceReady).IsTrue() {
			return fmt.Sprintf("status = %+v", fn.Status)
		}
		// This control plane has no Knative Serving: the operator runs and says so.
		if d := fn.Status.GetCondition(v1alpha1.FunctionConditionDeployed); d == nil || d.Reason != v1alpha1.ReasonKnativeServingNotInstalled {
			return fmt.Sprintf("Deployed = %+v, want reason %s", d, v1alpha1.ReasonKnativeServingNotInstalled)
		}
		return ""
	})
	waitFor(t, "the leader election Lease", func() string {
		lease := &coordinationv1.Lease{}
		err := c.Get(ctx, types.NamespacedName{Namespace: "func-system", Name: operator.LeaderElectionID}, lease)
		if err != nil {
			return err.Error()
		}
		return ""
	})
	waitFor(t, "metrics", func() string {
		resp, err := http.Get("http://" + metrics + "/metrics")
		if err != nil {
			return err.Error()
		}
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(body), `controller_runtime_reconcile_total{controller="function"`) {
			return "no reconcile metric of the function controller yet"
		}
		return ""
	})
	// The version go.mod links (the test binary links the same func as the
	// operator's), so that a func bump needs no edit here.
	if want := funclib.Version(); want == "" || !strings.Contains(logs.String(), `"funcLibrary":"`+want+`"`) {
		t.Errorf("the start-up log does not name the linked func library %q", want)
	}
	// The func library's kubeconfig, with the operator's credentials, is in a directory
	// of this process alone, under a name nobody can predict, and nowhere else.
	private, err := filepath.Glob(filepath.Join(tmp, "func-operator-*", "func-library-*", funclib.KubeconfigFile))
	if err != nil || len(private) != 1 {
		t.Fatalf("func library kubeconfigs under the work dir = %v, %v; want one in a func-library-* directory", private, err)
	}
	if fi, err := os.Stat(filepath.Dir(private[0])); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the kubeconfig's directory has mode %v, %v; want 0700", fi.Mode().Perm(), err)
	}
	if fi, err := os.Stat(private[0]); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the kubeconfig has mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	if predictable := filepath.Join(filepath.Dir(filepath.Dir(private[0])), funclib.KubeconfigFile); !fileMissing(predictable) {
		t.Errorf("a kubeconfig at the predictable %s", predictable)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		stopped = true
		if err != nil {
			t.Errorf("the operator exited with %v after SIGTERM", err)
		}
		if work := filepath.Dir(filepath.Dir(private[0])); !fileMissing(work) {
			t.Errorf("the operator's work directory %s is still there after it stopped", work)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the operator did not stop within 30s of SIGTERM")
	}
}

func fileMissing(path string) bool {
	_, err := os.Stat(path)
	return os.IsNotExist(err)
}

// bindClusterRole applies config/200-clusterrole.yaml and binds it to user.
func bindClusterRole(t *testing.T, c client.Client, user, systemNamespace string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(envtest.RepoRoot(), "config", "200-clusterrole.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	docs, err := envtest.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	subjects := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}
	var objs []client.Object
	for _, d := range docs {
		switch d.GetKind() {
		case "ClusterRole":
			objs = append(objs, d, &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: d.GetName()},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: d.GetName()},
				Subjects:   subjects,
			})
		case "Role":
			// The Role of the operator's own namespace, in the namespace this test uses.
			d.SetNamespace(systemNamespace)
			objs = append(objs, d, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Namespace: systemNamespace, Name: d.GetName()},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: d.GetName()},
				Subjects:   subjects,
			})
		}
	}
	if len(objs) != 4 {
		t.Fatalf("config/200-clusterrole.yaml holds %d roles, want a ClusterRole and a Role", len(objs)/2)
	}
	for _, o := range objs {
		if err := c.Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
}

func writeKubeconfig(t *testing.T, env *envtest.Environment, name string) string {
	t.Helper()
	user, err := env.AddUser(ctrlenvtest.User{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	b, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
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

func httpStatus(url string) string {
	resp, err := http.Get(url)
	if err != nil {
		return err.Error()
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Sprintf("GET %s = %d", url, resp.StatusCode)
	}
	return ""
}

func waitFor(t *testing.T, what string, check func() string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		msg := check()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %s", what, msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

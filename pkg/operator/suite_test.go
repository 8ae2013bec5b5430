package operator

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/test/envtest"
	"github.com/fnops/func-operator/test/knative"
	"github.com/fnops/func-operator/test/syncbuffer"
	"github.com/fnops/func-operator/test/tekton"
)

var (
	// restConfig is the control plane's administrator, for the tests' own objects.
	restConfig *rest.Config
	// operatorConfig is the operator's ServiceAccount, bound only to the RBAC of
	// config/: every operator of the tests runs as it, which proves that RBAC enough.
	operatorConfig *rest.Config
	k8sClient      client.Client
	// testEnv is the control plane, for the tests that run its garbage collector.
	testEnv *envtest.Environment
	// logs holds everything the operators of the tests log.
	logs = &syncbuffer.Buffer{}
	// serving is the real Knative Serving controller with its stack (test/knative),
	// for every test: each Knative Service goes Ready as on a cluster, through
	// kube-controller-manager's workload controllers and the kubelet simulation, whose
	// pods a test holds not ready (holdPods) or failing to pull (failPull).
	serving *knative.Serving
	kubelet = &kubeletHooks{notReady: map[string]func(*corev1.Pod) bool{}, pulls: map[int]func(string) error{}}
)

// kubeletHooks are the suite's kubelet simulation's answers, set by the tests.
type kubeletHooks struct {
	mu       sync.Mutex
	notReady map[string]func(*corev1.Pod) bool // by namespace
	pulls    map[int]func(image string) error  // by failPulls call
	next     int
}

func (k *kubeletHooks) isNotReady(p *corev1.Pod) bool {
	k.mu.Lock()
	f := k.notReady[p.Namespace]
	k.mu.Unlock()
	return f != nil && f(p)
}

func (k *kubeletHooks) pull(image string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, f := range k.pulls {
		if err := f(image); err != nil {
			return err
		}
	}
	return nil
}

// holdPods holds the pods of namespace ns that notReady returns true for Running
// but not ready, for the rest of the test; resyncPods asks again at once.
func holdPods(t *testing.T, ns string, notReady func(*corev1.Pod) bool) {
	t.Helper()
	kubelet.mu.Lock()
	kubelet.notReady[ns] = notReady
	kubelet.mu.Unlock()
	t.Cleanup(func() {
		kubelet.mu.Lock()
		delete(kubelet.notReady, ns)
		kubelet.mu.Unlock()
	})
	resyncPods()
}

// failPulls makes the kubelet simulation refuse to pull the images pull returns an
// error for, for the rest of the test.
func failPulls(t *testing.T, pull func(image string) error) {
	t.Helper()
	kubelet.mu.Lock()
	id := kubelet.next
	kubelet.next++
	kubelet.pulls[id] = pull
	kubelet.mu.Unlock()
	t.Cleanup(func() {
		kubelet.mu.Lock()
		delete(kubelet.pulls, id)
		kubelet.mu.Unlock()
	})
	resyncPods()
}

// resyncPods has the kubelet simulation look at every pod again now.
func resyncPods() { serving.Kubelet.Resync() }

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(logs), zap.UseDevMode(true)))
	env, err := envtest.Start(append(knative.CRDs, envtest.TektonCRDs)...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	restConfig = env.Config
	testEnv = env
	operatorConfig = envtest.AsOperator(restConfig)
	// The real Tekton controller runs every PipelineRun of the tests; test/tekton's
	// kubelet simulation plays the pods.
	tektonController, err := tekton.StartController(restConfig, "")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		_ = env.Stop()
		os.Exit(1)
	}
	// A Revision whose pods are not ready is reported failed after 30 s (the release:
	// 10 minutes): far longer than any test holds a Revision's pods not ready on
	// purpose (about 8 s).
	serving, err = knative.Start(env, knative.Options{ProgressDeadline: 30 * time.Second, NotReady: kubelet.isNotReady, Pull: kubelet.pull})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		_ = tektonController.Stop()
		_ = env.Stop()
		os.Exit(1)
	}
	_, err = envtest.Apply(context.Background(), restConfig, append(envtest.RBACFiles, envtest.PolicyFiles...)...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	scheme, err := NewScheme()
	if err == nil {
		k8sClient, err = client.New(restConfig, client.Options{Scheme: scheme})
	}
	code := 1
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
		if code == 0 && !logsClean() {
			code = 1
		}
	}
	if err := serving.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	if err := tektonController.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// newNamespace creates a namespace of its own for a test, onboarded to the operator
// as its admin would (config/namespace/onboard.yaml).
func newNamespace(t *testing.T) string { return envtest.NewNamespace(t, restConfig, "op-test-", true) }

// newBareNamespace creates a namespace of its own for a test, not onboarded: the
// operator may only read there what its ClusterRole allows.
func newBareNamespace(t *testing.T) string {
	return envtest.NewNamespace(t, restConfig, "op-test-", false)
}

// startOperator runs the operator for the test's lifetime, watching the given
// namespaces, with its own system namespace and the check interval given.
func startOperator(t *testing.T, checkInterval time.Duration, watch ...string) (systemNamespace string, store *config.Store) {
	t.Helper()
	cfg := config.Defaults()
	cfg.CheckInterval, cfg.GitTimeout = checkInterval, 10*time.Second
	systemNamespace, store, _ = startOperatorWith(t, cfg, watch...)
	return systemNamespace, store
}

// startOperatorWith runs the operator with the configuration given, watching the
// given namespaces, until stop is called or the test ends.
func startOperatorWith(t *testing.T, cfg config.Config, watch ...string) (systemNamespace string, store *config.Store, stop func()) {
	t.Helper()
	return startOperatorWithConfigMap(t, cfg, nil, watch...)
}

// startOperatorWithConfigMap is startOperatorWith with the operator's ConfigMap
// created with data before the operator starts, when data is not nil.
func startOperatorWithConfigMap(t *testing.T, cfg config.Config, data map[string]string, watch ...string) (systemNamespace string, store *config.Store, stop func()) {
	t.Helper()
	return startOperatorServing(t, cfg, data, "0", watch...)
}

// startOperatorServing is startOperatorWithConfigMap serving metrics on metricsAddr.
func startOperatorServing(t *testing.T, cfg config.Config, data map[string]string, metricsAddr string, watch ...string) (systemNamespace string, store *config.Store, stop func()) {
	t.Helper()
	return startOperatorOptions(t, cfg, data, func(o *Options) { o.MetricsAddr = metricsAddr }, watch...)
}

// startOperatorOptions is startOperatorWithConfigMap with the Options set changes.
func startOperatorOptions(t *testing.T, cfg config.Config, data map[string]string, set func(*Options), watch ...string) (systemNamespace string, store *config.Store, stop func()) {
	t.Helper()
	store = config.NewStore()
	store.Set(cfg)
	systemNamespace = newNamespace(t)
	ownNamespaceRBAC(t, systemNamespace)
	if data != nil {
		if err := k8sClient.Create(context.Background(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: systemNamespace, Name: config.ConfigMapName}, Data: data,
		}); err != nil {
			t.Fatal(err)
		}
	}
	o := Options{
		WatchNamespaces: watch,
		SystemNamespace: systemNamespace,
		MetricsAddr:     "0",
		ProbeAddr:       "0",
		WorkDir:         t.TempDir(),
		Config:          store,

		SkipControllerNameValidation: true,
	}
	set(&o)
	_, stop = runManager(t, operatorConfig, o)
	return systemNamespace, store, stop
}

// eventually polls check until it returns "" or the timeout passes, then fails
// with the last thing check said.
func eventually(t *testing.T, timeout time.Duration, check func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		msg := check()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", timeout, msg)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// secretsNeverLogged are the Secret values the tests use: no operator may log them.
var secretsNeverLogged = []string{token, wrongToken, registryPassword, base64Auth(registryUser, registryPassword),
	registryReaderPassword, base64Auth(registryReader, registryReaderPassword)}

// logsClean checks, after every test ran, that the operators' structured logs name
// the Functions they reconcile and hold no Secret value.
func logsClean() bool {
	all := logs.String()
	ok := true
	for _, s := range secretsNeverLogged {
		if strings.Contains(all, s) {
			fmt.Fprintf(os.Stderr, "FAIL: the operator logged a Secret value (%d characters)\n", len(s))
			ok = false
		}
	}
	// A subset of the tests (-run) may log nothing from a reconciler; the whole suite must.
	if flag.Lookup("test.run").Value.String() == "" && (!strings.Contains(all, `"Function": {"name":`) || !strings.Contains(all, `"namespace": "`)) {
		fmt.Fprintln(os.Stderr, "FAIL: the reconciler's logs do not name the Function's namespace and name")
		ok = false
	}
	return ok
}

// ownNamespaceRBAC grants the operator's ServiceAccount, in ns, the Role and
// RoleBinding config/ installs in func-operator: each test's operator has a system
// namespace of its own.
func ownNamespaceRBAC(t *testing.T, ns string) {
	t.Helper()
	var objs []*unstructured.Unstructured
	for _, f := range []string{"config/200-clusterrole.yaml", "config/200-rolebinding.yaml"} {
		b, err := os.ReadFile(filepath.Join(envtest.RepoRoot(), f))
		if err != nil {
			t.Fatal(err)
		}
		docs, err := envtest.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range docs {
			if d.GetKind() == "Role" || d.GetKind() == "RoleBinding" {
				d.SetNamespace(ns)
				objs = append(objs, d)
			}
		}
	}
	if len(objs) != 2 {
		t.Fatalf("config/ has %d namespaced RBAC objects, want a Role and its RoleBinding", len(objs))
	}
	if err := envtest.ApplyObjects(context.Background(), restConfig, objs...); err != nil {
		t.Fatal(err)
	}
}

// runManager builds the operator's manager with New on cfg, with o, and runs it until
// the test ends (or the stop it returns is called), failing the test when it stopped
// with an error. Loopback is allowed: every test's git and registry servers are there.
func runManager(t *testing.T, cfg *rest.Config, o Options) (_ manager.Manager, stop func()) {
	t.Helper()
	o.AllowLoopback = true
	return runManagerAsIs(t, cfg, o)
}

// runManagerAsIs is runManager with o as given.
func runManagerAsIs(t *testing.T, cfg *rest.Config, o Options) (_ manager.Manager, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	mgr, err := New(ctx, cfg, o)
	if err != nil {
		cancel()
		t.Fatalf("creating the operator: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("operator stopped with an error: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return mgr, stop
}

package operator

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"knative.dev/pkg/apis"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/test/gitserver"
	"github.com/fnops/func-operator/test/registrytest"
)

// TestOperator_RefusesItsOwnListeners: a Function whose repository or image names one
// of the operator's own listeners (the func library's API proxy, its metrics) gets
// HostNotAllowed, naming the listener, though loopback is let through (as every test
// lets it). Positive control: a Function on the test's loopback git server and
// registry, beside them, is read and inspected.
func TestOperator_RefusesItsOwnListeners(t *testing.T) {
	root := gitserver.NewRepoRoot(t)
	srv := gitserver.StartHTTP(t, root)
	reg := registrytest.Start(t)
	ns := newNamespace(t)
	work, metrics := t.TempDir(), freeAddr(t)
	cfg := config.Defaults()
	cfg.CheckInterval, cfg.GitTimeout = time.Hour, 10*time.Second
	startOperatorOptions(t, cfg, nil, func(o *Options) { o.WorkDir, o.MetricsAddr = work, metrics }, ns)
	proxy := funcLibraryProxy(t, work)

	ctx := context.Background()
	create := func(name, repoURL, image string) {
		t.Helper()
		gitserver.CreateRepo(t, root, name).Commit(t, "main", map[string]string{"func.yaml": funcYAML(name, "go")}, name)
		if repoURL == "" {
			repoURL = srv.URL(name)
		}
		if image != "" {
			if err := k8sClient.Create(ctx, &servingv1.Service{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"function.knative.dev/name": name}},
				Spec: servingv1.ServiceSpec{ConfigurationSpec: servingv1.ConfigurationSpec{Template: servingv1.RevisionTemplateSpec{
					Spec: servingv1.RevisionSpec{PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Image: image}}}},
				}}},
			}); err != nil {
				t.Fatal(err)
			}
		}
		if err := k8sClient.Create(ctx, &v1alpha1.Function{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       v1alpha1.FunctionSpec{Repository: v1alpha1.Repository{URL: repoURL}},
		}); err != nil {
			t.Fatal(err)
		}
	}
	create("control", "", reg.Push(t, "fns/control", availableGoMiddleware(t)))
	create("proxy-git", "https://"+proxy+"/fn.git", "")
	create("metrics-git", "http://"+metrics+"/fn.git", "")
	create("proxy-registry", "", proxy+"/fns/proxy-registry:v1")

	eventually(t, 30*time.Second, sourceReady(ns, "control", corev1.ConditionTrue, v1alpha1.ReasonFuncYamlRead))
	eventually(t, 30*time.Second, condition(ns, "control", v1alpha1.FunctionConditionMiddlewareUpToDate, corev1.ConditionTrue, v1alpha1.ReasonUpToDate))
	for _, tt := range []struct {
		name     string
		cond     apis.ConditionType
		status   corev1.ConditionStatus
		listener string
	}{
		{"proxy-git", v1alpha1.FunctionConditionSourceReady, corev1.ConditionFalse, proxy},
		{"metrics-git", v1alpha1.FunctionConditionSourceReady, corev1.ConditionFalse, metrics},
		// Unknown: the image's middleware is not known, as for any image not read.
		{"proxy-registry", v1alpha1.FunctionConditionMiddlewareUpToDate, corev1.ConditionUnknown, proxy},
	} {
		eventually(t, 30*time.Second, refusedBy(ns, tt.name, tt.cond, tt.status, "the operator's own listener "+tt.listener))
	}
}

// TestOperator_RefusesLoopbackByDefault: an operator run as shipped (no
// AllowLoopback) refuses a Function's git server on loopback, before sending it
// anything. Positive control: an operator that lets loopback through, run before it,
// reads the same server. (One at a time: go-git's HTTP transport is the process's,
// over the guard of the operator that started last.)
func TestOperator_RefusesLoopbackByDefault(t *testing.T) {
	root := gitserver.NewRepoRoot(t)
	srv := gitserver.StartHTTP(t, root)
	cfg := config.Defaults()
	cfg.CheckInterval, cfg.GitTimeout = time.Hour, 10*time.Second
	ctx := context.Background()
	start := func(allowLoopback bool) (ns, name string, stop func()) {
		t.Helper()
		ns = newNamespace(t)
		name = fmt.Sprintf("loopback-allowed-%t", allowLoopback)
		gitserver.CreateRepo(t, root, name).Commit(t, "main", map[string]string{"func.yaml": funcYAML(name, "go")}, name)
		store := config.NewStore()
		store.Set(cfg)
		system := newNamespace(t)
		ownNamespaceRBAC(t, system)
		_, stop = runManagerAsIs(t, operatorConfig, Options{WatchNamespaces: []string{ns}, SystemNamespace: system, MetricsAddr: "0", ProbeAddr: "0",
			WorkDir: t.TempDir(), Config: store, SkipControllerNameValidation: true, AllowLoopback: allowLoopback})
		if err := k8sClient.Create(ctx, &v1alpha1.Function{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       v1alpha1.FunctionSpec{Repository: v1alpha1.Repository{URL: srv.URL(name)}},
		}); err != nil {
			t.Fatal(err)
		}
		return ns, name, stop
	}
	ns, name, stop := start(true)
	eventually(t, 30*time.Second, sourceReady(ns, name, corev1.ConditionTrue, v1alpha1.ReasonFuncYamlRead))
	if n := srv.RefAdvertisements(name); n == 0 {
		t.Error("the allowed repository was never listed")
	}
	stop()

	ns, name, _ = start(false)
	eventually(t, 30*time.Second, refusedBy(ns, name, v1alpha1.FunctionConditionSourceReady, corev1.ConditionFalse, "built-in 127.0.0.0/8"))
	if n := srv.RefAdvertisements(name); n != 0 {
		t.Errorf("the refused repository was listed %d times, want never", n)
	}
}

// refusedBy returns "" when the Function's condition has the status, reason
// HostNotAllowed, and names rule.
func refusedBy(ns, name string, cond apis.ConditionType, status corev1.ConditionStatus, rule string) func() string {
	return func() string {
		if msg := condition(ns, name, cond, status, v1alpha1.ReasonHostNotAllowed)(); msg != "" {
			return name + ": " + msg
		}
		fn := &v1alpha1.Function{}
		if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, fn); err != nil {
			return err.Error()
		}
		if c := fn.Status.GetCondition(cond); !strings.Contains(c.Message, rule) {
			return fmt.Sprintf("%s: %s says %q, want it to name %q", name, cond, c.Message, rule)
		}
		return ""
	}
}

// funcLibraryProxy returns the address of the API proxy of the operator whose work
// directory is work, from the kubeconfig it wrote for the func library.
func funcLibraryProxy(t *testing.T, work string) string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(work, "func-library-*", funclib.KubeconfigFile))
	if err != nil || len(paths) != 1 {
		t.Fatalf("func library kubeconfigs under %s: %v, %v; want one", work, paths, err)
	}
	kc, err := clientcmd.LoadFromFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	cluster := kc.Clusters[kc.Contexts[kc.CurrentContext].Cluster]
	u, err := url.Parse(cluster.Server)
	if err != nil || !strings.HasPrefix(u.Host, "127.0.0.1:") {
		t.Fatalf("the func library's server %q is not the loopback proxy: %v", cluster.Server, err)
	}
	return u.Host
}

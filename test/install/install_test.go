package install

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/test/envtest"
	"github.com/fnops/func-operator/test/registrytest"
)

// koBinary returns ko: $FUNC_OPERATOR_KO (make test sets it), else what hack/ko.sh
// builds from the module proxy (cached).
func koBinary(t *testing.T) string {
	t.Helper()
	if ko := os.Getenv("FUNC_OPERATOR_KO"); ko != "" {
		return ko
	}
	out, err := exec.Command(filepath.Join(envtest.RepoRoot(), "hack", "ko.sh")).Output()
	if err != nil {
		t.Fatalf("building ko with hack/ko.sh: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// MinAssetsEnv names the control plane (a folder hack/control-plane.sh printed) of
// the oldest Kubernetes the README supports, minKubernetes; `make test` sets it
// (make control-plane-min). TestKoApply installs config/ on it too.
const MinAssetsEnv = "FUNC_OPERATOR_KUBEBUILDER_ASSETS_MIN"

// minKubernetes is the oldest Kubernetes minor version the README supports
// ("Kubernetes 1.30 or later").
const minKubernetes = "1.30"

// requireAllEnvs are the variables `make test` (and so CI) sets to say that every part
// of the tests must run: with one of them set, a missing MinAssetsEnv fails the test
// instead of skipping its minimum-version half.
var requireAllEnvs = []string{"FUNC_OPERATOR_REQUIRE_ALL", "FUNC_OPERATOR_REQUIRE_SSHD"}

// TestKoApply resolves config/ with ko against an in-process registry, with a base
// image made here (no internet), and applies the result to a real API server: the
// control plane of $KUBEBUILDER_ASSETS (the Kubernetes client-go targets), and that
// of $FUNC_OPERATOR_KUBEBUILDER_ASSETS_MIN (the oldest Kubernetes the README
// supports, minKubernetes), each a subtest.
func TestKoApply(t *testing.T) {
	reg := registrytest.Start(t)
	base, err := reg.PushImage(reg.Host+"/base:latest", nil)
	if err != nil {
		t.Fatal(err)
	}
	root := envtest.RepoRoot()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, koBinary(t), "resolve", "-f", "config/", "--platform=linux/amd64")
	cmd.Dir = root
	cmd.Env = append(os.Environ(),
		"KO_CONFIG_PATH="+filepath.Join(root, "ko.yaml"),
		"KO_DOCKER_REPO="+reg.Host+"/func-operator",
		"KO_DEFAULTBASEIMAGE="+base,
		"DOCKER_CONFIG="+t.TempDir(),
	)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	resolved, err := cmd.Output()
	if err != nil {
		t.Fatalf("ko resolve -f config/: %v\n%s", err, stderr.String())
	}
	objs, err := envtest.Decode(resolved)
	if err != nil {
		t.Fatalf("decoding what ko resolved: %v", err)
	}
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
	}
	for _, k := range []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "CustomResourceDefinition", "ConfigMap", "Deployment", "Service", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "NetworkPolicy"} {
		if kinds[k] == 0 {
			t.Errorf("ko resolved no %s (kinds: %v)", k, kinds)
		}
	}

	t.Run("current", func(t *testing.T) {
		env := envtest.StartT(t)
		t.Logf("Kubernetes %s (%s)", serverVersion(t, env), env.Assets())
		checkInstall(ctx, t, env, objs, reg)
	})
	t.Run("minimum", func(t *testing.T) {
		assets := os.Getenv(MinAssetsEnv)
		if assets == "" {
			for _, e := range requireAllEnvs {
				if os.Getenv(e) != "" {
					t.Fatalf("%s is not set (and %s is): run `make test`, or export %s=$(make -s control-plane-min)", MinAssetsEnv, e, MinAssetsEnv)
				}
			}
			t.Skipf("%s is not set: no control plane of Kubernetes %s (make control-plane-min)", MinAssetsEnv, minKubernetes)
		}
		env := envtest.StartFromT(t, assets)
		v := serverVersion(t, env)
		t.Logf("Kubernetes %s (%s)", v, env.Assets())
		if !strings.HasPrefix(v, "v"+minKubernetes+".") {
			t.Fatalf("%s runs Kubernetes %s, want the minimum the README supports, %s", MinAssetsEnv, v, minKubernetes)
		}
		checkInstall(ctx, t, env, objs, reg)
	})
}

// serverVersion returns the API server's version (its gitVersion).
func serverVersion(t *testing.T, env *envtest.Environment) string {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	v, err := dc.ServerVersion()
	if err != nil {
		t.Fatalf("the API server's version: %v", err)
	}
	return v.GitVersion
}

// checkInstall applies objs (config/ as ko resolved it) to the control plane of env
// and checks what a cluster admin would: the objects are accepted, the CRD is
// established, the RBAC references resolve, onboarding a namespace works, the
// ConfigMap as shipped is valid and the Deployment runs the image ko pushed to reg.
func checkInstall(ctx context.Context, t *testing.T, env *envtest.Environment, objs []*unstructured.Unstructured, reg *registrytest.Registry) {
	t.Helper()
	if err := envtest.ApplyObjects(ctx, env.Config, objs...); err != nil {
		t.Fatalf("applying the resolved config/: %v", err)
	}

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}

	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, types.NamespacedName{Name: "functions.functions.dev"}, crd); err != nil {
		t.Fatal(err)
	}
	established := false
	for _, cond := range crd.Status.Conditions {
		established = established || (cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue)
	}
	if !established {
		t.Errorf("the Function CRD is not established: %+v", crd.Status.Conditions)
	}

	// RBAC: the binding names the operator's ClusterRole and ServiceAccount, which exist.
	crb := &rbacv1.ClusterRoleBinding{}
	if err := c.Get(ctx, types.NamespacedName{Name: "func-operator"}, crb); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, types.NamespacedName{Name: crb.RoleRef.Name}, &rbacv1.ClusterRole{}); err != nil {
		t.Errorf("ClusterRole %s of the binding: %v", crb.RoleRef.Name, err)
	}
	for _, s := range crb.Subjects {
		if err := c.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: s.Name}, &corev1.ServiceAccount{}); err != nil {
			t.Errorf("ServiceAccount %s/%s of the binding: %v", s.Namespace, s.Name, err)
		}
	}
	// What Prometheus's ServiceAccount is bound to, and what lets in only the operator's
	// ports (test/hygiene checks which): both installed.
	if err := c.Get(ctx, types.NamespacedName{Name: "func-operator-metrics-reader"}, &rbacv1.ClusterRole{}); err != nil {
		t.Errorf("the metrics reader ClusterRole: %v", err)
	}
	if err := c.Get(ctx, types.NamespacedName{Namespace: "func-operator", Name: "func-operator"}, &networkingv1.NetworkPolicy{}); err != nil {
		t.Errorf("the operator's NetworkPolicy: %v", err)
	}
	rb := &rbacv1.RoleBinding{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: "func-operator", Name: "func-operator"}, rb); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, types.NamespacedName{Namespace: "func-operator", Name: rb.RoleRef.Name}, &rbacv1.Role{}); err != nil {
		t.Errorf("Role %s of the operator's namespace: %v", rb.RoleRef.Name, err)
	}
	// A namespace onboards with config/namespace/onboard.yaml: its RoleBindings name
	// ClusterRoles that config/ installed, and ServiceAccounts that exist.
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}); err != nil {
		t.Fatal(err)
	}
	if err := envtest.Onboard(ctx, env.Config, "team-a"); err != nil {
		t.Fatal(err)
	}
	var rbs rbacv1.RoleBindingList
	if err := c.List(ctx, &rbs, client.InNamespace("team-a")); err != nil {
		t.Fatal(err)
	}
	if len(rbs.Items) != 2 {
		t.Errorf("onboarding made %d RoleBindings, want 2", len(rbs.Items))
	}
	for _, rb := range rbs.Items {
		if err := c.Get(ctx, types.NamespacedName{Name: rb.RoleRef.Name}, &rbacv1.ClusterRole{}); err != nil {
			t.Errorf("ClusterRole %s of RoleBinding %s: %v", rb.RoleRef.Name, rb.Name, err)
		}
		for _, s := range rb.Subjects {
			ns := s.Namespace
			if ns == "" {
				ns = rb.Namespace
			}
			if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: s.Name}, &corev1.ServiceAccount{}); err != nil {
				t.Errorf("ServiceAccount %s/%s of RoleBinding %s: %v", ns, s.Name, rb.Name, err)
			}
		}
	}

	// The ConfigMap as shipped is valid: nothing but the documented example.
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: "func-operator", Name: config.ConfigMapName}, cm); err != nil {
		t.Fatal(err)
	}
	if _, err := config.FromConfigMap(cm); err != nil {
		t.Errorf("the shipped ConfigMap is invalid: %v", err)
	}
	for _, key := range config.Keys() {
		if !strings.Contains(cm.Data["_example"], key) {
			t.Errorf("the ConfigMap does not document key %s", key)
		}
	}
	// What _example says are the defaults are the defaults.
	example := map[string]string{}
	if err := yaml.Unmarshal([]byte(cm.Data["_example"]), &example); err != nil {
		t.Fatalf("_example is not a YAML map of keys: %v", err)
	}
	for k := range example {
		if strings.HasPrefix(k, config.KeyBuilderImagePrefix) {
			delete(example, k) // a pin of the func library's default, not a default of the operator
		}
		if strings.HasPrefix(k, config.KeyEventSinkPrefix) {
			delete(example, k) // a namespace's own sink, which only that namespace has
		}
	}
	delete(example, config.KeyDeployerImage) // "": the func library's, which is no value
	got, err := config.FromConfigMap(&corev1.ConfigMap{Data: example})
	if err != nil {
		t.Errorf("_example is invalid: %v", err)
	}
	if diff := cmp.Diff(config.Defaults(), got); diff != "" {
		t.Errorf("_example documents values other than the defaults (-defaults +_example):\n%s", diff)
	}

	// The ConfigMap is checked when it is written (config/390-config-policy.yaml): a
	// bad value is refused, naming its key and value, once the policy is in force.
	checkConfigPolicy(ctx, t, c, cm)

	// The Deployment: accepted, with the image ko built and pushed, and restricted.
	d := &appsv1.Deployment{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: "func-operator", Name: "func-operator"}, d); err != nil {
		t.Fatal(err)
	}
	ctr := d.Spec.Template.Spec.Containers[0]
	if !strings.HasPrefix(ctr.Image, reg.Host+"/func-operator") || !strings.Contains(ctr.Image, "@sha256:") {
		t.Fatalf("the Deployment runs %q, want the image ko pushed to %s by digest", ctr.Image, reg.Host)
	}
	ref, err := name.ParseReference(ctr.Image)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(ref)
	if err != nil {
		t.Fatalf("the image ko pushed: %v", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OS != "linux" || cfg.Architecture != "amd64" || len(cfg.Config.Entrypoint) == 0 || !strings.HasSuffix(cfg.Config.Entrypoint[0], "func-operator") {
		t.Errorf("image config = %s/%s entrypoint %v, want the operator binary", cfg.OS, cfg.Architecture, cfg.Config.Entrypoint)
	}
	sc, psc := ctr.SecurityContext, d.Spec.Template.Spec.SecurityContext
	switch {
	case sc == nil || psc == nil:
		t.Fatal("the Deployment has no security context")
	case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem,
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation,
		sc.Capabilities == nil || fmt.Sprint(sc.Capabilities.Drop) != "[ALL]",
		psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot,
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
		t.Errorf("security context = %+v, pod %+v; want restricted", sc, psc)
	}
	if !slices.Contains(ctr.Args, "--leader-elect") || ctr.LivenessProbe == nil || ctr.ReadinessProbe == nil || ctr.Resources.Requests.Cpu().IsZero() || ctr.Resources.Limits.Memory().IsZero() {
		t.Errorf("controller container = %+v: want leader election, probes, requests and limits", ctr)
	}
	if d.Spec.Template.Spec.ServiceAccountName != "func-operator" {
		t.Errorf("serviceAccountName = %q", d.Spec.Template.Spec.ServiceAccountName)
	}
}

// checkConfigPolicy writes a bad value to cm, the shipped ConfigMap, and wants it
// refused, naming the key and the value; then writes cm back as shipped.
func checkConfigPolicy(ctx context.Context, t *testing.T, c client.Client, cm *corev1.ConfigMap) {
	t.Helper()
	shipped := cm.Data
	const want = `key checkInterval: "1d" is not a duration`
	deadline := time.Now().Add(10 * time.Second)
	for {
		cm.Data = map[string]string{config.KeyCheckInterval: "1d"}
		err := c.Update(ctx, cm)
		if err != nil && strings.Contains(err.Error(), want) {
			break
		}
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("checkInterval 1d written to the ConfigMap: %v, want refused with %q", err, want)
		}
		// Admitted before the policy was in force: back as shipped (an update that leaves
		// the data alone is not checked), and again.
		cm.Data = shipped
		if err := c.Update(ctx, cm); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(shipped, cm.Data); diff != "" {
		t.Errorf("the refused update changed the ConfigMap (-shipped +got):\n%s", diff)
	}
}

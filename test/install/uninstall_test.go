package install

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/test/envtest"
)

// The commands docs/install.md gives for uninstalling, as the page spells them
// (TestUninstall_DocsCommands fails when one is no longer there, word for word).
const (
	uninstallPause       = `kubectl -n func-operator patch configmap func-operator-config --type=merge -p '{"data":{"maxConcurrentBuilds":"0"}}'`
	uninstallBuilds      = `kubectl get functions -A`
	uninstallOperator    = `kubectl delete -f func-operator.yaml`
	uninstallFromConfig  = `for f in config/*.yaml; do [ "$f" = config/300-function.yaml ] || kubectl delete --ignore-not-found -f "$f"; done`
	uninstallSecretsOf   = `kubectl get functions -A -o custom-columns='NAMESPACE:.metadata.namespace,FUNCTION:.metadata.name,REGISTRY SECRET:.spec.registry.authSecretRef.name'`
	uninstallOnboardList = `kubectl get serviceaccounts,rolebindings -A -l app.kubernetes.io/name=func-operator`
	uninstallOnboardDel  = `kubectl delete serviceaccounts,rolebindings -A -l app.kubernetes.io/name=func-operator`
	uninstallCRDs        = `kubectl delete -f func-operator-crds.yaml`
	uninstallPullList    = `kubectl get serviceaccounts -A -o custom-columns='NAMESPACE:.metadata.namespace,NAME:.metadata.name,PULL SECRETS:.imagePullSecrets[*].name'`
	uninstallGitList     = `kubectl get secrets -A -l functions.dev/git-credentials=true`
	uninstallGitDel      = `kubectl delete secrets -A -l functions.dev/git-credentials=true`
	uninstallBuildObjs   = `kubectl get pipelineruns,pipelines,persistentvolumeclaims,secrets -A -l app.kubernetes.io/managed-by=func-operator`
	uninstallLeases      = `kubectl -n func-operator get leases`
	uninstallClusterWide = `kubectl get clusterroles,clusterrolebindings,validatingadmissionpolicies,validatingadmissionpolicybindings -o name | grep func-operator`
	uninstallReceivers   = `kubectl get secrets -A -l functions.dev/receiver=true`
	uninstallPullNames   = `kubectl -n team-a get serviceaccount default -o jsonpath='{range .imagePullSecrets[*]}{.name}{"\n"}{end}'`
	uninstallPullRemove  = `kubectl -n team-a patch serviceaccount default --type=json \
  -p '[{"op":"test","path":"/imagePullSecrets/0/name","value":"hello-registry-auth"},{"op":"remove","path":"/imagePullSecrets/0"}]'`
	// From "Scraping the metrics": a binding of the user's own, which the cluster-wide
	// leftover check must show.
	metricsBinding = `kubectl create clusterrolebinding prometheus-func-operator-metrics \
  --clusterrole=func-operator-metrics-reader --serviceaccount=monitoring:prometheus-k8s`
)

// TestUninstall_DocsCommands runs the uninstall commands of docs/install.md with
// kubectl against a real API server holding an install split as the release splits
// it (func-operator-crds.yaml, func-operator.yaml, func-operator-onboarding.yaml,
// made here from config/), a namespace onboarded, a Function and what its builds and
// the operator leave (an image pull Secret entry, a git credentials Secret, build
// objects owned by the Function, the Lease): each command finds or removes what the
// page says, and nothing else. kube-controller-manager's namespace controller and
// garbage collector run, as on a cluster.
func TestUninstall_DocsCommands(t *testing.T) {
	page := string(readUninstallFile(t, filepath.Join(envtest.RepoRoot(), "docs", "install.md")))
	page = strings.ReplaceAll(page, `\|`, "|") // a pipe inside a table cell
	for _, cmd := range []string{uninstallPause, uninstallBuilds, uninstallOperator, uninstallFromConfig, uninstallSecretsOf,
		uninstallOnboardList, uninstallOnboardDel, uninstallCRDs, uninstallPullList, uninstallGitList, uninstallGitDel,
		uninstallBuildObjs, uninstallLeases, uninstallClusterWide, uninstallReceivers, uninstallPullNames, uninstallPullRemove, metricsBinding} {
		if !strings.Contains(page, cmd) {
			t.Errorf("docs/install.md no longer gives the command %q: update it or this test", cmd)
		}
	}
	if t.Failed() {
		return
	}

	env := envtest.StartT(t, envtest.TektonCRDs)
	env.StartControllersT(t, append(envtest.GarbageCollectorControllers(), "namespace")...)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := client.New(env.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := splitConfigAsRelease(t)
	kubeconfig, err := envtest.Kubeconfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfigPath := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	// sh runs a command as a user would, in the directory of the release files (and of
	// config/), with kubectl of the control plane first on PATH.
	sh := func(cmd string) (string, error) {
		t.Helper()
		run := exec.CommandContext(ctx, "sh", "-c", cmd)
		run.Dir = dir
		run.Env = append(os.Environ(), "KUBECONFIG="+kubeconfigPath, "PATH="+env.Assets()+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := run.CombinedOutput()
		t.Logf("$ %s\n%s", cmd, out)
		return string(out), err
	}
	mustSh := func(cmd string) string {
		t.Helper()
		out, err := sh(cmd)
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		return out
	}
	wantIn := func(cmd, out string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: no %q in its output", cmd, w)
			}
		}
	}
	wantNotIn := func(cmd, out string, unwanted ...string) {
		t.Helper()
		for _, u := range unwanted {
			if strings.Contains(out, u) {
				t.Errorf("%s: %q still in its output", cmd, u)
			}
		}
	}

	// The install, as a release is applied, and what a cluster holds after a while.
	mustSh("kubectl apply -f func-operator-crds.yaml && kubectl apply -f func-operator.yaml")
	mustSh("kubectl create namespace team-a && kubectl apply -n team-a -f func-operator-onboarding.yaml")
	mustSh(metricsBinding)
	fn := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "functions.dev/v1alpha1", "kind": "Function",
		"metadata": map[string]any{"namespace": "team-a", "name": "hello"},
		"spec": map[string]any{
			"repository": map[string]any{"url": "https://git.example.com/team-a/functions.git", "branch": "main", "path": "hello"},
			"registry":   map[string]any{"authSecretRef": map[string]any{"name": "hello-registry-auth"}},
		},
	}}
	if err := c.Create(ctx, fn); err != nil {
		t.Fatal(err)
	}
	owner := metav1.OwnerReference{APIVersion: "functions.dev/v1alpha1", Kind: "Function", Name: "hello", UID: fn.GetUID(), Controller: ptr.To(true)}
	buildLabels := map[string]string{"functions.dev/function": "hello", "functions.dev/build-id": "b1", "app.kubernetes.io/managed-by": "func-operator"}
	gitLabels := map[string]string{"functions.dev/git-credentials": "true"}
	for k, v := range buildLabels {
		gitLabels[k] = v
	}
	pipeline := &unstructured.Unstructured{}
	pipeline.SetGroupVersionKind(schema.GroupVersionKind{Group: "tekton.dev", Version: "v1", Kind: "Pipeline"})
	pipeline.SetNamespace("team-a")
	pipeline.SetName("func-1a2b3c4d-pack-git")
	pipeline.SetLabels(buildLabels)
	pipeline.SetOwnerReferences([]metav1.OwnerReference{owner})
	for _, o := range []client.Object{
		// What func deploy made, and the ServiceAccount the function runs as, to which
		// the operator added the registry Secret (after one of the user's own).
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "hello-registry-auth"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "default"},
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: "hello-registry-auth"}, {Name: "team-pull"}}},
		// What a build left, named as func v0.50.1 names them (func-<hash>-<builder>-git):
		// its registry Secret and PVC, the Pipeline, and the git
		// credentials Secret of a build that was running when the operator went.
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "func-1a2b3c4d-pack-git-secret", Labels: buildLabels, OwnerReferences: []metav1.OwnerReference{owner}}},
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "func-1a2b3c4d-pack-git-pvc", Labels: buildLabels, OwnerReferences: []metav1.OwnerReference{owner}},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("750Mi")}}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "hello-git-credentials-b1", Labels: gitLabels, OwnerReferences: []metav1.OwnerReference{owner}}},
		pipeline,
		// A push receiver's Secret: the user's.
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "github-push", Labels: map[string]string{"functions.dev/receiver": "true"}}},
		// What the running operator made in its namespace.
		operatorLease("func-operator", "func-operator.functions.dev"),
	} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}

	// First, rebuilds paused.
	mustSh(uninstallPause)
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: "func-operator", Name: "func-operator-config"}, cm); err != nil || cm.Data["maxConcurrentBuilds"] != "0" {
		t.Errorf("after the pause, maxConcurrentBuilds = %q (%v), want 0", cm.Data["maxConcurrentBuilds"], err)
	}
	wantIn(uninstallBuilds, mustSh(uninstallBuilds), "hello")
	wantIn(uninstallSecretsOf, mustSh(uninstallSecretsOf), "REGISTRY SECRET", "hello-registry-auth")

	// Every leftover command finds its leftovers while they are there.
	wantIn(uninstallPullList, mustSh(uninstallPullList), "PULL SECRETS", "hello-registry-auth,team-pull")
	wantIn(uninstallGitList, mustSh(uninstallGitList), "hello-git-credentials-b1")
	wantIn(uninstallBuildObjs, mustSh(uninstallBuildObjs), "pipeline.tekton.dev/func-1a2b3c4d-pack-git",
		"persistentvolumeclaim/func-1a2b3c4d-pack-git-pvc", "secret/func-1a2b3c4d-pack-git-secret", "secret/hello-git-credentials-b1")
	wantIn(uninstallLeases, mustSh(uninstallLeases), "func-operator.functions.dev")
	wantIn(uninstallReceivers, mustSh(uninstallReceivers), "github-push")
	wantIn(uninstallOnboardList, mustSh(uninstallOnboardList), "serviceaccount/func-operator-builder",
		"rolebinding.rbac.authorization.k8s.io/func-operator-builder", "rolebinding.rbac.authorization.k8s.io/func-operator-namespace")
	clusterWide := []string{"clusterrole.rbac.authorization.k8s.io/func-operator\n", "clusterrole.rbac.authorization.k8s.io/func-operator-namespace",
		"clusterrolebinding.rbac.authorization.k8s.io/func-operator\n",
		"validatingadmissionpolicy.admissionregistration.k8s.io/func-operator-secret-references",
		"validatingadmissionpolicybinding.admissionregistration.k8s.io/func-operator-secret-references"}
	wantIn(uninstallClusterWide, mustSh(uninstallClusterWide), clusterWide...)

	// Keeping the Functions: the operator's file goes, the CRD and the Function stay.
	mustSh(uninstallOperator)
	out := mustSh(uninstallClusterWide)
	wantNotIn(uninstallClusterWide, out, clusterWide...)
	wantIn(uninstallClusterWide, out, "clusterrolebinding.rbac.authorization.k8s.io/prometheus-func-operator-metrics")
	if err := c.Get(ctx, types.NamespacedName{Name: "func-operator"}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Errorf("the namespace func-operator after %s: %v, want it gone", uninstallOperator, err)
	}
	stillThere := func(after string) {
		t.Helper()
		if err := c.Get(ctx, client.ObjectKeyFromObject(fn), fn.DeepCopy()); err != nil {
			t.Errorf("the Function after %s: %v", after, err)
		}
	}
	stillThere(uninstallOperator)
	// The same from a checkout, with the loop that leaves config/'s CRD out: installed
	// again from config/, removed again, the Function still there.
	mustSh("for f in config/*.yaml; do kubectl apply -f \"$f\"; done")
	mustSh(uninstallFromConfig)
	if err := c.Get(ctx, types.NamespacedName{Name: "func-operator"}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Errorf("the namespace func-operator after the loop over config/: %v, want it gone", err)
	}
	stillThere(uninstallFromConfig)

	// Removing everything: the onboarding by its label (the function's own
	// ServiceAccount stays), the pull Secret entry by position, guarded.
	mustSh(uninstallOnboardDel)
	out = mustSh(uninstallOnboardList)
	wantNotIn(uninstallOnboardList, out, "func-operator-builder", "func-operator-namespace")
	mustSh(uninstallGitDel)
	wantNotIn(uninstallGitList, mustSh(uninstallGitList), "hello-git-credentials-b1")
	wantIn(uninstallPullNames, mustSh(uninstallPullNames), "hello-registry-auth\nteam-pull")
	mustSh(uninstallPullRemove)
	sa := &corev1.ServiceAccount{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: "team-a", Name: "default"}, sa); err != nil {
		t.Fatal(err)
	}
	if len(sa.ImagePullSecrets) != 1 || sa.ImagePullSecrets[0].Name != "team-pull" {
		t.Errorf("imagePullSecrets after the patch = %v, want only team-pull", sa.ImagePullSecrets)
	}
	// The guard: the same patch again finds team-pull at position 0 and removes nothing.
	if _, err := sh(uninstallPullRemove); err == nil {
		t.Errorf("the guarded patch ran again without failing: its test removes nothing only if it fails")
	}
	if err := c.Get(ctx, types.NamespacedName{Namespace: "team-a", Name: "default"}, sa); err != nil || len(sa.ImagePullSecrets) != 1 {
		t.Errorf("imagePullSecrets after the refused patch = %v (%v), want team-pull kept", sa.ImagePullSecrets, err)
	}

	// The CRD last: the Function goes, and the garbage collector takes what it owned,
	// which stayed while the Function did.
	wantIn(uninstallBuildObjs, mustSh(uninstallBuildObjs), "pipeline.tekton.dev/func-1a2b3c4d-pack-git",
		"persistentvolumeclaim/func-1a2b3c4d-pack-git-pvc", "secret/func-1a2b3c4d-pack-git-secret")
	mustSh(uninstallCRDs)
	envtest.Until(t, "the build objects gone with the Function", func() bool {
		out, err := sh(uninstallBuildObjs)
		return err == nil && strings.Contains(out, "No resources found")
	})
	for _, name := range []string{"hello-registry-auth", "github-push"} {
		if err := c.Get(ctx, types.NamespacedName{Namespace: "team-a", Name: name}, &corev1.Secret{}); err != nil {
			t.Errorf("Secret %s, which no Function owned: %v", name, err)
		}
	}
	wantIn(uninstallReceivers, mustSh(uninstallReceivers), "github-push")
}

// splitConfigAsRelease writes config/ split as the release splits it into a new directory,
// with config/ itself beside (a checkout's commands run there too).
func splitConfigAsRelease(t *testing.T) string {
	t.Helper()
	root := envtest.RepoRoot()
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(root, "config"), filepath.Join(dir, "config")); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "config", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("config/*.yaml: %v", err)
	}
	var crds, operator []string
	for _, f := range files {
		content := string(readUninstallFile(t, f))
		if filepath.Base(f) == "300-function.yaml" {
			crds = append(crds, content)
			continue
		}
		operator = append(operator, content)
	}
	onboarding, err := filepath.Glob(filepath.Join(root, "config", "namespace", "*.yaml"))
	if err != nil || len(onboarding) == 0 {
		t.Fatalf("config/namespace/*.yaml: %v", err)
	}
	onboard := make([]string, 0, len(onboarding))
	for _, f := range onboarding {
		onboard = append(onboard, string(readUninstallFile(t, f)))
	}
	for name, docs := range map[string][]string{"func-operator-crds.yaml": crds, "func-operator.yaml": operator, "func-operator-onboarding.yaml": onboard} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Join(docs, "\n---\n")), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// operatorLease is a leader election Lease, as the running operator makes it.
func operatorLease(namespace, name string) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("func-operator-0"), LeaseDurationSeconds: ptr.To[int32](15)}}
}

func readUninstallFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

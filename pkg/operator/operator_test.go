package operator

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/test/gitserver"
)

const (
	token      = "tok-operator-test-7c1d"
	wrongToken = "tok-wrong-operator-test-5e2f"
)

func funcYAML(name, runtime string) string {
	return fmt.Sprintf("specVersion: 0.36.0\nname: %s\nruntime: %s\ninvoke: http\n", name, runtime)
}

// sourceReady returns "" when the Function's SourceReady condition has the status and
// reason wanted, else what it has.
func sourceReady(ns, name string, status corev1.ConditionStatus, reason string) func() string {
	return condition(ns, name, v1alpha1.FunctionConditionSourceReady, status, reason)
}

func getFunction(t *testing.T, ns, name string) *v1alpha1.Function {
	t.Helper()
	fn := &v1alpha1.Function{}
	if err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, fn); err != nil {
		t.Fatal(err)
	}
	return fn
}

func TestOperator_NewCommitIsObservedOnTheNextCheck(t *testing.T) {
	root := gitserver.NewRepoRoot(t)
	srv := gitserver.StartHTTP(t, root)
	repo := gitserver.CreateRepo(t, root, "app")
	repo.Commit(t, "main", map[string]string{"func.yaml": funcYAML("app", "go")}, "first")
	srv.RequireToken("app", token)

	ns := newNamespace(t)
	startOperator(t, 300*time.Millisecond, ns)
	ctx := context.Background()
	if err := k8sClient.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "git"},
		Data:       map[string][]byte{"token": []byte(token)},
	}); err != nil {
		t.Fatal(err)
	}
	if err := k8sClient.Create(ctx, &v1alpha1.Function{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
		Spec: v1alpha1.FunctionSpec{Repository: v1alpha1.Repository{
			URL: srv.URL("app"), Branch: "main", AuthSecretRef: &corev1.LocalObjectReference{Name: "git"},
		}},
	}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, sourceReady(ns, "app", corev1.ConditionTrue, v1alpha1.ReasonFuncYamlRead))

	second := repo.Commit(t, "main", map[string]string{"func.yaml": funcYAML("app", "node")}, "second")
	eventually(t, 20*time.Second, func() string {
		fn := getFunction(t, ns, "app")
		if fn.Status.Git == nil || fn.Status.Git.ObservedCommit != second || fn.Status.Deployment.Runtime != "node" {
			return fmt.Sprintf("status.git = %+v, deployment = %+v; want commit %s and runtime node", fn.Status.Git, fn.Status.Deployment, second)
		}
		return ""
	})

	// Between commits the periodic checks only list the branches: no clones.
	clones := srv.UploadPacks("app")
	lsRemotes := srv.RefAdvertisements("app")
	eventually(t, 20*time.Second, func() string {
		if got := srv.RefAdvertisements("app"); got < lsRemotes+3 {
			return fmt.Sprintf("%d periodic checks so far, waiting for 3", got-lsRemotes)
		}
		return ""
	})
	if got := srv.UploadPacks("app"); got != clones {
		t.Errorf("clones went from %d to %d without a new commit", clones, got)
	}
}

func TestOperator_SecretChangesReconcileTheFunctions(t *testing.T) {
	root := gitserver.NewRepoRoot(t)
	srv := gitserver.StartHTTP(t, root)
	repo := gitserver.CreateRepo(t, root, "private")
	repo.Commit(t, "main", map[string]string{"func.yaml": funcYAML("private", "go")}, "first")
	srv.RequireToken("private", token)

	ns := newNamespace(t)
	// An hour between periodic checks: whatever happens below comes from the Secret watch.
	startOperator(t, time.Hour, ns)
	ctx := context.Background()
	fn := &v1alpha1.Function{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "private"},
		Spec: v1alpha1.FunctionSpec{Repository: v1alpha1.Repository{
			URL: srv.URL("private"), AuthSecretRef: &corev1.LocalObjectReference{Name: "git"},
		}},
	}
	if err := k8sClient.Create(ctx, fn); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, sourceReady(ns, "private", corev1.ConditionFalse, v1alpha1.ReasonAuthSecretNotFound))

	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "git"},
		Data:       map[string][]byte{"token": []byte(wrongToken)},
	}
	if err := k8sClient.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, sourceReady(ns, "private", corev1.ConditionFalse, v1alpha1.ReasonBranchListFailed))

	secret.Data["token"] = []byte(token)
	if err := k8sClient.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, sourceReady(ns, "private", corev1.ConditionTrue, v1alpha1.ReasonFuncYamlRead))

	if err := k8sClient.Delete(ctx, secret); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, sourceReady(ns, "private", corev1.ConditionFalse, v1alpha1.ReasonAuthSecretNotFound))

	// The operator logged the stalls, and never a token.
	out := logs.String()
	if !strings.Contains(out, "reconcile stalled") || !strings.Contains(out, v1alpha1.ReasonBranchListFailed) {
		t.Errorf("the log has no stalled reconcile with reason %s: the capture is broken", v1alpha1.ReasonBranchListFailed)
	}
	for _, s := range []string{token, wrongToken} {
		if strings.Contains(out, s) {
			t.Errorf("the operator logged a token: %q", s)
		}
	}

	// The transitions were recorded as Events, without the token.
	eventually(t, 20*time.Second, func() string {
		var events corev1.EventList
		if err := k8sClient.List(ctx, &events, client.InNamespace(ns)); err != nil {
			return err.Error()
		}
		reasons := map[string]int{}
		for _, e := range events.Items {
			if strings.Contains(e.Message, token) || strings.Contains(e.Message, wrongToken) {
				t.Fatalf("event %s carries the token: %q", e.Name, e.Message)
			}
			if e.InvolvedObject.Name == "private" {
				reasons[e.Reason] += int(e.Count)
			}
		}
		for _, r := range []string{v1alpha1.ReasonAuthSecretNotFound, v1alpha1.ReasonBranchListFailed, "SourceReady"} {
			if reasons[r] == 0 {
				return fmt.Sprintf("events by reason %v, want %s among them", reasons, r)
			}
		}
		return ""
	})
}

// upstreamFunction is a Function as `func deploy` writes it: url, branch and path of
// a monorepo, and the registry Secret it creates, named <name>-registry-auth.
const upstreamFunction = `
apiVersion: functions.dev/v1alpha1
kind: Function
metadata:
  name: hello
  annotations:
    functions.knative.dev/last-deployed: "2026-11-20T10:00:00Z"
spec:
  repository:
    url: %s
    branch: develop
    path: functions/hello
  registry:
    authSecretRef:
      name: hello-registry-auth
`

func TestOperator_UpstreamFunctionReconciles(t *testing.T) {
	root := gitserver.NewRepoRoot(t)
	srv := gitserver.StartHTTP(t, root)
	repo := gitserver.CreateRepo(t, root, "mono")
	repo.Commit(t, "main", map[string]string{"README.md": "monorepo\n"}, "root")
	develop := repo.Commit(t, "develop", map[string]string{"functions/hello/func.yaml": funcYAML("hello", "go")}, "hello")

	ns := newNamespace(t)
	startOperator(t, time.Hour, ns)
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(fmt.Sprintf(upstreamFunction, srv.URL("mono"))), &u.Object); err != nil {
		t.Fatal(err)
	}
	u.SetNamespace(ns)
	if err := k8sClient.Create(context.Background(), u); err != nil {
		t.Fatalf("the API server refused the Function func deploy writes: %v", err)
	}
	eventually(t, 20*time.Second, sourceReady(ns, "hello", corev1.ConditionTrue, v1alpha1.ReasonFuncYamlRead))
	fn := getFunction(t, ns, "hello")
	if fn.Status.Name != "hello" || fn.Status.Git.ResolvedBranch != "develop" || fn.Status.Git.ObservedCommit != develop {
		t.Errorf("status = name %q, git %+v; want name hello, branch develop at %s", fn.Status.Name, fn.Status.Git, develop)
	}
	if fn.Spec.Registry.AuthSecretRef == nil || fn.Spec.Registry.AuthSecretRef.Name != "hello-registry-auth" {
		t.Errorf("spec.registry = %+v, want the registry Secret kept", fn.Spec.Registry)
	}
}

func TestOperator_WatchNamespaces(t *testing.T) {
	root := gitserver.NewRepoRoot(t)
	srv := gitserver.StartHTTP(t, root)
	repo := gitserver.CreateRepo(t, root, "r")
	repo.Commit(t, "main", map[string]string{"func.yaml": funcYAML("r", "go")}, "first")

	watched, other := newNamespace(t), newNamespace(t)
	startOperator(t, time.Hour, watched)
	ctx := context.Background()
	for _, ns := range []string{other, watched} { // the unwatched one first
		if err := k8sClient.Create(ctx, &v1alpha1.Function{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "r"},
			Spec:       v1alpha1.FunctionSpec{Repository: v1alpha1.Repository{URL: srv.URL("r")}},
		}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 20*time.Second, sourceReady(watched, "r", corev1.ConditionTrue, v1alpha1.ReasonFuncYamlRead))
	if fn := getFunction(t, other, "r"); len(fn.Status.Conditions) != 0 {
		t.Errorf("a Function outside WATCH_NAMESPACE was reconciled: %+v", fn.Status)
	}
}

func TestOperator_ConfigMapIsWatched(t *testing.T) {
	system, store := startOperator(t, time.Hour, newNamespace(t)) // an empty namespace: nothing to reconcile
	ctx := context.Background()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: system, Name: config.ConfigMapName},
		Data:       map[string]string{config.KeyCheckInterval: "42s", config.KeyGitTimeout: "15s"},
	}
	if err := k8sClient.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, func() string {
		if c := store.Load(); c.CheckInterval != 42*time.Second || c.GitTimeout != 15*time.Second {
			return fmt.Sprintf("config = %+v, want checkInterval 42s, gitTimeout 15s", c)
		}
		return ""
	})

	// An invalid value keeps the last good one; a misspelt key is reported; the valid
	// change beside them applies (the positive control that the update was read).
	cm.Data[config.KeyCheckInterval] = "every now and then"
	cm.Data[config.KeyGitTimeout] = "20s"
	cm.Data["maxConcurrentBuild"] = "9"
	if err := k8sClient.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, func() string {
		if c := store.Load(); c.CheckInterval != 42*time.Second || c.GitTimeout != 20*time.Second || c.MaxConcurrentBuilds != config.DefaultMaxConcurrentBuilds {
			return fmt.Sprintf("config = %+v, want checkInterval 42s kept, gitTimeout 20s, maxConcurrentBuilds the default", c)
		}
		var events corev1.EventList
		if err := k8sClient.List(ctx, &events, client.InNamespace(system)); err != nil {
			return err.Error()
		}
		reasons := map[string]bool{}
		for _, e := range events.Items {
			reasons[e.Reason+" "+e.Message] = true
			if e.Reason == "InvalidConfig" && strings.Contains(e.Message, config.KeyCheckInterval) {
				reasons["invalid"] = true
			}
			if e.Reason == "UnknownConfigKey" && strings.Contains(e.Message, "maxConcurrentBuild:") {
				reasons["unknown"] = true
			}
		}
		if !reasons["invalid"] || !reasons["unknown"] {
			return fmt.Sprintf("events %v: want InvalidConfig naming checkInterval and UnknownConfigKey naming maxConcurrentBuild", reasons)
		}
		return ""
	})
}

func TestOperator_AnnotationRequestsACheck(t *testing.T) {
	root := gitserver.NewRepoRoot(t)
	srv := gitserver.StartHTTP(t, root)
	repo := gitserver.CreateRepo(t, root, "r")
	repo.Commit(t, "main", map[string]string{"func.yaml": funcYAML("r", "go")}, "first")

	ns := newNamespace(t)
	startOperator(t, time.Hour, ns) // no periodic check within the test
	ctx := context.Background()
	fn := &v1alpha1.Function{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "r"},
		Spec:       v1alpha1.FunctionSpec{Repository: v1alpha1.Repository{URL: srv.URL("r")}},
	}
	if err := k8sClient.Create(ctx, fn); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, sourceReady(ns, "r", corev1.ConditionTrue, v1alpha1.ReasonFuncYamlRead))

	second := repo.Commit(t, "main", map[string]string{"func.yaml": funcYAML("r", "node")}, "second")
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"functions.dev/requested-at":"1"}}}`))
	if err := k8sClient.Patch(ctx, fn, patch); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, func() string {
		got := getFunction(t, ns, "r")
		if got.Status.Git == nil || got.Status.Git.ObservedCommit != second {
			return fmt.Sprintf("status.git = %+v, want commit %s after the annotation", got.Status.Git, second)
		}
		if got.Status.LastHandledRequestedAt != "1" {
			return fmt.Sprintf("status.lastHandledRequestedAt = %q, want the annotation's value", got.Status.LastHandledRequestedAt)
		}
		return ""
	})
}

func TestOperator_HealthProbes(t *testing.T) {
	addr := freeAddr(t)
	system := newNamespace(t)
	ownNamespaceRBAC(t, system)
	runManager(t, operatorConfig, Options{
		WatchNamespaces:              []string{newNamespace(t)}, // nothing to reconcile there
		SystemNamespace:              system,
		MetricsAddr:                  "0",
		ProbeAddr:                    addr,
		WorkDir:                      t.TempDir(),
		SkipControllerNameValidation: true,
	})
	for _, path := range []string{"/healthz", "/readyz"} {
		eventually(t, 20*time.Second, func() string {
			resp, err := http.Get("http://" + addr + path)
			if err != nil {
				return err.Error()
			}
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Sprintf("GET %s = %d", path, resp.StatusCode)
			}
			return ""
		})
	}
}

package operator

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/test/gitserver"
	"github.com/fnops/func-operator/test/registrytest"
)

// TestOperator_PolicyChangeReconcilesOnlyFunctionsWithoutOverride flips the operator's
// autoUpdateMiddleware and checks that only the Function following it is checked again.
func TestOperator_PolicyChangeReconcilesOnlyFunctionsWithoutOverride(t *testing.T) {
	reg := registrytest.Start(t)
	outdated := reg.Push(t, "fns/old", "v0.1.0")
	root := gitserver.NewRepoRoot(t)
	srv := gitserver.StartHTTP(t, root)
	for _, name := range []string{"follows", "overrides"} {
		gitserver.CreateRepo(t, root, name).Commit(t, "main", map[string]string{"func.yaml": funcYAML(name, "go") + "registry: " + reg.Host + "/fns\n"}, name)
	}

	ns := newNamespace(t)
	// No periodic check within the test, and a budget of 0 builds: the outdated
	// Functions wait in the rebuild queue.
	cfg := config.Defaults()
	cfg.CheckInterval, cfg.GitTimeout, cfg.MaxConcurrentBuilds = time.Hour, 10*time.Second, 0
	system, _, _ := startOperatorWith(t, cfg, ns)
	ctx := context.Background()
	yes := true
	for _, name := range []string{"follows", "overrides"} {
		svc := &servingv1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"function.knative.dev/name": name}},
			Spec: servingv1.ServiceSpec{ConfigurationSpec: servingv1.ConfigurationSpec{Template: servingv1.RevisionTemplateSpec{
				Spec: servingv1.RevisionSpec{PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Image: outdated}}}},
			}}},
		}
		fn := &v1alpha1.Function{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       v1alpha1.FunctionSpec{Repository: v1alpha1.Repository{URL: srv.URL(name)}},
		}
		if name == "overrides" {
			fn.Spec.AutoUpdateMiddleware = &yes
		}
		if err := k8sClient.Create(ctx, svc); err != nil {
			t.Fatal(err)
		}
		if err := k8sClient.Create(ctx, fn); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"follows", "overrides"} {
		eventually(t, 20*time.Second, condition(ns, name, v1alpha1.FunctionConditionMiddlewareUpToDate, corev1.ConditionFalse, v1alpha1.ReasonRebuildQueued))
	}
	checksOfOverride := srv.RefAdvertisements("overrides")

	if err := k8sClient.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: system, Name: config.ConfigMapName},
		Data:       map[string]string{config.KeyAutoUpdateMiddleware: "false", config.KeyMaxConcurrentBuilds: "0"},
	}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, condition(ns, "follows", v1alpha1.FunctionConditionMiddlewareUpToDate, corev1.ConditionFalse, v1alpha1.ReasonAutoUpdateDisabled))
	fn := getFunction(t, ns, "follows")
	if a := fn.Status.Middleware.AutoUpdate; a == nil || a.Enabled || a.Source != "OperatorConfig" || fn.Status.Middleware.PendingRebuild {
		t.Errorf("status.middleware = %+v, autoUpdate %+v; want auto-update off by OperatorConfig, no pending rebuild", fn.Status.Middleware, a)
	}
	// The Function with its own setting was not checked again, and still has a rebuild pending.
	if got := srv.RefAdvertisements("overrides"); got != checksOfOverride {
		t.Errorf("the Function with spec.autoUpdateMiddleware was checked %d more times after the policy change, want 0", got-checksOfOverride)
	}
	if c := getFunction(t, ns, "overrides").Status.GetCondition(v1alpha1.FunctionConditionMiddlewareUpToDate); c.Reason != v1alpha1.ReasonRebuildQueued {
		t.Errorf("MiddlewareUpToDate of the Function with its own setting = %+v, want RebuildQueued", c)
	}
	// The Function that no longer auto-updates left the queue.
	if b := fn.Status.Build; b != nil {
		t.Errorf("status.build of the Function with auto-update off = %+v, want none", b)
	}

	// rebuildCommit: the Functions without annotation functions.dev/rebuild-commit are
	// checked again, and say which commit a rebuild would build now; one with it is not.
	rebuildFrom := func(name, policy, source string) func() string {
		return func() string {
			mw := getFunction(t, ns, name).Status.Middleware
			if mw == nil || mw.RebuildFrom == nil || mw.RebuildFrom.Policy != policy || mw.RebuildFrom.PolicySource != source {
				return fmt.Sprintf("%s: status.middleware = %+v, want rebuildFrom policy %s set by %s", name, mw, policy, source)
			}
			return ""
		}
	}
	over := getFunction(t, ns, "overrides")
	over.Annotations = map[string]string{v1alpha1.AnnotationRebuildCommit: v1alpha1.RebuildCommitDeployed}
	if err := k8sClient.Update(ctx, over); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, rebuildFrom("overrides", "Deployed", "Annotation"))
	eventually(t, 20*time.Second, rebuildFrom("follows", "Deployed", "OperatorConfig"))
	checksOfOverride = srv.RefAdvertisements("overrides")
	var cm corev1.ConfigMap
	if err := k8sClient.Get(ctx, types.NamespacedName{Namespace: system, Name: config.ConfigMapName}, &cm); err != nil {
		t.Fatal(err)
	}
	cm.Data[config.KeyRebuildCommit] = v1alpha1.RebuildCommitFollowed
	if err := k8sClient.Update(ctx, &cm); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, rebuildFrom("follows", "Followed", "OperatorConfig"))
	if got := srv.RefAdvertisements("overrides"); got != checksOfOverride {
		t.Errorf("the Function with annotation %s was checked %d more times after rebuildCommit changed, want 0",
			v1alpha1.AnnotationRebuildCommit, got-checksOfOverride)
	}
	if msg := rebuildFrom("overrides", "Deployed", "Annotation")(); msg != "" {
		t.Error(msg)
	}
}

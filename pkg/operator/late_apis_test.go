package operator

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/test/envtest"
	"github.com/fnops/func-operator/test/gitserver"
)

// TestOperator_LateAPIs: on a cluster with neither Knative nor Tekton, an operator
// starts and says so; Knative Serving and Tekton are installed after it; without a
// restart, and with an hour between periodic checks, the Function sees its Knative
// Service (its watch started late and the Functions were checked again).
func TestOperator_LateAPIs(t *testing.T) {
	env := envtest.StartT(t) // the Function CRD only
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, ns := range []string{"func-system", "team-a"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	root := gitserver.NewRepoRoot(t)
	srv := gitserver.StartHTTP(t, root)
	gitserver.CreateRepo(t, root, "hello").Commit(t, "main", map[string]string{"func.yaml": funcYAML("hello", "go")}, "hello")
	if err := c.Create(ctx, &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "hello"},
		Spec: v1alpha1.FunctionSpec{Repository: v1alpha1.Repository{URL: srv.URL("hello")}}}); err != nil {
		t.Fatal(err)
	}

	store := config.NewStore()
	cfg := config.Defaults()
	cfg.CheckInterval = time.Hour
	store.Set(cfg)
	// This control plane is the test's own: the operator runs as its admin here.
	runManager(t, env.Config, Options{WatchNamespaces: []string{"team-a"}, SystemNamespace: "func-system",
		MetricsAddr: "0", ProbeAddr: "0", WorkDir: t.TempDir(), Config: store, APIRecheck: 300 * time.Millisecond,
		SkipControllerNameValidation: true})

	deployed := func(status corev1.ConditionStatus, reason string) func() string {
		return func() string {
			fn := &v1alpha1.Function{}
			if err := c.Get(ctx, types.NamespacedName{Namespace: "team-a", Name: "hello"}, fn); err != nil {
				return err.Error()
			}
			if d := fn.Status.GetCondition(v1alpha1.FunctionConditionDeployed); d == nil || d.Status != status || d.Reason != reason {
				return fmt.Sprintf("Deployed = %+v, want %s/%s", d, status, reason)
			}
			return ""
		}
	}
	eventually(t, 20*time.Second, deployed(corev1.ConditionUnknown, v1alpha1.ReasonKnativeServingNotInstalled))

	if err := env.InstallCRDs(envtest.KnativeServingCRDs, envtest.TektonCRDs); err != nil {
		t.Fatal(err)
	}
	// Brought back once the API is watched: still not deployed, but no longer "not installed".
	eventually(t, 20*time.Second, deployed(corev1.ConditionFalse, v1alpha1.ReasonNotDeployed))
	svc := &servingv1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "hello",
		Labels: map[string]string{"function.knative.dev/name": "hello"}},
		Spec: servingv1.ServiceSpec{ConfigurationSpec: servingv1.ConfigurationSpec{Template: servingv1.RevisionTemplateSpec{
			Spec: servingv1.RevisionSpec{PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Image: "127.0.0.1:5000/fns/hello:latest"}}}},
		}}}}
	if err := c.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	svc.Status.Conditions = duckv1.Conditions{{Type: apis.ConditionReady, Status: corev1.ConditionTrue}}
	svc.Status.ObservedGeneration = svc.Generation
	if err := c.Status().Update(ctx, svc); err != nil {
		t.Fatal(err)
	}
	// Seen through the Service watch started late: the check interval is an hour.
	eventually(t, 20*time.Second, deployed(corev1.ConditionTrue, v1alpha1.ReasonDeployed))
	// Tekton's PipelineRuns are watched too, from then on.
	for _, kind := range []string{"serving.knative.dev/v1, Kind=Service", "tekton.dev/v1, Kind=PipelineRun"} {
		found := false
		for _, line := range strings.Split(logs.String(), "\n") {
			found = found || strings.Contains(line, "is watched now") && strings.Contains(line, kind)
		}
		if !found {
			t.Errorf("no log line of the %s watch started late", kind)
		}
	}
}

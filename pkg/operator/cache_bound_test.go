package operator

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/knative"
	"github.com/fnops/func-operator/pkg/reconciler/function/resources"
	"github.com/fnops/func-operator/test/envtest"
)

// TestCache_TenantObjectsBounded: what a tenant writes into the kinds the operator
// caches (Knative Services and Revisions, PipelineRuns labelled as the operator's,
// Functions) costs the operator's live heap a bounded few KiB per object, however
// large the objects: 12 of each, 1 MiB of env, env, params and 200 KiB of
// annotations, through the real API server into the manager's informers. The
// positive control: the same objects held decoded, as a cache without the
// transforms would hold them, show in the same measure.
func TestCache_TenantObjectsBounded(t *testing.T) {
	const n = 12
	ctx := context.Background()
	// A control plane of its own, which no Knative Serving controller serves: the
	// suite's (test/knative) would copy these objects into Configurations and
	// Revisions, and its simulations, in this process, would count in the heap
	// measured here.
	plane := envtest.StartT(t, envtest.KnativeServingCRDs, envtest.TektonCRDs)
	k8sClient, err := plane.Client(envtestSchemes...)
	if err == nil {
		err = servingv1.AddToScheme(k8sClient.Scheme())
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := envtest.Apply(ctx, plane.Config, append(envtest.RBACFiles, envtest.PolicyFiles...)...); err != nil {
		t.Fatal(err)
	}
	ns := envtest.NewNamespace(t, plane.Config, "cache-", true)
	cfg := config.Defaults()
	cfg.CheckInterval = time.Hour
	store := config.NewStore()
	store.Set(cfg)
	mgr, _ := runManager(t, envtest.AsOperator(plane.Config), Options{
		WatchNamespaces: []string{ns}, SystemNamespace: "func-operator", MetricsAddr: "0", ProbeAddr: "0",
		WorkDir: t.TempDir(), Config: store, SkipControllerNameValidation: true,
	})
	cached := mgr.GetClient()
	kinds := []client.ObjectList{&servingv1.ServiceList{}, &servingv1.RevisionList{}, &pipelinev1.PipelineRunList{}, &v1alpha1.FunctionList{}}
	mib := strings.Repeat("x", 1<<20)
	env := []corev1.EnvVar{{Name: "BIG", Value: mib}}
	containers := []corev1.Container{{Name: "user-container", Image: "registry.example/fns/hello:latest", Env: env}}
	create := func(i int) {
		name := fmt.Sprintf("big-%d", i)
		objs := []client.Object{
			&v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
				Annotations: map[string]string{"note": mib[:200<<10], v1alpha1.AnnotationSuspend: "true"}},
				Spec: v1alpha1.FunctionSpec{Repository: v1alpha1.Repository{URL: "http://127.0.0.1:1/none.git"}}},
			&servingv1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{knative.FunctionNameLabel: name}},
				Spec: servingv1.ServiceSpec{ConfigurationSpec: servingv1.ConfigurationSpec{Template: servingv1.RevisionTemplateSpec{
					Spec: servingv1.RevisionSpec{PodSpec: corev1.PodSpec{Containers: containers}}}}}},
			// Knative's copy of a Service's template at each update (the tests play Knative).
			&servingv1.Revision{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-00001"},
				Spec: servingv1.RevisionSpec{PodSpec: corev1.PodSpec{Containers: containers}}},
			// Labelled as the operator's builds are (the cache selects by it), kept pending;
			// of no Function (the operator deletes the build objects of one it does not have).
			&pipelinev1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
				Labels: map[string]string{resources.LabelManagedBy: resources.ManagedBy}},
				Spec: pipelinev1.PipelineRunSpec{Status: pipelinev1.PipelineRunSpecStatusPending,
					PipelineRef: &pipelinev1.PipelineRef{Name: "none"},
					Params:      pipelinev1.Params{{Name: "big", Value: *pipelinev1.NewStructuredValues(mib)}}}},
		}
		for _, o := range objs {
			if err := k8sClient.Create(ctx, o); err != nil {
				t.Fatalf("creating %T %s: %v", o, name, err)
			}
		}
	}
	cachedAll := func(want int) {
		t.Helper()
		eventually(t, time.Minute, func() string {
			for _, l := range kinds {
				if err := cached.List(ctx, l, client.InNamespace(ns)); err != nil {
					return err.Error()
				}
				if items, err := meta.ExtractList(l); err != nil || len(items) != want {
					return fmt.Sprintf("%T: %d cached (%v), want %d", l, len(items), err, want)
				}
			}
			return ""
		})
	}
	// One of each first: a watch keeps a decoding buffer as large as the largest
	// object it was sent (client-go), a cost per watch, not per object.
	create(0)
	cachedAll(1)
	base := liveHeap()
	for i := 1; i <= n; i++ {
		create(i)
	}
	cachedAll(n + 1)
	// What is read survives: a Function keeps its settings, a Service its image.
	fn := &v1alpha1.Function{}
	if err := cached.Get(ctx, client.ObjectKey{Namespace: ns, Name: "big-0"}, fn); err != nil || fn.Annotations[v1alpha1.AnnotationSuspend] != "true" {
		t.Fatalf("cached Function big-0: %v, annotations %d; want the suspend setting kept", err, len(fn.Annotations))
	}
	cachedHeap := liveHeap() - base

	// The positive control: the same objects, decoded and held.
	held := make([]client.ObjectList, 0, 4)
	for _, l := range []client.ObjectList{&servingv1.ServiceList{}, &servingv1.RevisionList{}, &pipelinev1.PipelineRunList{}, &v1alpha1.FunctionList{}} {
		if err := mgr.GetAPIReader().List(ctx, l, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
	}
	heldHeap := liveHeap() - base - cachedHeap
	runtime.KeepAlive(held)

	t.Logf("%d Services, Revisions, PipelineRuns and Functions of 1 MiB (the Functions 200 KiB): the operator's caches hold %d KiB more live heap; the objects held decoded %d KiB",
		n, cachedHeap>>10, heldHeap>>10)
	// Generous: slim objects encode in 0.5-2.5 KiB; the measure moves by about a MiB
	// between runs (what else the process keeps live).
	const perObject, noise = 8 << 10, 2 << 20
	if heldHeap < 3*n<<20 {
		t.Errorf("the control: %d KiB held for the objects decoded, want more than %d MiB: the measure does not see them", heldHeap>>10, 3*n)
	}
	if cachedHeap > int64(4*n*perObject+noise) {
		t.Errorf("the operator's caches hold %d KiB more for %d objects, want at most %d KiB", cachedHeap>>10, 4*n, (4*n*perObject+noise)>>10)
	}
}

// liveHeap is the heap the last of two collections left live, in bytes.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

package envtest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	autoscalingv1alpha1 "knative.dev/serving/pkg/apis/autoscaling/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// AutoscalerOptions configure the Knative autoscaler simulation.
type AutoscalerOptions struct {
	// Logf, when set, logs what the simulation could not write (it retries).
	Logf func(format string, args ...any)
	// Observe, when set, is told in one sentence each PodAutoscaler it made active
	// or scaled to zero (for a narration: make demo).
	Observe func(msg string)
}

// Autoscaler is a running simulation of Knative's autoscaler (the KPA reconciler
// of knative.dev/serving/cmd/autoscaler), which cannot run here: it decides from
// the requests its activator and the pods' queue-proxies count, and it scrapes the
// pods, which run nowhere.
//
// For each PodAutoscaler the real Serving controller makes for a Revision, it plays
// what the autoscaler writes at a Revision's initial scale of one, or scaled to
// zero (ScaleToZero): the Deployment's replicas (1, or 0), and the PA's status, with
// Knative's own lifecycle helpers — ServiceName (the Revision's name, as the
// autoscaler's ServerlessService names it), MetricsServiceName, the desired and
// actual scale (the Deployment's ready replicas), SKSReady, ScaleTargetInitialized
// once a pod was ready, Active True with a ready pod (Queued while none is),
// Inactive (NoTraffic) at zero. No ServerlessService or Metric is made. The
// simulation writes as the user of the rest.Config it was given.
type Autoscaler struct {
	opts AutoscalerOptions
	c    client.Client
	sim  *simulation

	mu     sync.Mutex
	atZero map[types.NamespacedName]bool
}

// SimulateAutoscaler starts the simulation and returns once it watches the
// PodAutoscalers; it runs until ctx ends or Stop.
func SimulateAutoscaler(ctx context.Context, cfg *rest.Config, opts AutoscalerOptions) (*Autoscaler, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, autoscalingv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("autoscaler simulation: building the scheme: %w", err)
		}
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("autoscaler simulation: creating a client: %w", err)
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("autoscaler simulation: creating a client: %w", err)
	}
	a := &Autoscaler{opts: opts, c: c, atZero: map[types.NamespacedName]bool{}}
	factory := dynamicinformer.NewDynamicSharedInformerFactory(dc, kubeletResync)
	informer := factory.ForResource(autoscalingv1alpha1.SchemeGroupVersion.WithResource("podautoscalers")).Informer()
	a.sim, err = startSimulation(ctx, "autoscaler simulation", informer, factory.Start, factory.Shutdown, func(ctx context.Context, obj any) error {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return nil
		}
		pa := &autoscalingv1alpha1.PodAutoscaler{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, pa); err != nil {
			return fmt.Errorf("decoding PodAutoscaler %s/%s: %w", u.GetNamespace(), u.GetName(), err)
		}
		return a.sync(ctx, pa)
	}, opts.Logf)
	if err != nil {
		return nil, err
	}
	return a, nil
}

// SimulateAutoscalerT starts the simulation for one test (SimulateAutoscaler),
// logging what it could not write, and stops it when the test ends.
func SimulateAutoscalerT(t testing.TB, cfg *rest.Config, opts AutoscalerOptions) *Autoscaler {
	t.Helper()
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	a, err := SimulateAutoscaler(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Stop)
	return a
}

// ScaleToZero scales the Revision of namespace ns to zero, as the autoscaler does
// once no request came for its stable window; Activate brings it back to one, as a
// request would.
func (a *Autoscaler) ScaleToZero(ns, revision string) { a.setZero(ns, revision, true) }

// Activate scales a Revision ScaleToZero scaled down back to one.
func (a *Autoscaler) Activate(ns, revision string) { a.setZero(ns, revision, false) }

func (a *Autoscaler) setZero(ns, revision string, zero bool) {
	a.mu.Lock()
	a.atZero[types.NamespacedName{Namespace: ns, Name: revision}] = zero
	a.mu.Unlock()
	a.sim.resync()
}

// Stop stops the simulation and waits for it; it may be called more than once.
func (a *Autoscaler) Stop() { a.sim.stop() }

// sync scales pa's Deployment and writes the status the autoscaler would.
func (a *Autoscaler) sync(ctx context.Context, pa *autoscalingv1alpha1.PodAutoscaler) error {
	if pa.DeletionTimestamp != nil {
		return nil
	}
	a.mu.Lock()
	zero := a.atZero[types.NamespacedName{Namespace: pa.Namespace, Name: pa.Name}]
	a.mu.Unlock()
	want := int32(1)
	if zero {
		want = 0
	}
	deploy := &appsv1.Deployment{}
	err := a.c.Get(ctx, types.NamespacedName{Namespace: pa.Namespace, Name: pa.Spec.ScaleTargetRef.Name}, deploy)
	if apierrors.IsNotFound(err) {
		return nil // the Revision makes it; its event comes back through the PA's resync
	}
	if err != nil {
		return fmt.Errorf("reading Deployment %s/%s: %w", pa.Namespace, pa.Spec.ScaleTargetRef.Name, err)
	}
	if deploy.Spec.Replicas == nil || *deploy.Spec.Replicas != want {
		patch := client.MergeFrom(deploy.DeepCopy())
		deploy.Spec.Replicas = ptr.To(want)
		if err := a.c.Patch(ctx, deploy, patch); err != nil {
			return fmt.Errorf("scaling Deployment %s/%s to %d: %w", deploy.Namespace, deploy.Name, want, err)
		}
	}
	status := *pa.Status.DeepCopy()
	status.InitializeConditions()
	status.ObservedGeneration = pa.Generation
	status.ServiceName = pa.Name
	status.MetricsServiceName = pa.Name + "-private"
	status.DesiredScale = ptr.To(want)
	status.ActualScale = ptr.To(deploy.Status.ReadyReplicas)
	status.MarkSKSReady()
	switch {
	case zero:
		status.MarkInactive("NoTraffic", "The target is not receiving traffic.")
	case deploy.Status.ReadyReplicas > 0:
		status.MarkScaleTargetInitialized()
		status.MarkActive()
	default:
		status.MarkActivating("Queued", "Requests to the target are being buffered as resources are provisioned.")
	}
	if equality.Semantic.DeepEqual(status, pa.Status) {
		return nil
	}
	wasActive := pa.Status.IsActive()
	pa.Status = status
	if err := a.c.Status().Update(ctx, pa); err != nil {
		return fmt.Errorf("writing the status of PodAutoscaler %s/%s: %w", pa.Namespace, pa.Name, err)
	}
	switch observe := a.opts.Observe; {
	case observe == nil || wasActive == status.IsActive():
	case status.IsActive():
		observe(fmt.Sprintf("Revision %s/%s: active, one pod ready (autoscaler simulation)", pa.Namespace, pa.Name))
	case zero:
		observe(fmt.Sprintf("Revision %s/%s: scaled to zero (autoscaler simulation)", pa.Namespace, pa.Name))
	}
	return nil
}

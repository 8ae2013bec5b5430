package envtest

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	networkingv1alpha1 "knative.dev/networking/pkg/apis/networking/v1alpha1"
)

// Addresses the networking simulation reports, as Kourier's (Knative's default
// ingress) Services are named: the Route points its placeholder Services at them (by
// name; nothing resolves or connects to them here).
const (
	IngressPublicAddress  = "kourier.kourier-system.svc.cluster.local"
	IngressPrivateAddress = "kourier-internal.kourier-system.svc.cluster.local"
)

// NetworkingOptions configure the networking layer simulation.
type NetworkingOptions struct {
	// Logf, when set, logs what the simulation could not write (it retries).
	Logf func(format string, args ...any)
	// Observe, when set, is told in one sentence each generation of a KIngress the
	// simulation marked served (for a narration: make demo).
	Observe func(msg string)
}

// Networking is a running simulation of Knative's networking layer (an ingress
// such as Kourier, Contour or Istio's net-istio), which programs a proxy data plane
// that does not run here.
//
// For each KIngress the real Serving controller makes for a Route, it plays what
// the layer writes once its proxies serve the KIngress's generation: NetworkConfigured
// and LoadBalancerReady True (Knative's own lifecycle helpers), with
// IngressPublicAddress and IngressPrivateAddress as the load balancers. No request
// is routed. The simulation writes as the user of the rest.Config it was given.
type Networking struct {
	opts NetworkingOptions
	dc   dynamic.Interface
	sim  *simulation
}

var ingressesResource = networkingv1alpha1.SchemeGroupVersion.WithResource("ingresses")

// SimulateNetworking starts the simulation and returns once it watches the
// KIngresses; it runs until ctx ends or Stop.
func SimulateNetworking(ctx context.Context, cfg *rest.Config, opts NetworkingOptions) (*Networking, error) {
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("networking simulation: creating a client: %w", err)
	}
	n := &Networking{opts: opts, dc: dc}
	factory := dynamicinformer.NewDynamicSharedInformerFactory(dc, kubeletResync)
	informer := factory.ForResource(ingressesResource).Informer()
	n.sim, err = startSimulation(ctx, "networking simulation", informer, factory.Start, factory.Shutdown, func(ctx context.Context, obj any) error {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return nil
		}
		return n.sync(ctx, u)
	}, opts.Logf)
	if err != nil {
		return nil, err
	}
	return n, nil
}

// SimulateNetworkingT starts the simulation for one test (SimulateNetworking),
// logging what it could not write, and stops it when the test ends.
func SimulateNetworkingT(t testing.TB, cfg *rest.Config, opts NetworkingOptions) *Networking {
	t.Helper()
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	n, err := SimulateNetworking(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	return n
}

// Stop stops the simulation and waits for it; it may be called more than once.
func (n *Networking) Stop() { n.sim.stop() }

// sync marks the KIngress's generation served.
func (n *Networking) sync(ctx context.Context, u *unstructured.Unstructured) error {
	ing := &networkingv1alpha1.Ingress{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, ing); err != nil {
		return fmt.Errorf("decoding KIngress %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	if ing.DeletionTimestamp != nil {
		return nil
	}
	status := *ing.Status.DeepCopy()
	status.InitializeConditions()
	status.ObservedGeneration = ing.Generation
	status.MarkNetworkConfigured()
	status.MarkLoadBalancerReady(
		[]networkingv1alpha1.LoadBalancerIngressStatus{{DomainInternal: IngressPublicAddress}},
		[]networkingv1alpha1.LoadBalancerIngressStatus{{DomainInternal: IngressPrivateAddress}})
	if equality.Semantic.DeepEqual(status, ing.Status) {
		return nil
	}
	ing.Status = status
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ing)
	if err != nil {
		return fmt.Errorf("encoding KIngress %s/%s: %w", ing.Namespace, ing.Name, err)
	}
	if _, err := n.dc.Resource(ingressesResource).Namespace(ing.Namespace).UpdateStatus(ctx, &unstructured.Unstructured{Object: obj}, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("writing the status of KIngress %s/%s: %w", ing.Namespace, ing.Name, err)
	}
	if n.opts.Observe != nil {
		n.opts.Observe(fmt.Sprintf("KIngress %s/%s generation %d: network configured, load balancer %s ready (networking simulation)",
			ing.Namespace, ing.Name, ing.Generation, IngressPublicAddress))
	}
	return nil
}

package envtest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// KnativeServingOptions configure the Knative Serving simulation.
type KnativeServingOptions struct {
	// Namespace limits the simulation to one namespace; empty for every namespace.
	Namespace string
	// Domain is the domain of the Services' URLs (http://<name>.<namespace>.<domain>);
	// "example.com" when empty, as Knative's default.
	Domain string
	// Logf, when set, logs what the simulation could not write (it retries).
	Logf func(format string, args ...any)
	// Observe, when set, is told in one sentence each Revision the simulation made
	// ready (for a narration: make demo).
	Observe func(msg string)
}

// KnativeServing is a running simulation of Knative Serving's controllers, which
// need a data plane and do not run in envtest (install the CRDs with
// KnativeServingCRDs).
//
// For each generation of a Knative Service it plays what Serving's controllers write
// once the new Revision's pods are ready: the Revision <service>-<generation, 5
// digits> (owned by the Service, labelled serving.knative.dev/service, the template's
// spec), Ready with the image's digest in its container status when the image is
// named by digest; and the Service's status — observedGeneration, Ready,
// ConfigurationsReady and RoutesReady True, the latest created and ready Revision,
// its URL and address, and all the traffic to the latest Revision. No pod runs and
// no request is served. The simulation writes as the user of the rest.Config it was
// given.
type KnativeServing struct {
	opts KnativeServingOptions
	c    client.Client
	sim  *simulation
}

// SimulateKnativeServing starts the simulation and returns once it watches the
// Knative Services; it runs until ctx ends or Stop.
func SimulateKnativeServing(ctx context.Context, cfg *rest.Config, opts KnativeServingOptions) (*KnativeServing, error) {
	if opts.Domain == "" {
		opts.Domain = "example.com"
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, servingv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("knative Serving simulation: building the scheme: %w", err)
		}
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("knative Serving simulation: creating a client: %w", err)
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("knative Serving simulation: creating a client: %w", err)
	}
	s := &KnativeServing{opts: opts, c: c}
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dc, kubeletResync, opts.Namespace, nil)
	informer := factory.ForResource(servingv1.SchemeGroupVersion.WithResource("services")).Informer()
	s.sim, err = startSimulation(ctx, "Knative Serving simulation", informer, factory.Start, factory.Shutdown, func(ctx context.Context, obj any) error {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return nil
		}
		svc := &servingv1.Service{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, svc); err != nil {
			return fmt.Errorf("decoding Knative Service %s/%s: %w", u.GetNamespace(), u.GetName(), err)
		}
		return s.sync(ctx, svc)
	}, opts.Logf)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// SimulateKnativeServingT starts the simulation for one test (SimulateKnativeServing),
// logging what it could not write, and stops it when the test ends.
func SimulateKnativeServingT(t testing.TB, cfg *rest.Config, opts KnativeServingOptions) *KnativeServing {
	t.Helper()
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	s, err := SimulateKnativeServing(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// Stop stops the simulation and waits for it; it may be called more than once.
func (s *KnativeServing) Stop() { s.sim.stop() }

// RevisionName is the name of the Revision of a Service's generation, as the
// simulation names it (Knative names it after the Configuration's generation, which
// follows the Service's).
func RevisionName(service string, generation int64) string {
	return fmt.Sprintf("%s-%05d", service, generation)
}

// sync makes the Revision of svc's generation and reports it ready and serving.
func (s *KnativeServing) sync(ctx context.Context, svc *servingv1.Service) error {
	if svc.DeletionTimestamp != nil || svc.Status.ObservedGeneration == svc.Generation && svc.Status.GetCondition(apis.ConditionReady).IsTrue() {
		return nil
	}
	name := RevisionName(svc.Name, svc.Generation)
	image := ""
	if cs := svc.Spec.Template.Spec.Containers; len(cs) > 0 {
		image = cs[0].Image
	}
	rev := &servingv1.Revision{}
	err := s.c.Get(ctx, types.NamespacedName{Namespace: svc.Namespace, Name: name}, rev)
	if apierrors.IsNotFound(err) {
		rev = &servingv1.Revision{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: svc.Namespace, Name: name,
				Labels: map[string]string{
					"serving.knative.dev/service": svc.Name, "serving.knative.dev/configuration": svc.Name,
					"serving.knative.dev/configurationGeneration": fmt.Sprint(svc.Generation),
				},
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(svc, servingv1.SchemeGroupVersion.WithKind("Service"))},
			},
			Spec: *svc.Spec.Template.Spec.DeepCopy(),
		}
		if err := s.c.Create(ctx, rev); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating Revision %s/%s: %w", svc.Namespace, name, err)
		}
		if err := s.c.Get(ctx, types.NamespacedName{Namespace: svc.Namespace, Name: name}, rev); err != nil {
			return fmt.Errorf("reading Revision %s/%s: %w", svc.Namespace, name, err)
		}
	} else if err != nil {
		return fmt.Errorf("reading Revision %s/%s: %w", svc.Namespace, name, err)
	}
	if !rev.Status.GetCondition(apis.ConditionReady).IsTrue() {
		rev.Status.ObservedGeneration = rev.Generation
		rev.Status.Conditions = readyConditions(apis.ConditionReady, "ContainerHealthy", "ResourcesAvailable")
		rev.Status.ContainerStatuses = nil
		if strings.Contains(image, "@sha256:") {
			rev.Status.ContainerStatuses = []servingv1.ContainerStatus{{Name: "user-container", ImageDigest: image}}
		}
		if err := s.c.Status().Update(ctx, rev); err != nil {
			return fmt.Errorf("writing the status of Revision %s/%s: %w", svc.Namespace, name, err)
		}
	}
	url := apis.HTTP(fmt.Sprintf("%s.%s.%s", svc.Name, svc.Namespace, s.opts.Domain))
	svc.Status.ObservedGeneration = svc.Generation
	svc.Status.Conditions = readyConditions(apis.ConditionReady, servingv1.ServiceConditionConfigurationsReady, servingv1.ServiceConditionRoutesReady)
	svc.Status.LatestCreatedRevisionName, svc.Status.LatestReadyRevisionName = name, name
	svc.Status.URL = url
	svc.Status.Address = &duckv1.Addressable{URL: apis.HTTP(fmt.Sprintf("%s.%s.svc.cluster.local", svc.Name, svc.Namespace))}
	svc.Status.Traffic = []servingv1.TrafficTarget{{RevisionName: name, LatestRevision: ptr.To(true), Percent: ptr.To[int64](100)}}
	if err := s.c.Status().Update(ctx, svc); err != nil {
		return fmt.Errorf("writing the status of Knative Service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	if s.opts.Observe != nil {
		s.opts.Observe(fmt.Sprintf("Service %s/%s: Revision %s ready, running %s, serving 100%% of the traffic at %s",
			svc.Namespace, svc.Name, name, image, url))
	}
	return nil
}

// readyConditions returns the conditions given, each True.
func readyConditions(kinds ...apis.ConditionType) duckv1.Conditions {
	now := apis.VolatileTime{Inner: metav1.Now()}
	out := make(duckv1.Conditions, 0, len(kinds))
	for _, t := range kinds {
		out = append(out, apis.Condition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	return out
}

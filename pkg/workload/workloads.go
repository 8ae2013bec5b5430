package workload

import (
	"context"
	"fmt"
	"sync/atomic"

	kedav1alpha1 "github.com/kedacore/http-add-on/operator/apis/http/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/pkg/funclib"
)

// FunctionNameLabel is the label func's deployers put on everything they deploy for
// a function, naming it. The caches hold only objects that carry it (CacheSelector).
const FunctionNameLabel = "function.knative.dev/name"

// ContainerName is the container func's raw deployer runs the function in.
const ContainerName = "user-container"

// Workload is a function deployed by func's raw or keda deployer, as the caches hold it.
type Workload struct {
	// Deployer is funclib.DeployerRaw or funclib.DeployerKeda: the core Service's
	// annotation funclib.DeployerAnnotation.
	Deployer string
	// Deployment runs the function; the Function binds to its UID.
	Deployment *appsv1.Deployment
	// Service is the core Service's metadata.
	Service *metav1.PartialObjectMetadata
	// ScaledObject is the keda deployer's HTTPScaledObject; nil for raw, and for keda
	// when there is none (or the cluster serves no HTTPScaledObjects: NoKEDA).
	ScaledObject *kedav1alpha1.HTTPScaledObject
	// NoKEDA: the cluster serves no HTTPScaledObjects (no KEDA HTTP add-on).
	NoKEDA bool
}

// Name is the function's (and its Deployment's) name.
func (w *Workload) Name() string { return w.Deployment.Name }

// UID is the Deployment's: what a Function binds to.
func (w *Workload) UID() types.UID { return w.Deployment.UID }

// Image is the image the Deployment's template runs in func's container (the first
// container when none has its name): by digest when func deployed a build's image.
func (w *Workload) Image() string {
	cs := w.Deployment.Spec.Template.Spec.Containers
	for _, c := range cs {
		if c.Name == ContainerName {
			return c.Image
		}
	}
	if len(cs) > 0 {
		return cs[0].Image
	}
	return ""
}

// Routes are the function's URLs, as func's describers give them: the core Service's
// cluster address for raw, the HTTPScaledObject's hosts (on the interceptor's port)
// for keda.
func (w *Workload) Routes() []string {
	if w.Deployer == funclib.DeployerKeda && w.ScaledObject != nil {
		routes := make([]string, 0, len(w.ScaledObject.Spec.Hosts))
		for _, h := range w.ScaledObject.Spec.Hosts {
			routes = append(routes, fmt.Sprintf("http://%s:8080", h))
		}
		return routes
	}
	return []string{fmt.Sprintf("http://%s.%s.svc", w.Service.Name, w.Service.Namespace)}
}

// Workloads finds raw and keda functions. With the manager's client as Reader, every
// read is served by an informer cache.
type Workloads struct {
	Reader client.Reader
	// Subscriptions returns the Knative Eventing Triggers of namespace that deliver
	// to one of hosts (knative.Services.SubscriptionsTo); nil: none are looked for.
	Subscriptions func(ctx context.Context, namespace string, hosts []string) ([]funclib.Subscription, error)

	// keda is true once the cluster serves HTTPScaledObjects: before, none is looked
	// for (a read of a kind the cluster does not serve makes the cache ask discovery
	// again, under a lock every cached read takes).
	keda atomic.Bool
}

// EnableKEDA makes Find look for HTTPScaledObjects: the cluster serves them.
func (ws *Workloads) EnableKEDA() { ws.keda.Store(true) }

// KEDAServed reports whether the cluster serves HTTPScaledObjects (EnableKEDA).
func (ws *Workloads) KEDAServed() bool { return ws.keda.Load() }

// Find returns the function name of namespace as func's raw or keda deployer deployed
// it, or an error wrapping funclib.ErrNotDeployed when there is none: no core Service
// of that name, one that neither deployer annotated, or no Deployment beside it.
func (ws *Workloads) Find(ctx context.Context, name, namespace string) (*Workload, error) {
	key := types.NamespacedName{Namespace: namespace, Name: name}
	svc := &metav1.PartialObjectMetadata{}
	svc.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Service"))
	if err := ws.Reader.Get(ctx, key, svc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("no Service %s/%s: %w", namespace, name, funclib.ErrNotDeployed)
		}
		return nil, fmt.Errorf("reading Service %s/%s: %w", namespace, name, err)
	}
	deployer := svc.Annotations[funclib.DeployerAnnotation]
	if deployer != funclib.DeployerRaw && deployer != funclib.DeployerKeda {
		return nil, fmt.Errorf("service %s/%s was not deployed by func's raw or keda deployer (annotation %s is %q): %w",
			namespace, name, funclib.DeployerAnnotation, deployer, funclib.ErrNotDeployed)
	}
	d := &appsv1.Deployment{}
	if err := ws.Reader.Get(ctx, key, d); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("service %s/%s of func's %s deployer has no Deployment beside it: %w", namespace, name, deployer, funclib.ErrNotDeployed)
		}
		return nil, fmt.Errorf("reading Deployment %s/%s: %w", namespace, name, err)
	}
	w := &Workload{Deployer: deployer, Deployment: d, Service: svc, NoKEDA: !ws.keda.Load()}
	if deployer == funclib.DeployerKeda && ws.keda.Load() {
		so := &kedav1alpha1.HTTPScaledObject{}
		switch err := ws.Reader.Get(ctx, key, so); {
		case err == nil:
			w.ScaledObject = so
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("reading HTTPScaledObject %s/%s: %w", namespace, name, err)
		}
	}
	return w, nil
}

// Source returns the funclib.InstanceSource of deployer's functions (raw or keda),
// for the func library's describe.
func (ws *Workloads) Source(deployer string) funclib.InstanceSource {
	return source{ws: ws, deployer: deployer}
}

type source struct {
	ws       *Workloads
	deployer string
}

// Instance describes the function as func's describer of the deployer would, from
// the caches.
func (s source) Instance(ctx context.Context, name, namespace string) (funclib.Instance, error) {
	w, err := s.ws.Find(ctx, name, namespace)
	if err != nil {
		return funclib.Instance{}, err
	}
	if w.Deployer != s.deployer {
		return funclib.Instance{}, fmt.Errorf("function %s/%s was deployed by func's %s deployer, not %s: %w", namespace, name, w.Deployer, s.deployer, funclib.ErrNotDeployed)
	}
	in := funclib.Instance{Name: name, Namespace: namespace, Image: w.Image(), Routes: w.Routes(), Deployer: w.Deployer}
	if len(in.Routes) > 0 {
		in.Route = in.Routes[0]
	}
	if s.ws.Subscriptions != nil {
		// func's raw deployer subscribes the core Service by its cluster address (the
		// keda one embeds it).
		hosts := []string{fmt.Sprintf("%s.%s.svc.cluster.local", name, namespace), fmt.Sprintf("%s.%s.svc", name, namespace)}
		if in.Subscriptions, err = s.ws.Subscriptions(ctx, namespace, hosts); err != nil {
			return funclib.Instance{}, err
		}
	}
	return in, nil
}

package function

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	eventingv1 "knative.dev/eventing/pkg/apis/eventing/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/reconciler/function/resources"
)

// Indexes of Functions.
const (
	// secretRefIndex indexes Functions by the names of the Secrets they reference.
	secretRefIndex = "functions.dev/secret-refs"
	// functionNameIndex indexes Functions by the function name their func.yaml gives,
	// which is the name of their Knative Service.
	functionNameIndex = "functions.dev/function-name"
)

// ControllerName names the Function controller in logs and metrics.
const ControllerName = "function"

// SetupWithManager registers the reconciler: Functions are reconciled when their spec
// or annotations change, when their Knative Service changes, and (through
// tenancy.SecretWatches and Wakeups, in the namespaces that onboarded the operator) when a
// Secret they reference changes. Without Knative Serving on the cluster, Services are
// not watched.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr manager.Manager, concurrency int) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &v1alpha1.Function{}, secretRefIndex, secretRefs); err != nil {
		return fmt.Errorf("indexing Functions by Secret: %w", err)
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &v1alpha1.Function{}, functionNameIndex, functionName); err != nil {
		return fmt.Errorf("indexing Functions by function name: %w", err)
	}
	r.watch.namesIndexed = true
	b := builder.ControllerManagedBy(mgr).WatchesRawSource(r.watch.wakeups.source())
	if r.targets.workloads != nil {
		// func's raw and keda deployers: a Deployment and a core Service (by metadata)
		// of the function's name, both served by every cluster.
		b = b.WatchesRawSource(source.Kind[client.Object](mgr.GetCache(), &appsv1.Deployment{}, handler.EnqueueRequestsFromMapFunc(r.watch.functionsForService))).
			WatchesMetadata(&corev1.Service{}, handler.EnqueueRequestsFromMapFunc(r.watch.functionsForService))
	}
	late := &LateAPIs{Manager: mgr, Reconciler: r}
	for _, api := range r.optionalAPIs() {
		ok, err := installed(mgr, api.gvk)
		if err != nil {
			return err
		}
		if ok {
			b = b.WatchesRawSource(api.source(mgr))
			if api.found != nil {
				api.found()
			}
			continue
		}
		log.FromContext(ctx).Info(api.missing)
		if api.absent != nil {
			api.absent()
		}
		late.missing = append(late.missing, api)
	}
	c, err := b.
		Named(ControllerName).
		For(&v1alpha1.Function{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{},
			predicate.AnnotationChangedPredicate{},
			predicate.LabelChangedPredicate{},
		))).
		// A deleted Function frees its Knative Service for the others of its function name.
		Watches(&v1alpha1.Function{}, handler.EnqueueRequestsFromMapFunc(r.watch.rivals), builder.WithPredicates(predicate.Funcs{
			CreateFunc:  func(event.CreateEvent) bool { return false },
			UpdateFunc:  holderChanged,
			DeleteFunc:  func(event.DeleteEvent) bool { return true },
			GenericFunc: func(event.GenericEvent) bool { return false },
		})).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: concurrency,
			RateLimiter:             newRetryLimiter(func() time.Duration { return retryCeiling(r.config.Load().CheckInterval) }),
		}).
		Build(r)
	if err != nil {
		return err
	}
	if len(late.missing) == 0 {
		return nil
	}
	late.Controller, late.Interval = c, r.watch.apiRecheck
	return mgr.Add(late)
}

// secretRefs returns the Secrets a Function references.
func secretRefs(o client.Object) []string {
	fn, ok := o.(*v1alpha1.Function)
	if !ok {
		return nil
	}
	var names []string
	if ref := fn.Spec.Repository.AuthSecretRef; ref != nil && ref.Name != "" {
		names = append(names, ref.Name)
	}
	if ref := fn.Spec.Registry.AuthSecretRef; ref != nil && ref.Name != "" {
		names = append(names, ref.Name)
	}
	return names
}

// SecretChanged brings back the Functions of the Secret's namespace that reference it.
func (r *Reconciler) SecretChanged(ctx context.Context, secret client.Object) {
	for _, req := range r.watch.functionsForSecret(ctx, secret) {
		r.watch.wakeups.Enqueue(req.NamespacedName)
	}
}

// functionsForSecret maps a Secret to the Functions of its namespace that reference it.
func (w *watches) functionsForSecret(ctx context.Context, o client.Object) []reconcile.Request {
	var list v1alpha1.FunctionList
	if err := w.client.List(ctx, &list, client.InNamespace(o.GetNamespace()),
		client.MatchingFields{secretRefIndex: o.GetName()}); err != nil {
		log.FromContext(ctx).Error(err, "listing the Functions that reference a Secret", "secret", o.GetName())
		return nil
	}
	return requestsFor(list)
}

// watches maps what the controller watches besides Functions to the Functions it
// concerns, and brings Functions back from outside the watches.
type watches struct {
	client       client.Client
	wakeups      *Wakeups
	repositories *Repositories
	// selected is the label selector of this shard's Functions; nil: all.
	selected labels.Selector
	// apiRecheck is how often the APIs missing at start are looked for (LateAPIs).
	apiRecheck time.Duration
	// namesIndexed: client's cache indexes Functions by function name
	// (SetupWithManager registered functionNameIndex), so finding the Function bound to
	// a function lists those of its name only; without it (a client straight to the API
	// server, as the step tests use), the namespace's.
	namesIndexed bool
}

// installed reports whether the cluster serves the kind gvk.
func installed(mgr manager.Manager, gvk schema.GroupVersionKind) (bool, error) {
	_, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	switch {
	case meta.IsNoMatchError(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("looking up the API of %s: %w", gvk, err)
	}
	return true, nil
}

// functionsForTrigger maps a Trigger that names its subscriber to the Functions of
// that function name. (Triggers with a URI subscriber are seen at the next check.)
func (w *watches) functionsForTrigger(ctx context.Context, o client.Object) []reconcile.Request {
	t, ok := o.(*eventingv1.Trigger)
	if !ok || t.Spec.Subscriber.Ref == nil {
		return nil
	}
	return w.functionsNamed(ctx, t.Namespace, t.Spec.Subscriber.Ref.Name)
}

// functionName returns the function name a Function's status reports.
func functionName(o client.Object) []string {
	fn, ok := o.(*v1alpha1.Function)
	if !ok || fn.Status.Name == "" {
		return nil
	}
	return []string{fn.Status.Name}
}

// functionsForService maps what func deploys for a function (a Knative Service; a
// Deployment, core Service or HTTPScaledObject of its raw or keda deployer, each
// named as the function) to the Functions of its namespace whose function has its name.
func (w *watches) functionsForService(ctx context.Context, o client.Object) []reconcile.Request {
	return w.functionsNamed(ctx, o.GetNamespace(), o.GetName())
}

// functionsNamed returns the Functions of namespace whose func.yaml names function name.
func (w *watches) functionsNamed(ctx context.Context, namespace, name string) []reconcile.Request {
	var list v1alpha1.FunctionList
	if err := w.client.List(ctx, &list, client.InNamespace(namespace),
		client.MatchingFields{functionNameIndex: name}); err != nil {
		log.FromContext(ctx).Error(err, "listing the Functions of a function name", "function", name)
		return nil
	}
	return requestsFor(list)
}

// OperatorPolicyChanged re-enqueues the Functions that follow the operator-wide
// middleware policy: those without spec.autoUpdateMiddleware or its annotation. Call
// it when that policy changes; Functions with their own setting are not touched.
func (r *Reconciler) OperatorPolicyChanged(ctx context.Context) {
	r.watch.recheckFollowing(ctx, v1alpha1.Settings.FollowsOperatorDefault)
}

// OperatorRebuildCommitChanged re-enqueues the Functions that follow the ConfigMap's
// rebuildCommit: those without annotation functions.dev/rebuild-commit. Call it when
// that key changes: status.middleware.rebuildFrom says what a rebuild builds.
func (r *Reconciler) OperatorRebuildCommitChanged(ctx context.Context) {
	r.watch.recheckFollowing(ctx, func(s v1alpha1.Settings) bool { return s.RebuildCommit == "" && !s.HoldRebuilds })
}

// recheckFollowing re-enqueues the Functions whose settings follow an operator-wide one.
func (w *watches) recheckFollowing(ctx context.Context, follows func(v1alpha1.Settings) bool) {
	var list v1alpha1.FunctionList
	if err := w.client.List(ctx, &list); err != nil {
		log.FromContext(ctx).Error(err, "listing the Functions to re-check after a policy change")
		return
	}
	var keys []types.NamespacedName
	for i := range list.Items {
		if follows(list.Items[i].Settings()) {
			keys = append(keys, client.ObjectKeyFromObject(&list.Items[i]))
		}
	}
	w.wakeups.EnqueueAll(ctx, keys)
}

// holderChanged reports an update that may free a function name: the Function is
// being deleted, or its function name or binding changed.
func holderChanged(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*v1alpha1.Function)
	n, ok2 := e.ObjectNew.(*v1alpha1.Function)
	if !ok1 || !ok2 {
		return false
	}
	uid := func(fn *v1alpha1.Function) string {
		if fn.Status.Service == nil {
			return ""
		}
		return string(fn.Status.Service.UID)
	}
	return o.Status.Name != n.Status.Name || uid(o) != uid(n) || o.DeletionTimestamp.IsZero() != n.DeletionTimestamp.IsZero()
}

// rivals maps a Function to the others of its namespace that name the same function.
func (w *watches) rivals(ctx context.Context, o client.Object) []reconcile.Request {
	fn, ok := o.(*v1alpha1.Function)
	if !ok || fn.Status.Name == "" {
		return nil
	}
	var out []reconcile.Request
	for _, req := range w.functionsNamed(ctx, fn.Namespace, fn.Status.Name) {
		if req.Name != fn.Name {
			out = append(out, req)
		}
	}
	return out
}

// functionForPipelineRun maps a build's PipelineRun to its Function, by label.
func functionForPipelineRun(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[resources.LabelFunction]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
}

// requestsFor returns a reconcile request for each Function of list.
func requestsFor(list v1alpha1.FunctionList) []reconcile.Request {
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, fn := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: fn.Namespace, Name: fn.Name}})
	}
	return reqs
}

package function

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/fnops/func-operator/api/v1alpha1"
)

// secretRefIndex indexes Functions by the names of the Secrets they reference.
const secretRefIndex = "functions.dev/secret-refs"

// ControllerName names the Function controller in logs and metrics.
const ControllerName = "function"

// SetupWithManager registers the reconciler: Functions are reconciled when their spec
// or annotations change, and when a Secret they reference changes. Secrets are
// watched by metadata only, so no Secret value is held in the cache.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr manager.Manager, concurrency int) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &v1alpha1.Function{}, secretRefIndex, secretRefs); err != nil {
		return fmt.Errorf("indexing Functions by Secret: %w", err)
	}
	return builder.ControllerManagedBy(mgr).
		Named(ControllerName).
		For(&v1alpha1.Function{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{},
			predicate.AnnotationChangedPredicate{},
			predicate.LabelChangedPredicate{},
		))).
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.functionsForSecret)).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(r)
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

// functionsForSecret maps a Secret to the Functions of its namespace that reference it.
func (r *Reconciler) functionsForSecret(ctx context.Context, o client.Object) []reconcile.Request {
	var list v1alpha1.FunctionList
	if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace()),
		client.MatchingFields{secretRefIndex: o.GetName()}); err != nil {
		log.FromContext(ctx).Error(err, "listing the Functions that reference a Secret", "secret", o.GetName())
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, fn := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: fn.Namespace, Name: fn.Name}})
	}
	return reqs
}

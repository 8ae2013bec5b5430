package function

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/knative"
	"github.com/fnops/func-operator/pkg/reconciler/function/step"
	"github.com/fnops/func-operator/pkg/rerror"
)

// bind decides whether d, what func deployed under fn's function name (a Knative
// Service; a raw or keda Deployment), is fn's to describe, inspect and rebuild: func
// deployed it for that function (its label function.knative.dev/name), and no other
// Function of the namespace holds it. A Function holds it when its status records its
// UID; while none does, the Function that claimed the function name first holds it.
// Anything else stalls fn with its own reason, and fn creates nothing.
func (r *Reconciler) bind(ctx context.Context, fn *v1alpha1.Function, d deployed) error {
	name := d.Name()
	if got := d.Labels()[knative.FunctionNameLabel]; got != name {
		return step.MarkedBy(fn.Status.MarkNotBound, rerror.NewStalling(v1alpha1.ReasonServiceNotFromFunc,
			"%s was not deployed by func for function %q (its label %s is %q): the operator does not describe, inspect or rebuild it",
			d, name, knative.FunctionNameLabel, got))
	}
	holder, err := r.holder(ctx, fn, name, d.UID())
	if err != nil {
		return rerror.NewTransient(v1alpha1.ReasonDescribeFailed, "finding the Function bound to %s in namespace %s: %w", d, fn.Namespace, err)
	}
	if holder != nil {
		return step.MarkedBy(fn.Status.MarkNotBound, rerror.NewStalling(v1alpha1.ReasonFunctionNameConflict,
			"Function %s is bound to %s of function %q: this Function describes, inspects and rebuilds nothing while it is",
			holder.Name, d, name))
	}
	return nil
}

// holder returns the Function other than fn that holds what func deployed as function
// name (with uid), or nil when fn may. Among the Functions of the namespace of that
// function, those bound to uid come first, then the oldest.
func (r *Reconciler) holder(ctx context.Context, fn *v1alpha1.Function, name string, uid types.UID) (*v1alpha1.Function, error) {
	if name == "" { // no object is named so; and the index holds no Function under ""
		return nil, nil
	}
	var list v1alpha1.FunctionList
	// From the cache without copies: the list is only read.
	opts := []client.ListOption{client.InNamespace(fn.Namespace), client.UnsafeDisableDeepCopy}
	if r.watch.namesIndexed {
		// Only the Functions whose func.yaml names that function: a namespace of a
		// monorepo's thousand Functions costs a reconcile what one of a few does
		// (listing it whole took half the CPU of a no-op check; make bench-scale R=1).
		opts = append(opts, client.MatchingFields{functionNameIndex: name})
	}
	if err := r.client.List(ctx, &list, opts...); err != nil {
		return nil, fmt.Errorf("listing the Functions of namespace %s: %w", fn.Namespace, err)
	}
	best := fn
	for i := range list.Items {
		other := &list.Items[i]
		if other.UID == fn.UID || other.Name == fn.Name || other.Status.Name != name || !other.DeletionTimestamp.IsZero() {
			continue
		}
		if holdsBefore(other, best, uid) {
			best = other
		}
	}
	if best == fn {
		return nil, nil
	}
	return best.DeepCopy(), nil
}

// holdsBefore reports whether a has the better claim on the object of uid than b:
// bound to it, then created first (then by name, so that every reconcile agrees).
func holdsBefore(a, b *v1alpha1.Function, uid types.UID) bool {
	if ab, bb := boundTo(a, uid), boundTo(b, uid); ab != bb {
		return ab
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

func boundTo(fn *v1alpha1.Function, uid types.UID) bool {
	return fn.Status.Service != nil && fn.Status.Service.UID == uid
}

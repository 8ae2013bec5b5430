package function

import (
	"context"
	"fmt"

	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/knative"
	"github.com/fnops/func-operator/pkg/rerror"
)

// bind decides whether svc, the Knative Service named as fn's function, is fn's to
// describe, inspect and rebuild: func deployed it for that function (its label
// function.knative.dev/name), and no other Function of the namespace holds it. A
// Function holds a Service when its status records the Service's UID; while none
// does, the Function that claimed the function name first holds it. Anything else
// stalls fn with its own reason, and fn creates nothing.
func (r *Reconciler) bind(ctx context.Context, fn *v1alpha1.Function, svc *servingv1.Service) error {
	if got := svc.Labels[knative.FunctionNameLabel]; got != svc.Name {
		return markedBy(fn.Status.MarkNotBound, rerror.NewStalling(v1alpha1.ReasonServiceNotFromFunc,
			"Knative Service %s was not deployed by func for function %q (its label %s is %q): the operator does not describe, inspect or rebuild it",
			svc.Name, svc.Name, knative.FunctionNameLabel, got))
	}
	holder, err := r.holder(ctx, fn, svc)
	if err != nil {
		return rerror.NewTransient(v1alpha1.ReasonDescribeFailed, "finding the Function bound to Knative Service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	if holder != nil {
		return markedBy(fn.Status.MarkNotBound, rerror.NewStalling(v1alpha1.ReasonFunctionNameConflict,
			"Function %s is bound to Knative Service %s of function %q: this Function describes, inspects and rebuilds nothing while it is",
			holder.Name, svc.Name, svc.Name))
	}
	return nil
}

// holder returns the Function other than fn that holds svc, or nil when fn may.
// Among the Functions of the namespace whose function is svc's, those bound to svc's
// UID come first, then the oldest.
func (r *Reconciler) holder(ctx context.Context, fn *v1alpha1.Function, svc *servingv1.Service) (*v1alpha1.Function, error) {
	var list v1alpha1.FunctionList
	// From the cache without copies: the list is only read.
	if err := r.Client.List(ctx, &list, client.InNamespace(fn.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing the Functions of namespace %s: %w", fn.Namespace, err)
	}
	best := fn
	for i := range list.Items {
		other := &list.Items[i]
		if other.UID == fn.UID || other.Name == fn.Name || other.Status.Name != svc.Name || !other.DeletionTimestamp.IsZero() {
			continue
		}
		if holdsBefore(other, best, svc) {
			best = other
		}
	}
	if best == fn {
		return nil, nil
	}
	return best.DeepCopy(), nil
}

// holdsBefore reports whether a has the better claim on svc than b: bound to it, then
// created first (then by name, so that every reconcile agrees).
func holdsBefore(a, b *v1alpha1.Function, svc *servingv1.Service) bool {
	if ab, bb := boundTo(a, svc), boundTo(b, svc); ab != bb {
		return ab
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

func boundTo(fn *v1alpha1.Function, svc *servingv1.Service) bool {
	return fn.Status.Service != nil && fn.Status.Service.UID == svc.UID
}

package build

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/reconciler/function/step"
	"github.com/fnops/func-operator/pkg/rerror"
)

// ensurePullSecret lets the function's ServiceAccount (func.yaml's, else "default")
// pull the rebuilt image with the Function's registry Secret: it lists the Secret
// among the ServiceAccount's imagePullSecrets. Under the namespace's grant
// (ClusterRole func-operator-namespace: get and patch serviceaccounts).
func (r *Reconciler) ensurePullSecret(ctx context.Context, fn *v1alpha1.Function, m funclib.Metadata) error {
	ref := fn.Spec.Registry.AuthSecretRef
	if ref == nil || ref.Name == "" {
		return nil
	}
	name := m.ServiceAccountName
	if name == "" {
		name = "default"
	}
	sa := &corev1.ServiceAccount{}
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: fn.Namespace, Name: name}, sa)
	switch {
	case apierrors.IsNotFound(err):
		return step.MarkedBy(step.WithReason(fn.Status.MarkRebuildNotPossible), rerror.NewStalling(v1alpha1.ReasonRebuildNotPossible,
			"the function's ServiceAccount %q (deploy.serviceAccountName in func.yaml) does not exist in namespace %q", name, fn.Namespace))
	case err != nil:
		return fmt.Errorf("reading ServiceAccount %s/%s: %w", fn.Namespace, name, err)
	}
	if slices.Contains(sa.ImagePullSecrets, corev1.LocalObjectReference{Name: ref.Name}) {
		return nil
	}
	orig := sa.DeepCopy()
	sa.ImagePullSecrets = append(sa.ImagePullSecrets, corev1.LocalObjectReference{Name: ref.Name})
	if err := r.Client.Patch(ctx, sa, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("adding image pull Secret %s to ServiceAccount %s/%s: %w", ref.Name, fn.Namespace, name, err)
	}
	return nil
}

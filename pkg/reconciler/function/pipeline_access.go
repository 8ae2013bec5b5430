package function

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/reconciler/function/resources"
	"github.com/fnops/func-operator/pkg/rerror"
)

// ensurePipelineAccess prepares the Function's namespace for a build: the
// ServiceAccount the PipelineRuns run as may deploy the Knative Service (one shared
// RoleBinding per namespace, owned by every Function that built there), and the
// function's own ServiceAccount may pull from the registry with the Function's
// registry Secret.
func (r *Reconciler) ensurePipelineAccess(ctx context.Context, fn *v1alpha1.Function, cfg config.Config, m funclib.Metadata) error {
	if err := r.ensureServiceAccount(ctx, fn, cfg.PipelineServiceAccount, ""); err != nil {
		return err
	}
	if err := r.ensureRoleBinding(ctx, fn, cfg.PipelineServiceAccount); err != nil {
		return err
	}
	if ref := fn.Spec.Registry.AuthSecretRef; ref != nil && ref.Name != "" {
		sa := m.ServiceAccountName
		if sa == "" {
			sa = "default"
		}
		if err := r.ensureServiceAccount(ctx, fn, sa, ref.Name); err != nil {
			return err
		}
	}
	return nil
}

// ensureServiceAccount makes sure ServiceAccount name exists (the "default" one is
// created when missing, as the ServiceAccount controller would) and, when
// pullSecret is set, lists it among its imagePullSecrets.
func (r *Reconciler) ensureServiceAccount(ctx context.Context, fn *v1alpha1.Function, name, pullSecret string) error {
	sa := &corev1.ServiceAccount{}
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: fn.Namespace, Name: name}, sa)
	switch {
	case apierrors.IsNotFound(err) && name == "default":
		sa = &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: fn.Namespace, Name: name}}
		if pullSecret != "" {
			sa.ImagePullSecrets = []corev1.LocalObjectReference{{Name: pullSecret}}
		}
		if err := r.Client.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating ServiceAccount %s/%s: %w", fn.Namespace, name, err)
		}
		return nil
	case apierrors.IsNotFound(err):
		fn.Status.MarkRebuildNotPossible("ServiceAccount %q does not exist in namespace %q: create it, or change %s in ConfigMap %s or deploy.serviceAccountName in func.yaml",
			name, fn.Namespace, config.KeyPipelineServiceAccount, config.ConfigMapName)
		return rerror.NewStalling(v1alpha1.ReasonRebuildNotPossible, "ServiceAccount %s/%s not found", fn.Namespace, name)
	case err != nil:
		return fmt.Errorf("reading ServiceAccount %s/%s: %w", fn.Namespace, name, err)
	}
	if pullSecret == "" || slices.Contains(sa.ImagePullSecrets, corev1.LocalObjectReference{Name: pullSecret}) {
		return nil
	}
	orig := sa.DeepCopy()
	sa.ImagePullSecrets = append(sa.ImagePullSecrets, corev1.LocalObjectReference{Name: pullSecret})
	if err := r.Client.Patch(ctx, sa, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("adding image pull Secret %s to ServiceAccount %s/%s: %w", pullSecret, fn.Namespace, name, err)
	}
	return nil
}

// ensureRoleBinding makes sure the namespace's pipeline RoleBinding grants the
// pipeline ClusterRole to serviceAccount and lists fn among its owners.
func (r *Reconciler) ensureRoleBinding(ctx context.Context, fn *v1alpha1.Function, serviceAccount string) error {
	want := resources.RoleBinding(fn, serviceAccount)
	got := &rbacv1.RoleBinding{}
	err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(want), got)
	switch {
	case apierrors.IsNotFound(err):
		if err := r.Client.Create(ctx, want); err != nil {
			return fmt.Errorf("creating RoleBinding %s/%s: %w", want.Namespace, want.Name, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("reading RoleBinding %s/%s: %w", want.Namespace, want.Name, err)
	}
	if got.RoleRef != want.RoleRef {
		// roleRef cannot change: replace the binding, keeping its owners.
		want.OwnerReferences = mergeOwners(got.OwnerReferences, fn)
		if err := r.Client.Delete(ctx, got, client.Preconditions{UID: &got.UID}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("replacing RoleBinding %s/%s: %w", got.Namespace, got.Name, err)
		}
		if err := r.Client.Create(ctx, want); err != nil {
			return fmt.Errorf("creating RoleBinding %s/%s: %w", want.Namespace, want.Name, err)
		}
		return nil
	}
	if equality.Semantic.DeepEqual(got.Subjects, want.Subjects) && resources.HasOwner(got.OwnerReferences, fn) {
		return nil
	}
	orig := got.DeepCopy()
	got.Subjects = want.Subjects
	got.OwnerReferences = mergeOwners(got.OwnerReferences, fn)
	if err := r.Client.Patch(ctx, got, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("updating RoleBinding %s/%s: %w", got.Namespace, got.Name, err)
	}
	return nil
}

// mergeOwners adds fn to owners, once.
func mergeOwners(owners []metav1.OwnerReference, fn *v1alpha1.Function) []metav1.OwnerReference {
	if resources.HasOwner(owners, fn) {
		return owners
	}
	return append(slices.Clone(owners), resources.OwnerReference(fn))
}

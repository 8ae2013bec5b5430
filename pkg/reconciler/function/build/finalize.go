package build

import (
	"context"
	"errors"
	"fmt"

	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/fnops/func-operator/pkg/reconciler/function/resources"
	"github.com/fnops/func-operator/pkg/tenancy"
)

// buildObjectKinds are the kinds of the objects func's provider creates for a build.
var buildObjectKinds = []schema.GroupVersionKind{
	pipelinev1.SchemeGroupVersion.WithKind("PipelineRun"),
	pipelinev1.SchemeGroupVersion.WithKind("Pipeline"),
	corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"),
	corev1.SchemeGroupVersion.WithKind("Secret"),
}

// Finalize forgets a deleted Function's build and its place in the fleet budget, and
// deletes what its builds left (deleteBuildObjects).
func (r *Reconciler) Finalize(ctx context.Context, key types.NamespacedName) error {
	if !r.Enabled() {
		return nil
	}
	r.Builds.Forget(key)
	if !r.Builds.TektonServed() {
		return nil
	}
	return r.deleteBuildObjects(ctx, key)
}

// deleteBuildObjects deletes what the builds of a deleted Function left: its
// PipelineRuns (a running one is stopped), Pipeline, PVC and registry Secret, found by
// the operator's labels. func's provider deletes a PipelineRun only when cancelled
// while it follows the run, not while it is still creating it, so the operator does.
func (r *Reconciler) deleteBuildObjects(ctx context.Context, key types.NamespacedName) error {
	errs := make([]error, 0, len(buildObjectKinds))
	for _, gvk := range buildObjectKinds {
		left, err := r.deleteLabelled(ctx, gvk, key.Namespace,
			client.MatchingLabels{resources.LabelFunction: key.Name, resources.LabelManagedBy: resources.ManagedBy})
		if len(left) > 0 {
			log.FromContext(ctx).Info("leaving build objects the namespace does not let the operator delete (ClusterRole "+tenancy.NamespaceClusterRole+")",
				"kind", gvk.Kind, "namespace", key.Namespace, "names", left)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// deleteLabelled deletes the objects of kind gvk in namespace that carry labels. It
// returns the names of those the operator may not delete (or list, then "*"): a
// namespace that never onboarded the operator holds nothing it created, and one that
// took its grant back keeps what is left; retrying would not change that.
func (r *Reconciler) deleteLabelled(ctx context.Context, gvk schema.GroupVersionKind, namespace string, selected client.MatchingLabels) (left []string, _ error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	err := r.APIReader.List(ctx, list, client.InNamespace(namespace), selected)
	if apierrors.IsForbidden(err) {
		return []string{"*"}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing %ss in namespace %s: %w", gvk.Kind, namespace, err)
	}
	var errs []error
	for i := range list.Items {
		o := &list.Items[i]
		o.SetGroupVersionKind(gvk)
		err := r.Client.Delete(ctx, o, client.PropagationPolicy(metav1.DeletePropagationBackground))
		switch {
		case apierrors.IsForbidden(err):
			left = append(left, o.Name)
		case client.IgnoreNotFound(err) != nil:
			errs = append(errs, fmt.Errorf("deleting %s %s/%s: %w", gvk.Kind, o.Namespace, o.Name, err))
		}
	}
	return left, errors.Join(errs...)
}

package function

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
)

// finalize forgets a deleted Function: its metrics series, its build (func's provider
// deletes the PipelineRun of a cancelled build), its place in the fleet budget and
// what its builds left on the cluster. An error is retried with backoff until
// nothing is left; nothing else requeues it.
func (r *Reconciler) finalize(ctx context.Context, key types.NamespacedName) error {
	r.metrics.Forget(key)
	r.watch.repositories.Forget(key)
	if r.watch.selected != nil && r.apiReader != nil {
		// A Function whose labels left this shard's selector is gone from the cache, not
		// from the cluster: another shard looks after it and its builds now.
		fn := &v1alpha1.Function{}
		err := r.apiReader.Get(ctx, key, fn)
		switch {
		case err == nil && fn.DeletionTimestamp.IsZero() && !r.watch.selected.Matches(labels.Set(fn.Labels)):
			return nil
		case err != nil && !apierrors.IsNotFound(err):
			return fmt.Errorf("reading Function %s, gone from this shard's cache: %w", key, err)
		}
	}
	// The last Function of a namespace takes its Secret watch along.
	var left v1alpha1.FunctionList
	if err := r.client.List(ctx, &left, client.InNamespace(key.Namespace), client.Limit(1)); err == nil && len(left.Items) == 0 {
		r.remote.secrets.Forget(key.Namespace)
	}
	return r.build.Finalize(ctx, key)
}

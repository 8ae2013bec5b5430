package function

import (
	"context"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/reconciler/function/base"
)

// reconcileBase runs the base policy's check (package base) into obs.base: whether
// the base the running image was built on moved on, and is to be updated. The image
// was read by the middleware step: its verdict, the base's included, comes from the
// inspector's cache.
func (r *Reconciler) reconcileBase(ctx context.Context, fn *v1alpha1.Function, obs *observation) (Result, error) {
	if obs.deployment.found == nil || obs.deployment.image == "" {
		return Result{}, nil // nothing deployed: BaseUpToDate stays as it was
	}
	if policy, _ := fn.Settings().BaseUpdates(r.config.Load().Base.Updates); policy == v1alpha1.BaseUpdatesOff {
		fn.Status.ClearBase() // nothing read, not even the registry Secret
		return Result{}, nil
	}
	kc := obs.registry
	if kc == nil { // middleware that lives in the source: the image was not read
		var err error
		if kc, _, err = r.registryKeychain(ctx, fn); err != nil {
			return Result{}, err
		}
	}
	b, err := r.base.Check(ctx, fn, base.Input{Image: obs.deployment.image, Keychain: kc, Timeout: r.config.Load().RegistryTimeout})
	obs.base = b
	return Result{}, err
}

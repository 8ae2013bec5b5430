package function

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fnops/func-operator/api/v1alpha1"
)

// secret reads the Secret name of the Function's own namespace from the API server:
// no informer holds the namespace's Secrets. What a read returned is kept (see
// secretCache) until the namespace's metadata watch sees the Secret change. It
// returns nil and no error when the Secret does not exist. The operator may read
// Secrets only in namespaces that onboarded it: there, the read starts the
// namespace's Secret watch; elsewhere, it is a stall with reason
// NamespaceNotOnboarded.
func (r *Reconciler) secret(ctx context.Context, fn *v1alpha1.Function, name string) (*corev1.Secret, error) {
	key := types.NamespacedName{Namespace: fn.Namespace, Name: name}
	if version, known := r.SecretWatches.Version(key.Namespace, key.Name); known {
		if s, ok := r.secrets.get(key, version); ok {
			return s, nil
		}
	}
	secret := &corev1.Secret{}
	err := r.APIReader.Get(ctx, key, secret)
	switch {
	case apierrors.IsForbidden(err):
		r.SecretWatches.Stop(fn.Namespace)
		return nil, notOnboarded(fn.Namespace, fmt.Sprintf(
			"the operator may not read Secret %q: namespace %s has not onboarded func-operator (ClusterRole %s, RoleBinding func-operator-namespace)",
			name, fn.Namespace, NamespaceClusterRole))
	case err != nil && !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("reading Secret %s/%s: %w", fn.Namespace, name, err)
	}
	r.SecretWatches.Ensure(fn.Namespace) // the operator may read Secrets here
	if err != nil {
		r.secrets.put(key, nil)
		return nil, nil // not found
	}
	r.secrets.put(key, secret)
	return secret, nil
}

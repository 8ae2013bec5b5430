package function

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fnops/func-operator/api/v1alpha1"
)

// secret reads the Secret name of the Function's own namespace straight from the API
// server, so that no Secret value is ever held in the operator's cache. It returns
// nil and no error when the Secret does not exist. The operator may read Secrets
// only in namespaces that onboarded it: there, the read starts the namespace's
// Secret watch; elsewhere, it is a stall with reason NamespaceNotOnboarded.
func (r *Reconciler) secret(ctx context.Context, fn *v1alpha1.Function, name string) (*corev1.Secret, error) {
	secret := &corev1.Secret{}
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: fn.Namespace, Name: name}, secret)
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
		return nil, nil // not found
	}
	return secret, nil
}

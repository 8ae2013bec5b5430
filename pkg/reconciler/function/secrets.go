package function

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/rerror"
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
		return nil, rerror.NewStalling(v1alpha1.ReasonNamespaceNotOnboarded,
			"the operator may not read Secret %q: namespace %s has not onboarded func-operator (ClusterRole %s, RoleBinding func-operator-namespace); "+
				"a namespace admin grants it with `kubectl apply -n %s -f %s` (from the func-operator release)",
			name, fn.Namespace, NamespaceClusterRole, fn.Namespace, OnboardingManifest)
	case apierrors.IsNotFound(err):
		r.SecretWatches.Ensure(fn.Namespace)
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading Secret %s/%s: %w", fn.Namespace, name, err)
	}
	r.SecretWatches.Ensure(fn.Namespace)
	return secret, nil
}

package tenancy

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Secrets reads the Secrets Functions name, in their own namespace, straight from
// the API server: no informer holds a namespace's Secrets, so no Secret value is
// ever in the operator's cache. The operator may read Secrets only in namespaces
// that onboarded it: there, a read starts the namespace's metadata watch
// (Watches); elsewhere, it is a stall with reason NamespaceNotOnboarded.
//
// Made with NewSecrets, it keeps what a read returned until the namespace's watch
// sees the Secret change; a Secrets made as a literal reads every time.
type Secrets struct {
	// Reader reads Secrets from the API server.
	Reader client.Reader
	// Watches watches the Secrets of the namespaces where the operator may read them;
	// nil watches none (and then nothing kept is ever read again).
	Watches *SecretWatches

	// cache keeps the Secrets read, until their watch sees them change; nil keeps none.
	cache *secretCache
}

// NewSecrets reads Secrets with reader, and keeps them between reads until watches
// sees them change.
func NewSecrets(reader client.Reader, watches *SecretWatches) *Secrets {
	return &Secrets{Reader: reader, Watches: watches, cache: newSecretCache()}
}

// Get reads Secret name of namespace, the namespace of the Function that names it.
// What a read returned is kept (see secretCache) until the namespace's metadata
// watch sees the Secret change. It returns nil and no error when the Secret does
// not exist. Its errors name the Secret, never a value of it.
func (s *Secrets) Get(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	key := types.NamespacedName{Namespace: namespace, Name: name}
	if version, known := s.Watches.Version(key.Namespace, key.Name); known {
		if secret, ok := s.cache.get(key, version); ok {
			return secret, nil
		}
	}
	secret := &corev1.Secret{}
	err := s.Reader.Get(ctx, key, secret)
	switch {
	case apierrors.IsForbidden(err):
		s.Watches.Stop(namespace)
		return nil, NotOnboarded(namespace, fmt.Sprintf(
			"the operator may not read Secret %q: namespace %s has not onboarded func-operator (ClusterRole %s, RoleBinding func-operator-namespace)",
			name, namespace, NamespaceClusterRole))
	case err != nil && !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("reading Secret %s/%s: %w", namespace, name, err)
	}
	s.Watches.Ensure(namespace) // the operator may read Secrets here
	if err != nil {
		s.cache.put(key, nil)
		return nil, nil // not found
	}
	s.cache.put(key, secret)
	return secret, nil
}

// Forget stops watching the Secrets of namespace (its last Function is gone), if it
// does.
func (s *Secrets) Forget(namespace string) {
	if s == nil {
		return
	}
	s.Watches.Stop(namespace)
}

// GitCredentials returns the git credentials Secrets of the builds of Function name
// of namespace that the namespace's watch has seen (metadata only).
func (s *Secrets) GitCredentials(namespace, name string) []*metav1.PartialObjectMetadata {
	if s == nil {
		return nil
	}
	return s.Watches.GitCredentials(namespace, name)
}

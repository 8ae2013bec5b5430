// Package tenancy owns what a tenant namespace grants func-operator, and the Secrets
// the operator reads there.
//
// A namespace onboards the operator (config/namespace/onboard.yaml): it binds
// ClusterRole func-operator-namespace to the operator and func-operator-builder to
// the build ServiceAccount. NamespaceAccess checks both (NamespaceGrant, which lets
// the operator impersonate the build ServiceAccount by name, and BuilderGrant) and
// says what is missing as a NotOnboardedError, which callers tell with
// IsNotOnboarded, never by its reason.
//
// The operator has no cluster-wide right on Secrets. Secrets reads the Secrets a
// Function names straight from the API server, never into the manager's cache;
// SecretWatches watches, by metadata only, the Secrets of the namespaces where such a
// read succeeded, and the Secrets read are kept (an LRU on k8s.io/utils/lru, bounded
// in bytes) until that watch sees them change. A Secret's value never goes into a
// log, an event, a status or an error: messages name a Secret, never its content,
// and the watches drop the metadata that can carry it.
//
// It must not import pkg/reconciler/function (the Reconciler uses it, not the other
// way round); of pkg/reconciler it reads only the label names of
// pkg/reconciler/function/resources.
package tenancy

package tenancy

import (
	"context"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/reconciler/function/resources"
)

// SecretWatches watches Secrets, by metadata only, in the namespaces where the
// operator may read them: those that onboarded it. The operator has no cluster-wide
// right on Secrets, so there is no cluster-wide watch; a namespace's watch starts the
// first time the operator reads a Secret there, and stops when it is refused one.
// A change to a Secret brings back the Functions of its namespace that reference it.
// It runs on the leader only, as the reconciles that start its watches do.
type SecretWatches struct {
	// Client lists Secret metadata.
	Client metadata.Interface
	// OnChange is called with each Secret added, changed or deleted after its
	// namespace's watch has started.
	OnChange func(ctx context.Context, secret client.Object)

	mu       sync.Mutex
	ctx      context.Context // the manager's, once started
	watching map[string]context.CancelFunc
	// stores hold the Secret metadata each namespace's watch has seen.
	stores map[string]cache.SharedIndexInformer
}

// Start runs until ctx ends, then stops every watch.
func (w *SecretWatches) Start(ctx context.Context) error {
	w.mu.Lock()
	w.ctx = ctx
	pending := make([]string, 0, len(w.watching))
	for ns, cancel := range w.watching {
		if cancel == nil {
			pending = append(pending, ns)
		}
	}
	w.mu.Unlock()
	for _, ns := range pending {
		w.Ensure(ns)
	}
	<-ctx.Done()
	w.mu.Lock()
	defer w.mu.Unlock()
	for ns, cancel := range w.watching {
		if cancel != nil {
			cancel()
		}
		delete(w.watching, ns)
		delete(w.stores, ns)
	}
	return nil
}

// NeedLeaderElection is true: only the leader reconciles.
func (*SecretWatches) NeedLeaderElection() bool { return true }

// Ensure watches the Secrets of namespace, unless it already does.
func (w *SecretWatches) Ensure(namespace string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.watching == nil {
		w.watching = map[string]context.CancelFunc{}
	}
	if cancel, ok := w.watching[namespace]; ok && (cancel != nil || w.ctx == nil) {
		return
	}
	if w.ctx == nil {
		w.watching[namespace] = nil // started with the manager
		return
	}
	ctx, cancel := context.WithCancel(w.ctx)
	w.watching[namespace] = cancel
	inf := metadatainformer.NewFilteredMetadataInformer(w.Client, corev1.SchemeGroupVersion.WithResource("secrets"),
		namespace, 0, cache.Indexers{gitCredentialsIndex: gitCredentialsOf}, nil)
	if w.stores == nil {
		w.stores = map[string]cache.SharedIndexInformer{}
	}
	w.stores[namespace] = inf.Informer()
	if err := inf.Informer().SetTransform(slimSecretMetadata); err != nil {
		log.FromContext(ctx).Error(err, "watching the Secrets of a namespace", "namespace", namespace)
		cancel()
		delete(w.watching, namespace)
		delete(w.stores, namespace)
		return
	}
	changed := func(o any) {
		if m, ok := o.(*metav1.PartialObjectMetadata); ok {
			w.OnChange(ctx, m)
		} else if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
			if m, ok := d.Obj.(*metav1.PartialObjectMetadata); ok {
				w.OnChange(ctx, m)
			}
		}
	}
	// A refused or vanished namespace ends its watch, rather than retry forever.
	err := inf.Informer().SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
		if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
			log.FromContext(ctx).Info("stopping the Secret watch of a namespace", "namespace", namespace, "reason", err.Error())
			w.stop(namespace, ctx)
		}
	})
	if err != nil {
		log.FromContext(ctx).Error(err, "watching the Secrets of a namespace", "namespace", namespace)
		cancel()
		delete(w.watching, namespace)
		delete(w.stores, namespace)
		return
	}
	// The first list counts too: a Secret may have changed between the read that
	// started the watch and the list.
	_, err = inf.Informer().AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(o any, _ bool) { changed(o) },
		UpdateFunc: func(old, o any) {
			a, _ := old.(*metav1.PartialObjectMetadata)
			b, _ := o.(*metav1.PartialObjectMetadata)
			if a == nil || b == nil || a.ResourceVersion != b.ResourceVersion {
				changed(o)
			}
		},
		DeleteFunc: changed,
	})
	if err != nil {
		log.FromContext(ctx).Error(err, "watching the Secrets of a namespace", "namespace", namespace)
		cancel()
		delete(w.watching, namespace)
		delete(w.stores, namespace)
		return
	}
	go inf.Informer().Run(ctx.Done())
}

// Stop stops watching the Secrets of namespace, if it does.
func (w *SecretWatches) Stop(namespace string) {
	if w == nil {
		return
	}
	w.stop(namespace, nil)
}

// stop stops the watch of namespace; when of is set, only if it is the watch whose
// context of is (not one started since).
func (w *SecretWatches) stop(namespace string, of context.Context) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if of != nil && of.Err() != nil {
		return // that watch is stopped already
	}
	if cancel := w.watching[namespace]; cancel != nil {
		cancel()
	}
	delete(w.watching, namespace)
	delete(w.stores, namespace)
}

// Version returns the resourceVersion the watch of namespace last saw of Secret
// name, "" when it saw none; known is false when the namespace is not watched or its
// watch has not listed yet: then nothing can be said.
func (w *SecretWatches) Version(namespace, name string) (version string, known bool) {
	if w == nil {
		return "", false
	}
	w.mu.Lock()
	inf := w.stores[namespace]
	w.mu.Unlock()
	if inf == nil || !inf.HasSynced() {
		return "", false
	}
	o, exists, err := inf.GetStore().GetByKey(namespace + "/" + name)
	if err != nil {
		return "", false
	}
	if !exists {
		return "", true
	}
	m, ok := o.(*metav1.PartialObjectMetadata)
	if !ok {
		return "", false
	}
	return m.ResourceVersion, true
}

// keptSecretLabels are the only labels of a Secret its watch keeps: those that
// tell a build's git credentials Secret (gitCredentialsOf, sweepGitCredentials).
var keptSecretLabels = []string{funclib.LabelGitCredentials, resources.LabelFunction, resources.LabelBuildID}

// maxSecretOwners bounds the Function owner references kept of a Secret: a build's
// git credentials Secret has one; anyone who may write Secrets may add thousands.
const maxSecretOwners = 2

// slimSecretMetadata is the transform of a namespace's Secret watch: it keeps what
// the operator reads of a Secret's metadata (its name, UID, resourceVersion,
// deletion, Function owners and keptSecretLabels) and drops the rest before it is stored.
// Metadata can carry a Secret's values: kubectl apply copies the whole object,
// data included, into the annotation kubectl.kubernetes.io/last-applied-configuration,
// and managedFields name every key. Only the Secrets Functions name are ever held
// with their values (secretCache), never a namespace's others.
func slimSecretMetadata(o any) (any, error) {
	m, ok := o.(*metav1.PartialObjectMetadata)
	if !ok {
		return o, nil // cache.DeletedFinalStateUnknown: its object was transformed when stored
	}
	slim := &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta, ObjectMeta: metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		DeletionTimestamp: m.DeletionTimestamp,
	}}
	for _, ref := range m.OwnerReferences {
		if len(slim.OwnerReferences) == maxSecretOwners {
			break
		}
		if ref.Kind == "Function" && strings.HasPrefix(ref.APIVersion, v1alpha1.SchemeGroupVersion.Group+"/") {
			slim.OwnerReferences = append(slim.OwnerReferences, ref)
		}
	}
	for _, k := range keptSecretLabels {
		if v, ok := m.Labels[k]; ok {
			if slim.Labels == nil {
				slim.Labels = map[string]string{}
			}
			slim.Labels[k] = v
		}
	}
	return slim, nil
}

// gitCredentialsIndex indexes the builds' git credentials Secrets by Function name.
const gitCredentialsIndex = "gitCredentials"

// gitCredentialsOf is the Function a build's git credentials Secret is of.
func gitCredentialsOf(o any) ([]string, error) {
	m, ok := o.(*metav1.PartialObjectMetadata)
	if !ok || m.Labels[funclib.LabelGitCredentials] != "true" || m.Labels[resources.LabelFunction] == "" {
		return nil, nil
	}
	return []string{m.Labels[resources.LabelFunction]}, nil
}

// GitCredentials returns the git credentials Secrets of the builds of Function name
// of namespace that the namespace's watch has seen.
func (w *SecretWatches) GitCredentials(namespace, name string) []*metav1.PartialObjectMetadata {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	inf := w.stores[namespace]
	w.mu.Unlock()
	if inf == nil {
		return nil
	}
	objs, err := inf.GetIndexer().ByIndex(gitCredentialsIndex, name)
	if err != nil {
		return nil
	}
	out := make([]*metav1.PartialObjectMetadata, 0, len(objs))
	for _, o := range objs {
		if m, ok := o.(*metav1.PartialObjectMetadata); ok {
			out = append(out, m)
		}
	}
	return out
}

// Watching reports whether the Secrets of namespace are watched, or will be.
func (w *SecretWatches) Watching(namespace string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.watching[namespace]
	return ok
}

package config

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrl "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Watcher keeps a Store in step with the ConfigMap func-operator-config.
type Watcher struct {
	Client    client.Reader
	Recorder  record.EventRecorder
	Namespace string
	Store     *Store
	// OnChange, when set, is called after the configuration changed.
	OnChange func(ctx context.Context, old, new Config)

	loaded bool // the Store holds what was read, not the defaults it started with
}

var _ reconcile.Reconciler = (*Watcher)(nil)

// Reconcile loads the ConfigMap into the Store; an absent ConfigMap means the defaults.
func (w *Watcher) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	cm := &corev1.ConfigMap{}
	err := w.Client.Get(ctx, types.NamespacedName{Namespace: w.Namespace, Name: ConfigMapName}, cm)
	switch {
	case apierrors.IsNotFound(err):
		cm = nil
	case err != nil:
		return reconcile.Result{}, fmt.Errorf("reading ConfigMap %s/%s: %w", w.Namespace, ConfigMapName, err)
	}
	old := w.Store.Load()
	last := old
	if !w.loaded {
		last = Start() // nothing good read yet: an invalid value never turns rebuilds on
	}
	c, invalid, unknown := Update(last, cm)
	w.loaded = true
	if len(invalid) > 0 {
		err := errors.Join(invalid...)
		log.FromContext(ctx).Error(err, "invalid operator configuration: the invalid keys keep their last good values")
		w.Recorder.Eventf(cm, corev1.EventTypeWarning, "InvalidConfig", "invalid keys keep their last good values: %s", err)
	}
	if len(unknown) > 0 {
		err := errors.Join(UnknownKeys(unknown)...)
		log.FromContext(ctx).Error(err, "unknown keys in the operator configuration are ignored", "keys", unknown)
		w.Recorder.Eventf(cm, corev1.EventTypeWarning, "UnknownConfigKey", "ignored, as the operator does not know them: %s", err)
	}
	w.Store.Set(c)
	log.FromContext(ctx).Info("operator configuration loaded", "checkInterval", c.CheckInterval, "gitTimeout", c.GitTimeout,
		"autoUpdateMiddleware", c.AutoUpdateMiddleware, "unknownMiddlewarePolicy", c.UnknownMiddlewarePolicy, "rebuildCommit", c.RebuildCommit,
		"deployOnCommit", c.DeployOnCommit, "minSourceBuildInterval", c.MinSourceBuildInterval,
		"maxConcurrentBuilds", c.MaxConcurrentBuilds, "maxConcurrentBuildsPerNamespace", c.MaxConcurrentBuildsPerNamespace.String(), "buildBackoff", c.BuildBackoff, "buildBackoffMax", c.BuildBackoffMax,
		"pipelineServiceAccount", c.PipelineServiceAccount, "deployerImage", c.DeployerImage, "builderImages", c.BuilderImages,
		"bashImage", c.BashImage, "buildahImage", c.BuildahImage,
		"commitStoreMaxBytes", c.CommitStoreMaxBytes)
	if w.OnChange != nil && !reflect.DeepEqual(old, c) {
		w.OnChange(ctx, old, c)
	}
	return reconcile.Result{}, nil
}

// SetupWithManager watches the ConfigMap. The manager's cache must include
// ConfigMaps of the Watcher's namespace.
func (w *Watcher) SetupWithManager(mgr manager.Manager) error {
	isOurs := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetNamespace() == w.Namespace && o.GetName() == ConfigMapName
	})
	return builder.ControllerManagedBy(mgr).
		Named("operator-config").
		For(&corev1.ConfigMap{}, builder.WithPredicates(isOurs)).
		WithOptions(ctrl.Options{MaxConcurrentReconciles: 1}).
		Complete(w)
}

package operator

import (
	"context"
	"fmt"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	eventingv1 "knative.dev/eventing/pkg/apis/eventing/v1"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/knative"
	"github.com/fnops/func-operator/pkg/reconciler/function"
	"github.com/fnops/func-operator/pkg/registry"
	"github.com/fnops/func-operator/pkg/source"
)

// Options configure the operator.
type Options struct {
	// WatchNamespaces are the namespaces whose Functions are reconciled; empty means all.
	WatchNamespaces []string
	// SystemNamespace holds the operator's own objects, such as its ConfigMap.
	SystemNamespace string
	// MetricsAddr serves Prometheus metrics; "0" disables them.
	MetricsAddr string
	// ProbeAddr serves /healthz and /readyz; "0" disables them.
	ProbeAddr string
	// LeaderElection makes one replica of several active.
	LeaderElection bool
	// Concurrency is how many Functions are reconciled at once.
	Concurrency int
	// WorkDir holds temporary clones; the OS default when empty.
	WorkDir string
	// Config is the store the ConfigMap watcher keeps current; a new one holding the
	// defaults when nil.
	Config *config.Store
	// SkipControllerNameValidation allows several operators in one process, as tests run them.
	SkipControllerNameValidation bool
}

// LeaderElectionID is the name of the operator's leader election Lease.
const LeaderElectionID = "func-operator.functions.dev"

// ParseNamespaces parses WATCH_NAMESPACE: empty for all namespaces, one name, or a
// comma-separated list.
func ParseNamespaces(s string) []string {
	var out []string
	for _, ns := range strings.Split(s, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			out = append(out, ns)
		}
	}
	return out
}

// NewScheme returns the scheme with every type the operator reads or writes.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, servingv1.AddToScheme, eventingv1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("building the scheme: %w", err)
		}
	}
	return s, nil
}

// New builds the manager with the Function controller and the config watcher.
func New(ctx context.Context, restConfig *rest.Config, o Options) (manager.Manager, error) {
	if o.SystemNamespace == "" {
		return nil, fmt.Errorf("the operator's system namespace is not set")
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 4
	}
	if o.WorkDir != "" {
		if err := os.MkdirAll(o.WorkDir, 0o700); err != nil {
			return nil, fmt.Errorf("creating work directory %s: %w", o.WorkDir, err)
		}
	}
	scheme, err := NewScheme()
	if err != nil {
		return nil, err
	}

	cacheOpts := cache.Options{
		ByObject: map[client.Object]cache.ByObject{
			// Only the operator's own ConfigMap is cached.
			&corev1.ConfigMap{}: {Namespaces: map[string]cache.Config{o.SystemNamespace: {
				FieldSelector: fields.OneTermEqualSelector("metadata.name", config.ConfigMapName),
			}}},
		},
	}
	if len(o.WatchNamespaces) > 0 {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range o.WatchNamespaces {
			cacheOpts.DefaultNamespaces[ns] = cache.Config{}
		}
	}

	mgr, err := manager.New(restConfig, manager.Options{
		Scheme:                        scheme,
		Cache:                         cacheOpts,
		Metrics:                       metricsserver.Options{BindAddress: o.MetricsAddr},
		HealthProbeBindAddress:        o.ProbeAddr,
		LeaderElection:                o.LeaderElection,
		LeaderElectionID:              LeaderElectionID,
		LeaderElectionNamespace:       o.SystemNamespace,
		LeaderElectionReleaseOnCancel: true,
		Controller:                    ctrlconfig.Controller{SkipNameValidation: ptr.To(o.SkipControllerNameValidation)},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, fmt.Errorf("adding the health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return nil, fmt.Errorf("adding the readiness check: %w", err)
	}

	store := o.Config
	if store == nil {
		store = config.NewStore()
	}
	services := &knative.Source{Reader: mgr.GetClient()}
	r := &function.Reconciler{
		Describer: funclib.NewDescriber(services),
		Services:  services,
		Inspector: registry.NewInspector(registry.DefaultCacheSize),
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  mgr.GetEventRecorderFor("func-operator"),
		Config:    store,
		Fetcher:   source.NewFetcher(o.WorkDir, source.DefaultCacheSize),
	}
	if err := r.SetupWithManager(ctx, mgr, o.Concurrency); err != nil {
		return nil, fmt.Errorf("setting up the Function controller: %w", err)
	}
	watcher := &config.Watcher{
		Client:    mgr.GetClient(),
		Recorder:  mgr.GetEventRecorderFor("func-operator"),
		Namespace: o.SystemNamespace,
		Store:     store,
		OnChange: func(ctx context.Context, old, new config.Config) {
			if old.AutoUpdateMiddleware != new.AutoUpdateMiddleware || old.UnknownMiddlewarePolicy != new.UnknownMiddlewarePolicy {
				r.OperatorPolicyChanged(ctx)
			}
		},
	}
	if err := watcher.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the config watcher: %w", err)
	}
	return mgr, nil
}

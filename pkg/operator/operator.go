package operator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	kedav1alpha1 "github.com/kedacore/http-add-on/operator/apis/http/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	eventingv1 "knative.dev/eventing/pkg/apis/eventing/v1"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/git"
	"github.com/fnops/func-operator/pkg/imagedeploy"
	"github.com/fnops/func-operator/pkg/knative"
	"github.com/fnops/func-operator/pkg/lanes"
	"github.com/fnops/func-operator/pkg/metrics"
	"github.com/fnops/func-operator/pkg/netguard"
	"github.com/fnops/func-operator/pkg/outcomes"
	"github.com/fnops/func-operator/pkg/rebase"
	"github.com/fnops/func-operator/pkg/rebuild"
	"github.com/fnops/func-operator/pkg/reconciler/function"
	"github.com/fnops/func-operator/pkg/reconciler/function/resources"
	"github.com/fnops/func-operator/pkg/tenancy"
	"github.com/fnops/func-operator/pkg/version"
	"github.com/fnops/func-operator/pkg/workload"
)

// Options configure the operator.
type Options struct {
	// WatchNamespaces are the namespaces whose Functions are reconciled; empty means all.
	WatchNamespaces []string
	// SystemNamespace holds the operator's own objects, such as its ConfigMap.
	SystemNamespace string
	// MetricsAddr serves Prometheus metrics; "0" disables them.
	MetricsAddr string
	// MetricsSecure serves the metrics over HTTPS, to scrapers whose token the API
	// server authenticates and that may get the non-resource URL /metrics
	// (MetricsReaderClusterRole); plain HTTP, open to anyone, when false. The binary's
	// default is true.
	MetricsSecure bool
	// MetricsCertDir holds the metrics server's certificate (tls.crt, tls.key) when
	// MetricsSecure; a self-signed one made in memory at start when empty.
	MetricsCertDir string
	// NoFunctionConditionMetrics leaves out func_operator_function_condition, the
	// series of each condition of each Function (5 to 10 a Function);
	// func_operator_functions, the fleet's counts, stays. The binary's flag
	// --function-condition-metrics (default true) is its negation.
	NoFunctionConditionMetrics bool
	// ProbeAddr serves /healthz and /readyz; "0" disables them.
	ProbeAddr string
	// PprofAddr serves Go's profiles (/debug/pprof/) over plain HTTP, unauthenticated;
	// "" or "0" (the binary's default) disables them. For a profile on request: bind
	// it to loopback and port-forward.
	PprofAddr string
	// WatchLabelSelector, when set, restricts the operator to the Functions it selects
	// (a label selector, such as "functions.dev/shard=a"): one shard of several.
	WatchLabelSelector string
	// LeaderElectionID names the leader election Lease; LeaderElectionID (the
	// constant) when empty. Each shard needs its own.
	LeaderElectionID string
	// WebhookAddr serves the push webhook receivers (package webhook); "" or "0"
	// disables them.
	WebhookAddr string
	// LeaderElection makes one replica of several active.
	LeaderElection bool
	// Concurrency is how many Functions are reconciled at once.
	Concurrency int
	// WorkDir holds temporary clones; the OS default when empty.
	WorkDir string
	// AllowLoopback lets Functions name git and registry servers on the operator's
	// own host (127.0.0.0/8, ::1), which are refused otherwise: for tests and a
	// developer's machine. The operator's own listeners stay refused.
	AllowLoopback bool
	// Config is the store the ConfigMap watcher keeps current; a new one holding the
	// defaults when nil.
	Config *config.Store
	// APIRecheck is how often the APIs the cluster did not serve at start (Knative,
	// Tekton) are looked for again; 30s when zero.
	APIRecheck time.Duration
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
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, servingv1.AddToScheme, eventingv1.AddToScheme, pipelinev1.AddToScheme, kedav1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("building the scheme: %w", err)
		}
	}
	return s, nil
}

// cacheTransform is the transform of every informer of the manager's cache.
func cacheTransform(o any) (any, error) {
	o, err := cache.TransformStripManagedFields()(o)
	if err != nil {
		return o, err
	}
	// SlimPipelineRun too: with Tekton installed after the start, every PipelineRun of
	// the cluster is cached, with no selector (cacheOptions).
	for _, slim := range []func(any) (any, error){workload.Slim, knative.Slim, knative.SlimTrigger, function.SlimFunction, function.SlimPipelineRun} {
		if o, err = slim(o); err != nil {
			return o, err
		}
	}
	return o, nil
}

// New builds the manager with the Function controller and the config watcher.
func New(ctx context.Context, restConfig *rest.Config, o Options) (_ manager.Manager, retErr error) {
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

	cacheOpts, tekton, watchSelected, err := cacheOptions(restConfig, o)
	if err != nil {
		return nil, err
	}
	leaderElectionID := o.LeaderElectionID
	if leaderElectionID == "" {
		leaderElectionID = LeaderElectionID
	}

	mgr, err := manager.New(restConfig, manager.Options{
		Scheme:                        scheme,
		Cache:                         cacheOpts,
		Metrics:                       metricsOptions(o),
		HealthProbeBindAddress:        o.ProbeAddr,
		PprofBindAddress:              o.PprofAddr,
		LeaderElection:                o.LeaderElection,
		LeaderElectionID:              leaderElectionID,
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
	workDir, kubeconfigDir, removeDirs, err := privateDirs(mgr, o.WorkDir)
	if err != nil {
		return nil, err
	}
	// The manager removes them when it stops; one that never starts must not leave them.
	defer func() {
		if retErr != nil {
			_ = removeDirs()
		}
	}()
	o.WorkDir = workDir
	o.Config = store
	closeFuncLibrary, funcProxy, err := setUpFuncLibrary(ctx, mgr, restConfig, kubeconfigDir, o)
	if err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			_ = closeFuncLibrary()
		}
	}()
	// The rebuild machinery, wired here and nowhere else: the queue and the launcher
	// wake Functions through Wakeups, which the controller watches; the seeder fills
	// the queue from the cluster once the caches can be read.
	wakeups := function.NewWakeups()
	launcher := rebuild.NewLauncher(funclib.RunPipeline, wakeups.Enqueue, mgr.GetLogger().WithName("builds"))
	launcher.LogLines = func() int { return store.Load().BuildLogLines }
	builds := &rebuild.Builds{
		Queue: rebuild.NewQueue(func() int { return store.Load().MaxConcurrentBuilds }, wakeups.Enqueue).
			WithNamespaceLimit(func() int { return store.Load().BuildsPerNamespace() }),
		Launcher: launcher,
		WorkDir:  o.WorkDir,
		Tekton:   tekton,
	}
	own := netguard.Own{AllowLoopback: o.AllowLoopback,
		Listeners: ownListeners(o.MetricsAddr, o.ProbeAddr, o.WebhookAddr, o.PprofAddr, funcProxy)}
	guard, fetcher, inspector, err := remotes(restConfig, store, o.WorkDir, own)
	if err != nil {
		return nil, err
	}
	// Outcomes go out through the guard, as every connection a tenant can point at.
	sender, err := outcomes.New(outcomes.Options{Config: func() config.Events { return store.Load().Events },
		Transport: guard.Transport(0), Brokers: mgr.GetAPIReader(), Log: mgr.GetLogger().WithName("outcomes")})
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(sender); err != nil {
		return nil, fmt.Errorf("adding the outcomes' sender: %w", err)
	}
	metricsOpts := []metrics.Option{metrics.WithCommitStore(func() metrics.CommitStore {
		st := fetcher.CommitStoreStats()
		return metrics.CommitStore{Bytes: st.Bytes, Commits: st.Commits, Evictions: st.Evictions, Refetches: st.Refetches, NotKept: st.NotKept}
	}), metrics.WithTransferRetries(fetcher.TransferRetries), metrics.WithCloudEvents(sender.Counts)}
	if o.NoFunctionConditionMetrics {
		metricsOpts = append(metricsOpts, metrics.WithoutFunctionConditions())
	}
	m := metrics.New(builds.Queue.Len, metricsOpts...)
	v := version.Get()
	if err := registerMetrics(append(m.Collectors(), metrics.BuildInfo(v.Version, v.Revision, v.GoVersion, v.FuncVersion))); err != nil {
		return nil, err
	}
	services := &knative.Services{Reader: mgr.GetClient()}
	workloads := &workload.Workloads{Reader: mgr.GetClient(), Subscriptions: services.SubscriptionsTo}
	repositories := function.NewRepositories()
	secretWatches, secrets, err := secretReaders(restConfig, mgr)
	if err != nil {
		return nil, err
	}
	r := function.New(function.Deps{
		Describer: funclib.NewDescriber(services).
			WithSource(funclib.DeployerRaw, workloads.Source(funclib.DeployerRaw)).
			WithSource(funclib.DeployerKeda, workloads.Source(funclib.DeployerKeda)),
		Services:  services,
		Workloads: workloads,
		Inspector: inspector,
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		// core/v1 Events, as before controller-runtime 0.23 deprecated this recorder: the
		// events.k8s.io/v1 one (GetEventRecorder) takes other RBAC and another Eventf.
		Recorder: function.CappedRecorder(mgr.GetEventRecorderFor("func-operator"), func() int { return store.Load().EventMessageMaxBytes }), //nolint:staticcheck // see above

		Config:  store,
		Fetcher: fetcher,
		Lanes:   &lanes.Lanes{Workers: o.Concurrency},
		Builds:  builds,
		Access:  &tenancy.NamespaceAccess{Client: mgr.GetClient(), Reader: mgr.GetAPIReader()},
		Secrets: secrets,
		Metrics: m,
		Wakeups: wakeups,

		Repositories:  repositories,
		WatchSelected: watchSelected,
		APIRecheck:    o.APIRecheck,
		Outcomes:      sender,
		// Rebases read and push through the network guard, within the inspection bounds,
		// and deploy as each namespace's build ServiceAccount (impersonated).
		Rebase: &rebase.Rebaser{Transport: guard.Transport(0), Guard: guard,
			MaxMemory: store.Load().InspectMaxMemory, MaxBytes: store.Load().InspectMaxBytes},
		ImageDeployer: &imagedeploy.Deployer{Config: restConfig},
	})
	// The Secret watches bring Functions back through the Reconciler that reads them.
	secretWatches.OnChange = r.SecretChanged
	// A repository whose listing changed brings back every Function reading it.
	fetcher.OnChange = r.RepositoryChanged
	if err := addWebhooks(mgr, o, repositories, wakeups, fetcher); err != nil {
		return nil, err
	}
	if o.LeaderElection {
		builds.Leading = &rebuild.Leading{}
		if err := mgr.Add(builds.Leading); err != nil {
			return nil, fmt.Errorf("adding the leadership clock: %w", err)
		}
	}
	if err := mgr.Add(&readyMigration{Reader: mgr.GetAPIReader(), Writer: mgr.GetClient().Status(), Namespaces: o.WatchNamespaces,
		Log: mgr.GetLogger().WithName("status-migration")}); err != nil {
		return nil, fmt.Errorf("adding the status migration: %w", err)
	}
	if err := addRunnables(mgr, secretWatches, builds); err != nil {
		return nil, err
	}
	if err := r.SetupWithManager(ctx, mgr, o.Concurrency); err != nil {
		return nil, fmt.Errorf("setting up the Function controller: %w", err)
	}
	watcher := &config.Watcher{
		Client:    mgr.GetClient(),
		Recorder:  mgr.GetEventRecorderFor("func-operator"), //nolint:staticcheck // core/v1 Events, as the Function controller's
		Namespace: o.SystemNamespace,
		Store:     store,
		OnChange:  onConfigChange(r, fetcher, builds.Queue, guard, restConfig, own),
	}
	if err := watcher.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the config watcher: %w", err)
	}
	return mgr, nil
}

// secretReaders returns the Secret watches of the onboarded namespaces (by metadata;
// set their OnChange before the manager starts) and the reader of the Secrets
// Functions name, which uses them.
func secretReaders(restConfig *rest.Config, mgr manager.Manager) (*tenancy.SecretWatches, *tenancy.Secrets, error) {
	metadataClient, err := metadata.NewForConfig(restConfig)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the metadata client: %w", err)
	}
	watches := &tenancy.SecretWatches{Client: metadataClient}
	return watches, tenancy.NewSecrets(mgr.GetAPIReader(), watches), nil
}

// addRunnables adds what runs beside the controller: the Secret watches of the
// onboarded namespaces, and the seeder that fills the build queue from the cluster.
func addRunnables(mgr manager.Manager, watches *tenancy.SecretWatches, builds *rebuild.Builds) error {
	if err := mgr.Add(watches); err != nil {
		return fmt.Errorf("adding the Secret watches: %w", err)
	}
	if err := mgr.Add(&rebuild.QueueSeeder{Reader: mgr.GetClient(), Queue: builds.Queue, Tekton: builds.Tekton}); err != nil {
		return fmt.Errorf("adding the build queue's seeder: %w", err)
	}
	return nil
}

// cacheOptions are the manager's cache options: what is cached, cut how; whether the
// cluster serves Tekton; and the label selector of this shard's Functions (nil: all).
func cacheOptions(restConfig *rest.Config, o Options) (cache.Options, bool, labels.Selector, error) {
	cacheOpts := cache.Options{
		// The operator never reads managedFields: without them a cached Knative Service
		// or Function takes about half the memory (measured by make bench-scale).
		// What tenants write and the operator caches is cut to what it reads, whatever
		// its size: Knative Services and Revisions and Triggers (cached cluster-wide,
		// func's or not), Functions' annotations. (A default transform, as Knative may
		// be installed after the start.)
		DefaultTransform: cacheTransform,
		ByObject: map[client.Object]cache.ByObject{
			// Only the operator's own ConfigMap is cached.
			&corev1.ConfigMap{}: {Namespaces: map[string]cache.Config{o.SystemNamespace: {
				FieldSelector: fields.OneTermEqualSelector("metadata.name", config.ConfigMapName),
			}}},
		},
	}
	// Of Deployments, core Services (by metadata) and HTTPScaledObjects, only what func's
	// deployers labelled with a function's name is cached (cut by workload.Slim): the
	// raw and keda deployers' functions. (The HTTPScaledObjects of a KEDA HTTP add-on
	// installed after the start are all cached, cut, until the next restart.)
	funcLabelled := cache.ByObject{Label: workload.CacheSelector()}
	serviceMeta := &metav1.PartialObjectMetadata{}
	serviceMeta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Service"))
	cacheOpts.ByObject[&appsv1.Deployment{}] = funcLabelled
	cacheOpts.ByObject[serviceMeta] = funcLabelled
	keda, err := apiServed(restConfig, kedav1alpha1.SchemeGroupVersion.String(), "httpscaledobjects")
	if err != nil {
		return cache.Options{}, false, nil, err
	}
	if keda {
		cacheOpts.ByObject[&kedav1alpha1.HTTPScaledObject{}] = funcLabelled
	}
	tekton, err := tektonInstalled(restConfig)
	if err != nil {
		return cache.Options{}, false, nil, err
	}
	if tekton {
		// Only the PipelineRuns of the operator's builds are cached. (The cache cannot
		// be told so of a kind the cluster does not serve yet: with Tekton installed
		// after the start, every PipelineRun is cached until the next restart.) They
		// are cut by the default transform, as late ones are (SlimPipelineRun).
		cacheOpts.ByObject[&pipelinev1.PipelineRun{}] = cache.ByObject{
			Label: labels.SelectorFromSet(labels.Set{resources.LabelManagedBy: resources.ManagedBy}),
		}
	}
	var watchSelected labels.Selector
	if o.WatchLabelSelector != "" {
		sel, err := labels.Parse(o.WatchLabelSelector)
		if err != nil {
			return cache.Options{}, false, nil, fmt.Errorf("parsing the watch label selector %q: %w", o.WatchLabelSelector, err)
		}
		// Only this shard's Functions are cached, so only they are reconciled.
		cacheOpts.ByObject[&v1alpha1.Function{}] = cache.ByObject{Label: sel}
		watchSelected = sel
	}
	if len(o.WatchNamespaces) > 0 {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range o.WatchNamespaces {
			cacheOpts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return cacheOpts, tekton, watchSelected, nil
}

// tektonInstalled reports whether the cluster serves Tekton's v1 PipelineRuns.
func tektonInstalled(cfg *rest.Config) (bool, error) {
	return apiServed(cfg, pipelinev1.SchemeGroupVersion.String(), "pipelineruns")
}

// apiServed reports whether the cluster serves resource of groupVersion.
func apiServed(cfg *rest.Config, groupVersion, resource string) (bool, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return false, fmt.Errorf("creating the discovery client: %w", err)
	}
	list, err := dc.ServerResourcesForGroupVersion(groupVersion)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("looking up the API %s: %w", groupVersion, err)
	}
	for _, r := range list.APIResources {
		if r.Name == resource {
			return true, nil
		}
	}
	return false, nil
}

// setUpFuncLibrary points the func library at the operator's cluster, through a
// proxy that the manager stops (close stops it sooner), and pins the image its
// pipelines run, from the ConfigMap as it is when the operator starts. It returns
// the proxy's address, which the network guard refuses to Functions.
func setUpFuncLibrary(ctx context.Context, mgr manager.Manager, restConfig *rest.Config, kubeconfigDir string, o Options) (close func() error, proxy string, retErr error) {
	cluster, err := funclib.UseCluster(ctx, restConfig, kubeconfigDir, func() string { return o.Config.Load().PipelineServiceAccount })
	if err != nil {
		return nil, "", fmt.Errorf("pointing the func library at the operator's cluster: %w", err)
	}
	defer func() {
		if retErr != nil {
			_ = cluster.Close()
		}
	}()
	if err := mgr.Add(cleanup(cluster.Close)); err != nil {
		return nil, "", fmt.Errorf("adding the func library's clean-up: %w", err)
	}
	path := cluster.Kubeconfig
	cm := &corev1.ConfigMap{}
	err = mgr.GetAPIReader().Get(ctx, types.NamespacedName{Namespace: o.SystemNamespace, Name: config.ConfigMapName}, cm)
	switch {
	case apierrors.IsNotFound(err):
		cm = nil
	case err != nil:
		return nil, "", fmt.Errorf("reading ConfigMap %s/%s: %w", o.SystemNamespace, config.ConfigMapName, err)
	}
	c, _ := config.FromConfigMap(cm) // the watcher reports invalid keys
	if c.DeployerImage != "" {
		funclib.SetDeployerImage(c.DeployerImage)
	}
	funclib.SetGitCloneImage(c.GitCloneImage)
	log.FromContext(ctx).Info("func library ready", "version", funclib.Version(), "kubeconfig", path,
		"deployerImage", funclib.DeployerImage(), "gitCloneImage", funclib.GitCloneImage(), "gitCloneTask", funclib.GitCloneTaskVersion)
	return cluster.Close, cluster.ProxyAddress(), nil
}

// lastMetrics are the collectors of package metrics the last operator of this
// process registered.
var lastMetrics struct {
	sync.Mutex
	cs []prometheus.Collector
}

// registerMetrics registers the collectors of package metrics, and unregisters all
// those of an operator that ran before in this process, also those the new one leaves
// out (func_operator_function_condition with NoFunctionConditionMetrics), which
// register alone would leave serving the old operator's series.
func registerMetrics(cs []prometheus.Collector) error {
	lastMetrics.Lock()
	defer lastMetrics.Unlock()
	for _, c := range lastMetrics.cs {
		ctrlmetrics.Registry.Unregister(c)
	}
	lastMetrics.cs = cs
	return register(cs)
}

// register adds the collectors to the manager's registry, replacing those of an
// operator that ran before in this process (tests run several).
func register(cs []prometheus.Collector) error {
	for _, c := range cs {
		err := ctrlmetrics.Registry.Register(c)
		var already prometheus.AlreadyRegisteredError
		if errors.As(err, &already) {
			ctrlmetrics.Registry.Unregister(already.ExistingCollector)
			err = ctrlmetrics.Registry.Register(c)
		}
		if err != nil {
			return fmt.Errorf("registering metrics: %w", err)
		}
	}
	return nil
}

// cleanup runs when the manager stops, leader or not.
type cleanup func() error

// Start waits for the manager to stop, then cleans up.
func (c cleanup) Start(ctx context.Context) error {
	<-ctx.Done()
	return c()
}

// NeedLeaderElection is false: every replica cleans up after itself.
func (cleanup) NeedLeaderElection() bool { return false }

// leftoverPrefixes name what the operator makes in its work directory: the func
// library's private directory, clones (of one commit, and of a history: git.ReadAt),
// build roots and func.yaml scratch copies.
var leftoverPrefixes = []string{"func-library-", "clone-", git.HistoryDirPrefix, "build-", "funcyaml-"}

// removeLeftovers removes from workDir, the operator's own (an emptyDir, which
// outlives a container restart), what an earlier process left when it was killed:
// without it every SIGKILL mid-clone would leave a clone behind until the volume's
// size limit evicts the pod.
// A directory others may write to (world-writable or sticky, as /tmp) is not the
// operator's own: nothing is removed from it.
func removeLeftovers(workDir string) error {
	fi, err := os.Stat(workDir)
	if err != nil {
		return fmt.Errorf("reading the work directory %s: %w", workDir, err)
	}
	if fi.Mode()&(os.ModeSticky|0o002) != 0 {
		return fmt.Errorf("the work directory %s is shared (mode %s): use a directory of the operator's own, such as an emptyDir", workDir, fi.Mode())
	}
	entries, err := os.ReadDir(workDir)
	if err != nil {
		return fmt.Errorf("reading the work directory %s: %w", workDir, err)
	}
	var errs []error
	for _, e := range entries {
		for _, p := range leftoverPrefixes {
			if e.IsDir() && strings.HasPrefix(e.Name(), p) {
				errs = append(errs, os.RemoveAll(filepath.Join(workDir, e.Name())))
				break
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("removing what an earlier process left in the work directory %s: %w", workDir, err)
	}
	return nil
}

// privateDirs returns the work directory for temporary clones (workDir, or one made
// for this process when empty) and, under it, a directory of this process alone for
// the func library's kubeconfig, which holds the operator's credentials: mode 0700,
// under a name no other process can predict. What it makes is removed when the
// manager stops.
func privateDirs(mgr manager.Manager, workDir string) (work, kubeconfig string, remove func() error, err error) {
	var made []string
	remove = func() error {
		var errs []error
		for i := len(made) - 1; i >= 0; i-- {
			errs = append(errs, os.RemoveAll(made[i]))
		}
		return errors.Join(errs...)
	}
	if workDir == "" {
		dir, err := os.MkdirTemp("", "func-operator-")
		if err != nil {
			return "", "", nil, fmt.Errorf("creating the work directory: %w", err)
		}
		made, workDir = append(made, dir), dir
	} else if err := removeLeftovers(workDir); err != nil {
		// What stays behind only takes room: not a reason to stop.
		mgr.GetLogger().Error(err, "cleaning the work directory up")
	}
	kubeconfigDir, err := os.MkdirTemp(workDir, "func-library-")
	if err != nil {
		_ = remove()
		return "", "", nil, fmt.Errorf("creating the func library's private directory: %w", err)
	}
	made = append(made, kubeconfigDir)
	if err := mgr.Add(cleanup(remove)); err != nil {
		_ = remove()
		return "", "", nil, fmt.Errorf("adding the clean-up of the operator's directories: %w", err)
	}
	return workDir, kubeconfigDir, remove, nil
}

// onConfigChange applies a new configuration to what does not read the store at
// each use.
func onConfigChange(r *function.Reconciler, fetcher *git.Fetcher, queue *rebuild.Queue, guard *netguard.Guard,
	restConfig *rest.Config, own netguard.Own) func(ctx context.Context, old, new config.Config) {
	return func(ctx context.Context, old, new config.Config) {
		if old.AutoUpdateMiddleware != new.AutoUpdateMiddleware || old.UnknownMiddlewarePolicy != new.UnknownMiddlewarePolicy {
			r.OperatorPolicyChanged(ctx)
		}
		if old.RebuildCommit != new.RebuildCommit {
			r.OperatorRebuildCommitChanged(ctx)
		}
		if new.MaxConcurrentBuilds > old.MaxConcurrentBuilds || new.BuildsPerNamespace() > old.BuildsPerNamespace() {
			queue.Kick()
		}
		if new.CommitStoreMaxBytes < old.CommitStoreMaxBytes {
			fetcher.TrimCommitStore()
		}
		if old.DeployerImage != new.DeployerImage && new.DeployerImage != "" && new.DeployerImage != funclib.DeployerImage() {
			log.FromContext(ctx).Info("the deployer image is read when the operator starts: restart it to use the new one",
				"running", funclib.DeployerImage(), "configured", new.DeployerImage)
		}
		if !slices.Equal(old.HostAllow, new.HostAllow) || !slices.Equal(old.HostDeny, new.HostDeny) {
			if err := updateGuard(guard, restConfig, own, new); err != nil {
				log.FromContext(ctx).Error(err, "the network policy is unchanged")
			} else {
				// What was listed under the old stance is not shared under the new one.
				fetcher.ForgetAll()
			}
		}
	}
}

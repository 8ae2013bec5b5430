package function

// What the operator may do in every namespace. controller-gen turns these markers
// into the ClusterRole of config/200-clusterrole.yaml (make manifests): reads for its
// watches (Knative Services; for func's raw and keda deployers Deployments, Services
// and HTTPScaledObjects, cached only when func labelled them, by metadata for Services,
// and cut to name, image and rollout for Deployments: workload.Slim), its own Function status, Events, and access reviews. It has no write on
// Secrets, ServiceAccounts, RoleBindings, PVCs or pods anywhere: what a build writes
// in a namespace, the operator may write only where that namespace granted it the
// ClusterRole func-operator-namespace (config/200-namespace-clusterrole.yaml,
// onboarded with config/namespace/onboard.yaml). tenancy.NamespaceGrant lists those rights
// for the access check; a test keeps the two equal.

// +kubebuilder:rbac:groups=functions.dev,resources=functions,verbs=get;list;watch
// +kubebuilder:rbac:groups=functions.dev,resources=functions/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=serving.knative.dev,resources=services;revisions,verbs=get;list;watch
// +kubebuilder:rbac:groups=eventing.knative.dev,resources=triggers,verbs=get;list;watch
// +kubebuilder:rbac:groups=eventing.knative.dev,resources=brokers,verbs=get
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch
// +kubebuilder:rbac:groups=http.keda.sh,resources=httpscaledobjects,verbs=get;list;watch
// +kubebuilder:rbac:groups=tekton.dev,resources=pipelineruns;taskruns,verbs=get;list;watch
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

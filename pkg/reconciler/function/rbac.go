package function

// What the Function reconciler reads and writes. controller-gen turns these markers
// into config/200-clusterrole.yaml (make manifests).

// +kubebuilder:rbac:groups=functions.dev,resources=functions,verbs=get;list;watch
// +kubebuilder:rbac:groups=functions.dev,resources=functions/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=serving.knative.dev,resources=services;revisions,verbs=get;list;watch
// +kubebuilder:rbac:groups=eventing.knative.dev,resources=triggers,verbs=get;list;watch

// Rebuilds. func's pipelines provider, run in-process, creates the PersistentVolumeClaim,
// the registry Secret (above), the Pipeline and the PipelineRun of a build, follows the
// run and its TaskRuns, reads the failed step's log, and reads the Knative Service at
// the end. The operator grants the pipeline ClusterRole to the PipelineRuns'
// ServiceAccount through one RoleBinding per namespace (bind, on that ClusterRole only)
// and lists the registry Secret among the function ServiceAccount's imagePullSecrets.
// When a Function is deleted, the operator deletes the objects of its builds.
// +kubebuilder:rbac:groups=tekton.dev,resources=pipelineruns,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=tekton.dev,resources=pipelines,verbs=get;list;create;update;patch;delete
// +kubebuilder:rbac:groups=tekton.dev,resources=taskruns,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;create;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods/log,verbs=get
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;create;patch
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=rolebindings,verbs=get;create;patch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=bind,resourceNames=func-operator-pipeline

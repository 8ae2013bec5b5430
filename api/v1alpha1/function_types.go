package v1alpha1

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	duckv1 "knative.dev/pkg/apis/duck/v1"
)

// Function is a Knative Function deployed from a git repository that
// func-operator keeps healthy: it reads the function's func.yaml from git,
// follows the deployed Knative Service and rebuilds the function on-cluster
// when its middleware is outdated. `func deploy` writes it too, and resets every
// spec field but the repository's url, branch and path and the registry Secret:
// annotations functions.dev/auto-update-middleware, functions.dev/suspend and
// functions.dev/build-history-limit keep those settings across deploys.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=func;funcs,categories=all;knative;functions
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Runtime",type=string,JSONPath=`.status.deployment.runtime`
// +kubebuilder:printcolumn:name="Deployer",type=string,JSONPath=`.status.deployment.deployer`
// +kubebuilder:printcolumn:name="Middleware",type=string,JSONPath=`.status.middleware.current`
// +kubebuilder:printcolumn:name="Up-To-Date",type=string,JSONPath=`.status.conditions[?(@.type=="MiddlewareUpToDate")].status`
// +kubebuilder:printcolumn:name="Build",type=string,JSONPath=`.status.build.phase`
// +kubebuilder:printcolumn:name="Suspended",type=string,JSONPath=`.status.conditions[?(@.type=="Suspended")].status`
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.status.service.url`
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.middleware.available`,priority=1
// +kubebuilder:printcolumn:name="Pending Rebuild",type=boolean,JSONPath=`.status.middleware.pendingRebuild`,priority=1
// +kubebuilder:printcolumn:name="Ref",type=string,JSONPath=`.status.git.resolvedRef`,priority=1
// +kubebuilder:printcolumn:name="Commit",type=string,JSONPath=`.status.git.observedCommit`,priority=1
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.deployment.revision`,priority=1
// +kubebuilder:printcolumn:name="Rebuilds",type=string,JSONPath=`.status.middleware.rebuildFrom.source`,priority=1
// +kubebuilder:printcolumn:name="Deployed-Commit",type=string,JSONPath=`.status.deployOnCommit.deployedCommit`,priority=1
// +kubebuilder:printcolumn:name="Cause",type=string,JSONPath=`.status.build.cause`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Function struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says where the function's source and registry credentials are.
	Spec FunctionSpec `json:"spec"`

	// Status is what the operator observed of the function.
	// +optional
	Status FunctionStatus `json:"status,omitempty"`
}

// AnnotationRequestedAt, set to a new value (a time, say), asks for a check of the
// Function now: its repository is listed again even when another Function's listing
// of it is fresh.
const AnnotationRequestedAt = "functions.dev/requested-at"

// AnnotationRebuildRequestedAt, set to a new value (a time, say), asks for one rebuild
// of the function now, of the commit a middleware rebuild would build
// (status.middleware.rebuildFrom), through the fleet's queue, past a failed build's
// backoff. status.lastHandledRebuildRequest records the value once a build started
// for it or it was refused, so one value never builds twice, across restarts.
const AnnotationRebuildRequestedAt = "functions.dev/rebuild-requested-at"

// FunctionSpec is where a function's source lives and how to reach it. It is
// wire-compatible with the Function objects that `func deploy` writes.
type FunctionSpec struct {
	// Repository is the git repository holding the function's source and its func.yaml.
	Repository Repository `json:"repository"`

	// Registry holds the credentials for the registry the function's image is pushed to.
	// +optional
	Registry Registry `json:"registry,omitempty"`

	// AutoUpdateMiddleware says whether the operator rebuilds the function when its
	// middleware is outdated. Unset means annotation functions.dev/auto-update-middleware
	// ("true" or "false") when the Function has it, else the operator-wide default
	// (ConfigMap func-operator-config, key autoUpdateMiddleware). Every `func deploy`
	// resets this field: the annotation keeps the setting across deploys.
	// +optional
	AutoUpdateMiddleware *bool `json:"autoUpdateMiddleware,omitempty"`

	// Suspend stops the operator from checking the function and from rebuilding it,
	// as Flux's suspend does: its status stays as it was, a queued rebuild gives its
	// place up, and a build already running finishes on its own. Setting it back to
	// false checks the function at once. False or unset means annotation
	// functions.dev/suspend ("true" or "false") when the Function has it. Every
	// `func deploy` resets this field: the annotation keeps the setting across deploys.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// BuildHistoryLimit is how many finished PipelineRuns of the function's rebuilds
	// are kept; older ones are deleted (with their TaskRuns and pods). Unset means
	// annotation functions.dev/build-history-limit (0 to 20) when the Function has it,
	// else 3. A running build is never deleted. Every `func deploy` resets this field:
	// the annotation keeps the setting across deploys.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=20
	// +optional
	BuildHistoryLimit *int32 `json:"buildHistoryLimit,omitempty"`
}

// DefaultBuildHistoryLimit is how many finished PipelineRuns a Function keeps when
// spec.buildHistoryLimit is unset.
const DefaultBuildHistoryLimit = 3

// Repository is a git repository and the place of a function inside it. Two pairs of
// fields name the same thing: branch and revision (upstream's newer name, which also
// takes a tag), path and dir; set one of each pair. Read them through Reference and
// Directory.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.branch) && has(self.ref))",message="set branch or ref, not both"
// +kubebuilder:validation:XValidation:rule="!(has(self.branch) && size(self.branch) > 0 && has(self.revision) && size(self.revision) > 0)",message="set branch or revision, not both"
// +kubebuilder:validation:XValidation:rule="!(has(self.revision) && size(self.revision) > 0 && has(self.ref))",message="set revision or ref, not both"
// +kubebuilder:validation:XValidation:rule="!(has(self.path) && size(self.path) > 0 && has(self.dir) && size(self.dir) > 0)",message="set path or dir, not both"
type Repository struct {
	// URL of the git repository: https://host/org/repo.git, http://..., ssh://[user@]host[:port]/path
	// or the scp-like form user@host:path. Credentials never belong in the URL: use authSecretRef.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.matches('^(https?|ssh)://[^/ ]+(/.*)?$') || self.matches('^[A-Za-z0-9._~-]+@[A-Za-z0-9.-]+:[^ ]+$')",message="url must be an http://, https:// or ssh:// URL, or scp-like user@host:path"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[a-z]+://[^/]*:[^/]*@') && !self.matches('^https?://[^/]*@')",message="url must not embed credentials: put them in the Secret named by authSecretRef"
	// +kubebuilder:validation:XValidation:rule="!self.matches('[[:cntrl:]]')",message="url must not hold control characters (line breaks, tabs, NUL)"
	URL string `json:"url"`

	// Branch to follow. Empty means the remote's default branch (its HEAD), unless ref
	// or revision says otherwise; the branch it resolved to is reported in
	// status.git.resolvedBranch. func deploy (v0.50) writes it.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('-') && !self.startsWith('refs/') && !self.contains(' ') && !self.contains('..')",message="branch must be a plain branch name (no leading '-', no 'refs/' prefix, no spaces, no '..')"
	Branch string `json:"branch,omitempty"`

	// Revision to follow, as the upstream operator names it (it replaced branch there):
	// a branch or a tag by name, or a full ref, refs/heads/<branch> or refs/tags/<tag>.
	// A name that is both a tag and a branch is the tag, as git and upstream resolve it;
	// a tag is followed as ref.tag is (peeled, and moved when the tag moves). Empty
	// means the remote's default branch. It cannot be set together with branch or ref.
	// status.git.resolvedRevision shows what it resolved to.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('-') && !self.contains(' ') && !self.contains('..') && (!self.startsWith('refs/') || self.matches('^refs/(heads|tags)/[^/]'))",message="revision must be a branch or tag name, or a full ref refs/heads/<branch> or refs/tags/<tag> (no leading '-', no spaces, no '..')"
	Revision string `json:"revision,omitempty"`

	// Ref follows something other than a branch, as Flux's GitRepository ref does: a
	// tag, the highest tag in a semver range, or a fixed commit. It cannot be set
	// together with branch or revision. status.git.resolvedRef shows what it resolved to.
	// +optional
	Ref *GitRef `json:"ref,omitempty"`

	// Path of the function's directory (the one holding func.yaml) inside the repository,
	// relative to its root, for monorepos. Empty means the repository root (unless dir,
	// its newer name, is set). func deploy (v0.50) writes it.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/')",message="path must be relative to the repository root, not absolute"
	// +kubebuilder:validation:XValidation:rule="!self.matches('(^|/)[.][.](/|$)')",message="path must not contain '..' segments"
	Path string `json:"path,omitempty"`

	// Dir is path under the upstream operator's newer name: the function's directory
	// (the one holding func.yaml), relative to the repository root. It cannot be set
	// together with path.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/')",message="dir must be relative to the repository root, not absolute"
	// +kubebuilder:validation:XValidation:rule="!self.matches('(^|/)[.][.](/|$)')",message="dir must not contain '..' segments"
	Dir string `json:"dir,omitempty"`

	// AuthSecretRef names a Secret in the Function's namespace with the credentials
	// for the repository. For HTTP(S): key "token", or keys "username" and "password".
	// For SSH: the private key under "ssh-privatekey" (or Flux's "identity", or the
	// upstream func-operator's "sshPrivateKey"), its passphrase, if any, under
	// "passphrase" (or "sshPrivateKeyPassword"), and "known_hosts", which is required:
	// host keys are always verified. Two different values under two names of the same
	// key are refused (AuthSecretInvalid).
	// +optional
	AuthSecretRef *corev1.LocalObjectReference `json:"authSecretRef,omitempty"`
}

// GitRef is a tag, a semver range of tags or a commit of a repository. Exactly one
// field is set.
//
// +kubebuilder:validation:XValidation:rule="[has(self.tag), has(self.semver), has(self.commit)].filter(x, x).size() == 1",message="ref must set exactly one of tag, semver and commit"
type GitRef struct {
	// Tag to follow: the commit it points at (annotated tags are peeled).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('-') && !self.startsWith('refs/') && !self.contains(' ') && !self.contains('..')",message="tag must be a plain tag name (no leading '-', no 'refs/' prefix, no spaces, no '..')"
	Tag string `json:"tag,omitempty"`

	// SemVer is a semver range (Masterminds/semver syntax, as Flux's): the operator
	// follows the tag of the highest version in it, e.g. ">=1.2.0 <2.0.0" or "~1.4".
	// Tags that are not semantic versions are skipped, and so are pre-releases unless
	// the range names one.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9A-Za-z.*^~<>=!|, +-]+$')",message="semver must be a semver range such as '>=1.2.0 <2.0.0' or '~1.4'"
	SemVer string `json:"semver,omitempty"`

	// Commit to stay on: a full commit id, 40 lowercase hex digits (SHA-1 repositories:
	// the git library the operator links does not read SHA-256 ones).
	// +optional
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9a-f]{40}$')",message="commit must be a full commit id: 40 lowercase hex digits"
	Commit string `json:"commit,omitempty"`
}

// Registry is the container registry the function's image lives in.
type Registry struct {
	// AuthSecretRef names a kubernetes.io/dockerconfigjson Secret in the Function's
	// namespace with the credentials to pull and push the function's image.
	// +optional
	AuthSecretRef *corev1.LocalObjectReference `json:"authSecretRef,omitempty"`
}

// FunctionStatus is what the operator observed of a function. Conditions follow the
// Knative conventions: Ready is derived from SourceReady, Deployed,
// MiddlewareUpToDate and ServiceReady.
type FunctionStatus struct {
	duckv1.Status `json:",inline"`

	// Name of the function, as written in its func.yaml. `func deploy` uses it to find
	// the Function object of a function.
	// +optional
	Name string `json:"name,omitempty"`

	// Git is what the operator last read from the repository.
	// +optional
	Git *GitStatus `json:"git,omitempty"`

	// Deployment describes the function as deployed.
	// +optional
	Deployment *DeploymentStatus `json:"deployment,omitempty"`

	// Middleware compares the middleware the function runs with the one a rebuild would bring.
	// +optional
	Middleware *MiddlewareStatus `json:"middleware,omitempty"`

	// Service is the Knative Service that serves the function.
	// +optional
	Service *ServiceStatus `json:"service,omitempty"`

	// Build is the operator's latest rebuild of the function: queued, running or finished.
	// +optional
	Build *BuildStatus `json:"build,omitempty"`

	// DeployOnCommit is the source policy (annotation functions.dev/deploy-on-commit,
	// ConfigMap key deployOnCommit) and the commit deployed against the one followed.
	// +optional
	DeployOnCommit *DeployOnCommitStatus `json:"deployOnCommit,omitempty"`

	// Base compares the base the running image was built on (a buildpacks run
	// image, an s2i builder) with what it points to now; absent while the base
	// policy is Off.
	// +optional
	Base *BaseStatus `json:"base,omitempty"`

	// LastHandledRequestedAt is the value of annotation functions.dev/requested-at the
	// operator last handled: a new value checks the repository at once, without the
	// listing other Functions share (as Flux's lastHandledReconcileAt). A value over 64
	// bytes shows as "sha256:" and its digest.
	// +optional
	LastHandledRequestedAt string `json:"lastHandledRequestedAt,omitempty"`

	// LastHandledRebuildRequest is the value of annotation
	// functions.dev/rebuild-requested-at the operator last handled: a build started for
	// it, or it was refused (Event RebuildRequestRefused says why). Shown as
	// lastHandledRequestedAt is.
	// +optional
	LastHandledRebuildRequest string `json:"lastHandledRebuildRequest,omitempty"`

	// History lists notable events in the function's life, newest first, at most 20.
	// +optional
	// +kubebuilder:validation:MaxItems=20
	History []HistoryEntry `json:"history,omitempty"`
}

// GitStatus is what the operator last read from the function's repository.
type GitStatus struct {
	// ResolvedBranch is the branch followed: spec.repository.branch (or a revision
	// that is a branch), or the remote's default branch when neither, nor
	// spec.repository.ref, is set. Empty when a tag or a commit is followed.
	// +optional
	ResolvedBranch string `json:"resolvedBranch,omitempty"`

	// ResolvedRevision is what is followed, as the upstream operator names it and as
	// spec.repository.revision takes it: the branch's name, or the tag's full ref
	// (refs/tags/v1.2.3), or the commit of spec.repository.ref.commit. Written
	// beside resolvedBranch, whichever field names the spec used.
	// +optional
	ResolvedRevision string `json:"resolvedRevision,omitempty"`

	// ResolvedRef is the reference followed, in full (refs/heads/main,
	// refs/tags/v1.2.3: for a semver range, the tag it resolved to), or the commit
	// when spec.repository.ref.commit fixes one.
	// +optional
	ResolvedRef string `json:"resolvedRef,omitempty"`

	// ObservedCommit is the commit of the resolved branch that func.yaml was last read from.
	// +optional
	ObservedCommit string `json:"observedCommit,omitempty"`

	// LastChecked is when the operator last read func.yaml from the repository: when a new
	// commit, a changed spec or a recovered error made it fetch the source. The branch head is
	// polled on every periodic check (ConfigMap func-operator-config, key checkInterval), but a
	// check that finds the same commit leaves this time, and the whole object, unchanged.
	// +optional
	LastChecked *metav1.Time `json:"lastChecked,omitempty"`

	// UnreachableSince is when the repository stopped answering (a network error, a
	// timeout, a 5xx), while it has not answered since. During an outage the last
	// known good source stands, until ConfigMap func-operator-config's outageGrace.
	// +optional
	UnreachableSince *metav1.Time `json:"unreachableSince,omitempty"`
}

// DeploymentStatus describes the function as deployed.
type DeploymentStatus struct {
	// Image the function runs, by digest when known.
	// +optional
	Image string `json:"image,omitempty"`

	// ImageBuilt is when the running image was last built and deployed: by `func
	// deploy` (the time it writes into annotation functions.knative.dev/last-deployed)
	// or by the operator's rebuild, whichever is later.
	// +optional
	ImageBuilt *metav1.Time `json:"imageBuilt,omitempty"`

	// Revision is the commit the running image was built from, as its
	// org.opencontainers.image.revision label says: func (v0.49 and later) writes the
	// commit's first 7 hex digits, with "-dirty" appended when the function's
	// directory had uncommitted changes; the operator's rebuilds write the commit in
	// full. Empty when the image has no such label (func before v0.49, or an image
	// not built by func), or when the running image is not read (runtimes whose
	// middleware lives in the function's own source).
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Revision string `json:"revision,omitempty"`

	// FollowedAtDeploy is the commit the followed reference pointed at
	// (status.git.observedCommit) when the operator first saw Image. A rebuild looks
	// the commit an abbreviated Revision names up among it and its ancestors only:
	// a commit pushed after the deploy is never taken for the deployed one, however
	// its id was chosen to begin.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	FollowedAtDeploy string `json:"followedAtDeploy,omitempty"`

	// Runtime of the function (go, node, python, quarkus, springboot, rust, typescript), from func.yaml.
	// +optional
	Runtime string `json:"runtime,omitempty"`

	// Deployer is func's deployer that deployed the function, as the cluster shows
	// it: knative (a Knative Service), raw (a Deployment and a Service) or keda (raw
	// plus an HTTPScaledObject of the KEDA HTTP add-on).
	// +optional
	Deployer string `json:"deployer,omitempty"`

	// RequestedDeployer is the deployer func.yaml names at the observed commit: its
	// deployer field, else deploy.deployer (the one func recorded); empty when it
	// names none, which is func's default, knative. A rebuild deploys with the
	// deployer func.yaml names at the commit it builds (this one when it builds the
	// observed commit): the operator does not rebuild when that would strand what
	// Deployer deployed (func's rule: only raw to keda is a safe switch).
	// +optional
	// +kubebuilder:validation:MaxLength=63
	RequestedDeployer string `json:"requestedDeployer,omitempty"`

	// Invoke is the function's invocation type from func.yaml: http (also when empty) or cloudevent.
	// +optional
	Invoke string `json:"invoke,omitempty"`
}

// MiddlewareStatus compares the function's middleware with the newest one.
type MiddlewareStatus struct {
	// Current is the middleware version the running image was built with.
	// +optional
	Current string `json:"current,omitempty"`

	// Available is the middleware version a rebuild with the operator's func library would bring.
	// +optional
	Available string `json:"available,omitempty"`

	// AutoUpdate says whether outdated middleware is rebuilt, and which setting decided it.
	// +optional
	AutoUpdate *AutoUpdateStatus `json:"autoUpdate,omitempty"`

	// PendingRebuild is true when the middleware is outdated and a rebuild is due.
	// +optional
	PendingRebuild bool `json:"pendingRebuild,omitempty"`

	// LastRebuild is when the operator last rebuilt the function.
	// +optional
	LastRebuild *metav1.Time `json:"lastRebuild,omitempty"`

	// FuncVersion is the version of the func library linked into the operator, which
	// decides what Available is.
	// +optional
	FuncVersion string `json:"funcVersion,omitempty"`

	// CurrentSource says where Current was read: label (the image's middleware-version
	// label), buildinfo (the function binary's Go build info), source (the function's
	// own package.json, pom.xml or requirements.txt) or empty when unknown.
	// +optional
	// +kubebuilder:validation:Enum=label;buildinfo;source
	CurrentSource string `json:"currentSource,omitempty"`

	// Image is the image Current was read from (by digest).
	// +optional
	Image string `json:"image,omitempty"`

	// ReadWith names the credentials Image was read with: the registry Secret and its
	// resourceVersion ("secret/<name>@<resourceVersion>"), empty for anonymous reads.
	// +optional
	ReadWith string `json:"readWith,omitempty"`

	// RebuildFrom says which commit a rebuild builds, decided before one starts;
	// nil while the running image is not read.
	// +optional
	RebuildFrom *RebuildFromStatus `json:"rebuildFrom,omitempty"`

	// RegistryUnreachableSince is when the registry of the running image stopped
	// letting it be read (a network error, a timeout, a 5xx; or, for the image and
	// credentials the verdict was read with, a 401/403), while it has not since. During an outage the
	// last known middleware verdict stands, until ConfigMap func-operator-config's
	// outageGrace.
	// +optional
	RegistryUnreachableSince *metav1.Time `json:"registryUnreachableSince,omitempty"`
}

// Where status.middleware.current was read.
const (
	// MiddlewareSourceLabel: the image's middleware-version label, as func >= v0.48 writes it.
	MiddlewareSourceLabel = "label"
	// MiddlewareSourceBuildInfo: the knative.dev/func-go version in the Go build info of
	// the function binary in the image.
	MiddlewareSourceBuildInfo = "buildinfo"
	// MiddlewareSourceSource: the function's own source, for runtimes whose middleware
	// lives there.
	MiddlewareSourceSource = "source"
)

// Which setting decided status.middleware.autoUpdate.
const (
	// AutoUpdateSourceFunction: the Function's spec.autoUpdateMiddleware.
	AutoUpdateSourceFunction = "Function"
	// AutoUpdateSourceAnnotation: the Function's annotation
	// functions.dev/auto-update-middleware, or an invalid settings annotation that
	// holds rebuilds (Function.Settings).
	AutoUpdateSourceAnnotation = "Annotation"
	// AutoUpdateSourceOperatorConfig: the operator's ConfigMap func-operator-config.
	AutoUpdateSourceOperatorConfig = "OperatorConfig"
)

// Values of status.deployment.deployer: func's deployers.
const (
	// DeployerKnative: a Knative Service serves the function.
	DeployerKnative = "knative"
	// DeployerRaw: func's raw deployer's Deployment and Service serve the function.
	DeployerRaw = "raw"
	// DeployerKeda: func's keda deployer's Deployment, Service and HTTPScaledObject
	// (KEDA HTTP add-on) serve the function.
	DeployerKeda = "keda"
)

// RebuildFromStatus says which commit a rebuild builds, and why.
type RebuildFromStatus struct {
	// Commit a rebuild builds: in full, or as the running image's revision label
	// abbreviates it until a rebuild looks it up in the followed reference's history.
	// Empty when no commit may be built (condition MiddlewareUpToDate says why).
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Commit string `json:"commit,omitempty"`

	// Source is where Commit comes from: Deployed (the commit the running image was
	// built from, status.deployment.revision) or Followed (the commit the followed
	// reference points at, status.git.observedCommit). Empty when no commit may be built.
	// +optional
	// +kubebuilder:validation:Enum=Deployed;Followed
	Source string `json:"source,omitempty"`

	// Policy is the rebuild-commit policy that chose Source: Deployed (the deployed
	// commit; the followed one when the running image names none), DeployedOnly (the
	// deployed commit, or no rebuild) or Followed (always the followed commit).
	// +kubebuilder:validation:Enum=Deployed;DeployedOnly;Followed
	Policy string `json:"policy"`

	// PolicySource is the setting that decided Policy: Annotation (the Function's
	// annotation functions.dev/rebuild-commit) or OperatorConfig (ConfigMap
	// func-operator-config, key rebuildCommit).
	// +optional
	// +kubebuilder:validation:Enum=Annotation;OperatorConfig
	PolicySource string `json:"policySource,omitempty"`
}

// Values of status.middleware.rebuildFrom.source.
const (
	// RebuildFromDeployed: a rebuild builds the commit the running image was built from.
	RebuildFromDeployed = "Deployed"
	// RebuildFromFollowed: a rebuild builds the commit the followed reference points at.
	RebuildFromFollowed = "Followed"
)

// Rebuild-commit policies: values of annotation functions.dev/rebuild-commit and of
// the ConfigMap's key rebuildCommit.
const (
	// RebuildCommitDeployed builds the commit the running image was built from (its
	// org.opencontainers.image.revision label), so that a middleware update changes
	// the middleware and nothing else; when the image names no commit, the commit the
	// followed reference points at, which status.middleware.rebuildFrom shows first.
	RebuildCommitDeployed = "Deployed"
	// RebuildCommitDeployedOnly builds the commit the running image was built from,
	// and nothing when the image names none.
	RebuildCommitDeployedOnly = "DeployedOnly"
	// RebuildCommitFollowed builds the commit the followed reference points at, with
	// whatever was pushed since the function was deployed.
	RebuildCommitFollowed = "Followed"
)

// AutoUpdateStatus says whether outdated middleware is rebuilt automatically.
type AutoUpdateStatus struct {
	// Enabled is true when the operator rebuilds the function on outdated middleware.
	Enabled bool `json:"enabled"`

	// Source is the setting that decided: Function (spec.autoUpdateMiddleware),
	// Annotation (annotation functions.dev/auto-update-middleware; or an invalid
	// settings annotation, which holds rebuilds: see condition SettingsValid) or
	// OperatorConfig (ConfigMap func-operator-config).
	// +optional
	// +kubebuilder:validation:Enum=Function;Annotation;OperatorConfig
	Source string `json:"source,omitempty"`
}

// Phases of a rebuild.
const (
	// BuildPhaseQueued: the rebuild waits for a slot of the fleet-wide budget.
	BuildPhaseQueued = "Queued"
	// BuildPhaseStarting: the operator is creating the build's Tekton objects.
	BuildPhaseStarting = "Starting"
	// BuildPhaseRunning: the build's PipelineRun runs.
	BuildPhaseRunning = "Running"
	// BuildPhaseSucceeded: the PipelineRun succeeded and deployed the new image.
	BuildPhaseSucceeded = "Succeeded"
	// BuildPhaseFailed: the build failed; it is retried after RetryAfter.
	BuildPhaseFailed = "Failed"
)

// The causes of a build (status.build.cause).
const (
	// BuildCauseMiddleware: the function runs an older middleware than func builds.
	BuildCauseMiddleware = "Middleware"
	// BuildCauseRequest: annotation functions.dev/rebuild-requested-at asked for it.
	BuildCauseRequest = "Request"
)

// BuildStatus is a rebuild of the function on the cluster, through Tekton.
type BuildStatus struct {
	// ID of the build. Every object the build creates carries it in the label
	// functions.dev/build-id.
	// +optional
	ID string `json:"id,omitempty"`

	// Phase of the build: Queued, Starting, Running, Succeeded or Failed.
	// +kubebuilder:validation:Enum=Queued;Starting;Running;Succeeded;Failed
	Phase string `json:"phase"`

	// PipelineRun is the name of the build's Tekton PipelineRun, once it exists.
	// +optional
	PipelineRun string `json:"pipelineRun,omitempty"`

	// QueuePosition is the build's place in the queue (1 is next) while it is Queued,
	// as of the last check of the Function.
	// +optional
	QueuePosition int32 `json:"queuePosition,omitempty"`

	// QueuedAt is when the build joined the queue; the queue is served oldest first,
	// fewest running builds per namespace first.
	// +optional
	QueuedAt *metav1.Time `json:"queuedAt,omitempty"`

	// StartTime is when the build was started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// CompletionTime is when the build ended.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// Commit of the repository the build clones.
	// +optional
	Commit string `json:"commit,omitempty"`

	// FromImage is the image the Knative Service ran when the build started.
	// +optional
	FromImage string `json:"fromImage,omitempty"`

	// FromMiddleware is the middleware version the function ran when the build started.
	// +optional
	FromMiddleware string `json:"fromMiddleware,omitempty"`

	// ToMiddleware is the middleware version the build is to bring.
	// +optional
	ToMiddleware string `json:"toMiddleware,omitempty"`

	// FailedTask is the pipeline task that failed, when the build failed.
	// +optional
	FailedTask string `json:"failedTask,omitempty"`

	// FailedStep is the step of FailedTask that failed, when known.
	// +optional
	FailedStep string `json:"failedStep,omitempty"`

	// Message says how the build ended, or why it failed.
	// +optional
	Message string `json:"message,omitempty"`

	// Failures counts the consecutive failed builds; a success resets it.
	// +optional
	Failures int32 `json:"failures,omitempty"`

	// RetryAfter is when a failed build may be retried (exponential backoff).
	// +optional
	RetryAfter *metav1.Time `json:"retryAfter,omitempty"`

	// Cause is why the build was started: Middleware, a newer middleware than the
	// function runs is available; Request, annotation functions.dev/rebuild-requested-at;
	// Source, a new commit changed the function and the source policy is on; Base,
	// the base the image was built on moved on.
	// +optional
	Cause string `json:"cause,omitempty"`

	// Method is how the build updates the function: Pipeline (func's Tekton
	// pipeline; also when empty) or Rebase (the running image rebased onto its new
	// run image by the operator, no pipeline).
	// +optional
	// +kubebuilder:validation:Enum=Pipeline;Rebase
	Method string `json:"method,omitempty"`

	// ToImage is the image a rebase pushed, by digest, once pushed: the build counts
	// once what func deployed runs it.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	ToImage string `json:"toImage,omitempty"`

	// ServiceUID is the UID of the Knative Service the build was started for. A build
	// never goes on over a Service that was replaced since: it is stopped.
	// +optional
	ServiceUID types.UID `json:"serviceUID,omitempty"`
}

// ServiceReadiness is the status of the Knative Service's Ready condition.
type ServiceReadiness string

// The values of ServiceReadiness.
const (
	ServiceReadyTrue    ServiceReadiness = "True"
	ServiceReadyFalse   ServiceReadiness = "False"
	ServiceReadyUnknown ServiceReadiness = "Unknown"
)

// IsTrue reports whether the Service is ready.
func (r ServiceReadiness) IsTrue() bool { return r == ServiceReadyTrue }

// UnmarshalJSON decodes the string, and the boolean that versions of the operator
// before func v0.50 wrote (true, or absent), so that Functions stored then still
// decode until their status is written again.
func (r *ServiceReadiness) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case "true":
		*r = ServiceReadyTrue
		return nil
	case "false":
		*r = ServiceReadyFalse
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("status.service.ready: %w", err)
	}
	*r = ServiceReadiness(s)
	return nil
}

// ServiceStatus is the Knative Service serving the function.
type ServiceStatus struct {
	// URL the function is served at.
	// +optional
	URL string `json:"url,omitempty"`

	// Ready mirrors the status of the Knative Service's Ready condition: True, False,
	// or Unknown (also while Knative has not observed the Service's latest spec). A
	// string, as the upstream operator's status.service.ready: func deploy (v0.50+)
	// reads every Function of the namespace into the upstream types.
	// +optional
	// +kubebuilder:validation:Enum=True;False;Unknown
	Ready ServiceReadiness `json:"ready,omitempty"`

	// LatestReadyRevision is the Knative Revision that last became ready.
	// +optional
	LatestReadyRevision string `json:"latestReadyRevision,omitempty"`

	// Subscriptions are the Knative Eventing Triggers that deliver events to the
	// function, when Knative Eventing is installed: the first MaxSubscriptions, by
	// broker, type and source.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	Subscriptions []Subscription `json:"subscriptions,omitempty"`

	// SubscriptionsOmitted is how many more Triggers deliver events to the function
	// than Subscriptions shows.
	// +optional
	SubscriptionsOmitted int32 `json:"subscriptionsOmitted,omitempty"`

	// UID of the Knative Service this Function is bound to: the one func deployed for
	// its function (label function.knative.dev/name), which no other Function of the
	// namespace is bound to. The operator describes, inspects and rebuilds only it.
	// +optional
	UID types.UID `json:"uid,omitempty"`
}

// MaxSubscriptions is how many Triggers status.service.subscriptions shows at most.
const MaxSubscriptions = 64

// Subscription is a Knative Eventing Trigger that delivers events to the function.
// Each value is cut to 256 bytes, ending in "...".
type Subscription struct {
	// Broker the Trigger receives events from.
	// +kubebuilder:validation:MaxLength=256
	Broker string `json:"broker"`
	// Source is the CloudEvents source attribute the Trigger filters on, if any.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Source string `json:"source,omitempty"`
	// Type is the CloudEvents type attribute the Trigger filters on, if any.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Type string `json:"type,omitempty"`
}

// HistoryEntry is one notable event in a function's life.
type HistoryEntry struct {
	// Time of the event.
	Time metav1.Time `json:"time"`

	// Message says what happened.
	Message string `json:"message"`
}

// FunctionList is a list of Functions.
//
// +kubebuilder:object:root=true
type FunctionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Function `json:"items"`
}

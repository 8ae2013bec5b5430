package v1alpha1

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"
)

// AnnotationDeployOnCommit ("true" or "false") turns the source policy on or off for
// this Function, instead of the ConfigMap's deployOnCommit: when on, a new commit of
// the followed reference that changes the function's directory is built and
// deployed. It has no spec field: one would be reset by every `func deploy`.
const AnnotationDeployOnCommit = "functions.dev/deploy-on-commit"

// BuildCauseSource: a new commit of the followed reference changed the function's
// directory, and the source policy is on (status.build.cause).
const BuildCauseSource = "Source"

// DeployOnCommitStatus is the source policy of a Function and where its source
// stands: the commit deployed against the one followed.
type DeployOnCommitStatus struct {
	// Enabled is true when a new commit that changes the function is built and deployed.
	Enabled bool `json:"enabled"`

	// Source is the setting that decided Enabled: Annotation (functions.dev/deploy-on-commit)
	// or OperatorConfig (ConfigMap func-operator-config, key deployOnCommit).
	// +optional
	// +kubebuilder:validation:Enum=Annotation;OperatorConfig
	Source string `json:"source,omitempty"`

	// DeployedCommit is the commit the running function was built from, in full: the
	// operator's last build, once it serves; else the running image's revision label;
	// else the commit followed when the image was first seen (status.deployment.followedAtDeploy).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	DeployedCommit string `json:"deployedCommit,omitempty"`

	// DeployedTree is the git tree of the function's directory at DeployedCommit, once
	// read: a new commit is compared with it without reading DeployedCommit again.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	DeployedTree string `json:"deployedTree,omitempty"`

	// UnknownFor names what DeployedCommit could not be read for ("<image>@<commit>"):
	// it is not looked up again until the function runs another image.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	UnknownFor string `json:"unknownFor,omitempty"`

	// FollowedCommit is the commit the followed reference points at (status.git.observedCommit).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	FollowedCommit string `json:"followedCommit,omitempty"`

	// FollowedTree is the git tree of the function's directory at FollowedCommit.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	FollowedTree string `json:"followedTree,omitempty"`

	// Changed is true when FollowedCommit changes the function's directory against
	// DeployedCommit: a source build of it is due.
	// +optional
	Changed bool `json:"changed,omitempty"`

	// LastBuildTime is when the last build for a new commit started; the next waits
	// for ConfigMap func-operator-config's minSourceBuildInterval after it.
	// +optional
	LastBuildTime *metav1.Time `json:"lastBuildTime,omitempty"`

	// LastBuildCommit is the commit the last build for a new commit built.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	LastBuildCommit string `json:"lastBuildCommit,omitempty"`

	// LastBuildTree is the git tree of the function's directory at LastBuildCommit.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	LastBuildTree string `json:"lastBuildTree,omitempty"`

	// PipelinesAsCode is true when the repository holds a .tekton/ directory at
	// FollowedCommit: Tekton Pipelines-as-Code may build the same push
	// (condition SourceDeployed says so).
	// +optional
	PipelinesAsCode bool `json:"pipelinesAsCode,omitempty"`
}

// FunctionConditionSourceDeployed says, while the source policy is on, whether the
// followed commit is deployed: True when the deployed commit holds the same function
// directory, False while a newer one waits to be built (the build's progress is in
// MiddlewareUpToDate and status.build), Unknown when the deployed commit cannot be
// told. Severity Info (Warning beside Pipelines-as-Code): it never gates Ready. Absent
// while the policy is off.
const FunctionConditionSourceDeployed apis.ConditionType = "SourceDeployed"

// Reasons of SourceDeployed.
const (
	// ReasonCommitDeployed: the function's directory at the followed commit is deployed.
	ReasonCommitDeployed = "CommitDeployed"
	// ReasonNewCommit: the followed commit changes the function's directory; its build
	// is due (status.build shows it queued, running or failed).
	ReasonNewCommit = "NewCommit"
	// ReasonBuildIntervalNotOver: the followed commit changes the function, and the
	// last build for a new commit started less than minSourceBuildInterval ago.
	ReasonBuildIntervalNotOver = "BuildIntervalNotOver"
	// ReasonCommitNotBuildable: the followed commit changes the function, and cannot be
	// built (the message says why: its func.yaml switches deployers, asks for what
	// func's pipeline cannot build...); severity Warning. The deployed commit's
	// middleware rebuilds go on.
	ReasonCommitNotBuildable = "CommitNotBuildable"
	// ReasonRebuildsHeld: an invalid settings annotation holds every rebuild
	// (condition SettingsValid says which).
	ReasonRebuildsHeld = "RebuildsHeld"
	// ReasonDeployedCommitUnknown: the commit the function runs cannot be told or read.
	ReasonDeployedCommitUnknown = "DeployedCommitUnknown"
	// ReasonPipelinesAsCode: the repository holds a .tekton/ directory: Tekton
	// Pipelines-as-Code may build and deploy the same pushes (severity Warning).
	ReasonPipelinesAsCode = "PipelinesAsCode"
)

// MarkSourceDeployed sets SourceDeployed with status, reason and message; severity
// Info, or Warning when Pipelines-as-Code is found beside the policy (pac), whose
// note then ends the message.
func (fs *FunctionStatus) MarkSourceDeployed(status corev1.ConditionStatus, reason string, pac bool, messageFormat string, messageA ...interface{}) {
	sev, msg := apis.ConditionSeverityInfo, fmt.Sprintf(messageFormat, messageA...)
	if pac {
		sev = apis.ConditionSeverityWarning
		msg += "; the repository holds a .tekton/ directory: if Tekton Pipelines-as-Code builds and deploys its pushes too, " +
			"two builds race to deploy each commit: turn one of them off for this function (docs/deploy-on-commit.md)"
	}
	fs.setSourceDeployed(status, reason, sev, msg)
}

func (fs *FunctionStatus) setSourceDeployed(status corev1.ConditionStatus, reason string, sev apis.ConditionSeverity, msg string) {
	functionCondSet.Manage(fs).SetCondition(apis.Condition{Type: FunctionConditionSourceDeployed, Status: status,
		Reason: reason, Message: msg, Severity: sev})
}

// MarkSourceNotBuildable records that the followed commit, which changes the
// function, cannot be built: SourceDeployed False, severity Warning.
func (fs *FunctionStatus) MarkSourceNotBuildable(messageFormat string, messageA ...interface{}) {
	fs.setSourceDeployed(corev1.ConditionFalse, ReasonCommitNotBuildable, apis.ConditionSeverityWarning, fmt.Sprintf(messageFormat, messageA...))
}

// ClearSourceDeployed removes SourceDeployed: the source policy is off.
func (fs *FunctionStatus) ClearSourceDeployed() {
	_ = functionCondSet.Manage(fs).ClearCondition(FunctionConditionSourceDeployed) // fails only for conditions of the set
}

// DeployOnCommit returns the source policy that applies, given the operator's
// ConfigMap default, and which setting decided it (status.deployOnCommit.source).
func (s Settings) DeployOnCommit(operatorDefault bool) (enabled bool, source string) {
	if s.DeployOnCommitSet != nil {
		return *s.DeployOnCommitSet, AutoUpdateSourceAnnotation
	}
	return operatorDefault, AutoUpdateSourceOperatorConfig
}

package v1alpha1

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"
)

// AnnotationBaseUpdates (Off, Report, Rebase or RebaseAndRebuild) is the base policy
// of this Function, instead of the ConfigMap's baseUpdates: what the operator does
// when the base the function's image was built on (a buildpacks run image, an s2i
// builder image) has moved on. It has no spec field: one would be reset by every
// `func deploy`.
const AnnotationBaseUpdates = "functions.dev/base-updates"

// Values of AnnotationBaseUpdates and of the ConfigMap's baseUpdates.
const (
	// BaseUpdatesOff: the base is not checked (status.base and BaseUpToDate absent).
	BaseUpdatesOff = "Off"
	// BaseUpdatesReport: the base is checked and reported; nothing is rebased or rebuilt.
	BaseUpdatesReport = "Report"
	// BaseUpdatesRebase: a buildpacks image whose run image moved is rebased in place;
	// an image that cannot be rebased (s2i) is reported only.
	BaseUpdatesRebase = "Rebase"
	// BaseUpdatesRebaseAndRebuild: as Rebase, and an image that cannot be rebased is
	// rebuilt from its deployed commit through func's pipeline.
	BaseUpdatesRebaseAndRebuild = "RebaseAndRebuild"
)

// ParseBaseUpdates returns the base policy v names, or an error naming the values.
func ParseBaseUpdates(v string) (string, error) {
	switch p := strings.TrimSpace(v); p {
	case BaseUpdatesOff, BaseUpdatesReport, BaseUpdatesRebase, BaseUpdatesRebaseAndRebuild:
		return p, nil
	}
	return "", fmt.Errorf("%s is not %s, %s, %s or %s", quoteValue(v),
		BaseUpdatesOff, BaseUpdatesReport, BaseUpdatesRebase, BaseUpdatesRebaseAndRebuild)
}

// BaseUpdates returns the base policy that applies, given the operator's ConfigMap
// default, and which setting decided it (status.base.policySource). An invalid
// annotation reports only: it never rebases what the ConfigMap would not have.
func (s Settings) BaseUpdates(operatorDefault string) (policy, source string) {
	switch {
	case s.BaseUpdatesInvalid:
		if operatorDefault == BaseUpdatesOff {
			return BaseUpdatesOff, AutoUpdateSourceOperatorConfig
		}
		return BaseUpdatesReport, AutoUpdateSourceAnnotation
	case s.BaseUpdatesSet != "":
		return s.BaseUpdatesSet, AutoUpdateSourceAnnotation
	}
	return operatorDefault, AutoUpdateSourceOperatorConfig
}

// BuildCauseBase: the base the function's image was built on moved on
// (status.build.cause): a buildpacks image is rebased in place (method Rebase), any
// other rebuilt from its deployed commit.
const BuildCauseBase = "Base"

// How a build of cause Base updates the function (status.build.method).
const (
	// BuildMethodPipeline: func's Tekton pipeline builds and deploys (every cause).
	BuildMethodPipeline = "Pipeline"
	// BuildMethodRebase: the operator rebases the running image onto the new run
	// image in-process, pushes it by digest and deploys it.
	BuildMethodRebase = "Rebase"
)

// Kinds of base (status.base.kind).
const (
	// BaseKindRunImage: a buildpacks image; its base is the run image the lifecycle
	// metadata label records.
	BaseKindRunImage = "RunImage"
	// BaseKindBuilder: an s2i image; its base is the builder image its
	// io.openshift.s2i.build.image label names.
	BaseKindBuilder = "Builder"
)

// BaseStatus compares the base the running image was built on with what the base's
// reference points to now.
type BaseStatus struct {
	// Kind is RunImage (buildpacks) or Builder (s2i); empty when the image tells no base.
	// +optional
	// +kubebuilder:validation:Enum=RunImage;Builder
	Kind string `json:"kind,omitempty"`

	// Image is the base's name as the running image records it: the run image
	// (lifecycle metadata runImage.image) or the s2i builder image.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`

	// Current is the base the running image was built on: the run image by digest as
	// the lifecycle metadata records it; for an s2i image, the builder by digest
	// while the image's layers start with the builder's current ones, else empty.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Current string `json:"current,omitempty"`

	// Available is what Image points to now, by digest.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Available string `json:"available,omitempty"`

	// ResolvedFrom is the reference Available was read from, when it is not Image: a
	// mirror (ConfigMap key baseImageMirrors, or the lifecycle metadata's mirrors).
	// +optional
	// +kubebuilder:validation:MaxLength=512
	ResolvedFrom string `json:"resolvedFrom,omitempty"`

	// Policy is the base policy that applies: Off, Report, Rebase or RebaseAndRebuild.
	// +optional
	Policy string `json:"policy,omitempty"`

	// PolicySource is the setting that decided Policy: Annotation
	// (functions.dev/base-updates) or OperatorConfig (ConfigMap key baseUpdates).
	// +optional
	PolicySource string `json:"policySource,omitempty"`

	// LastChecked is when Available was last read from the registry.
	// +optional
	LastChecked *metav1.Time `json:"lastChecked,omitempty"`

	// LastUpdate is when the last rebase or base rebuild started serving.
	// +optional
	LastUpdate *metav1.Time `json:"lastUpdate,omitempty"`
}

// FunctionConditionBaseUpToDate says whether the running image is on the newest base:
// True when it is, False when the base moved on (the reason says what the policy does
// about it), Unknown when the base cannot be told or read. Severity Info (Warning for
// an image label that cannot be believed, or a base registry that does not answer):
// it never gates Ready. Absent while the base policy is Off.
const FunctionConditionBaseUpToDate apis.ConditionType = "BaseUpToDate"

// Reasons of BaseUpToDate.
const (
	// ReasonBaseCurrent: the running image is on what its base's reference points to now.
	ReasonBaseCurrent = "BaseCurrent"
	// ReasonBaseOutdated: the base moved on, and the policy updates the function (a
	// rebase, or a rebuild; status.build shows it queued, running or failed).
	ReasonBaseOutdated = "BaseOutdated"
	// ReasonBaseReportOnly: the base moved on, and the policy only reports it (Report,
	// or Rebase for an image that can only be rebuilt).
	ReasonBaseReportOnly = "BaseReportOnly"
	// ReasonOutsideMaintenanceWindow: the base moved on; the update waits for the
	// maintenance window (ConfigMap key maintenanceWindow).
	ReasonOutsideMaintenanceWindow = "OutsideMaintenanceWindow"
	// ReasonBaseUnknown: the running image records no base the operator can read
	// (not built by buildpacks or s2i, or built without their labels).
	ReasonBaseUnknown = "BaseUnknown"
	// ReasonBaseLabelInvalid: the image's base label cannot be believed (it does not
	// parse, or names a top layer the image does not hold); severity Warning.
	ReasonBaseLabelInvalid = "BaseLabelInvalid"
	// ReasonBaseUnreachable: the base's registry (or every mirror) did not answer,
	// refused the credentials, or does not hold the base; severity Warning.
	ReasonBaseUnreachable = "BaseUnreachable"
)

// MarkBaseUpToDate sets BaseUpToDate True.
func (fs *FunctionStatus) MarkBaseUpToDate(messageFormat string, messageA ...interface{}) {
	fs.setBase(corev1.ConditionTrue, ReasonBaseCurrent, apis.ConditionSeverityInfo, fmt.Sprintf(messageFormat, messageA...))
}

// MarkBaseOutdated sets BaseUpToDate False with reason (ReasonBaseOutdated,
// ReasonBaseReportOnly, ReasonOutsideMaintenanceWindow, ReasonManagementDisabled,
// ReasonRebuildsHeld), severity Info.
func (fs *FunctionStatus) MarkBaseOutdated(reason, messageFormat string, messageA ...interface{}) {
	fs.setBase(corev1.ConditionFalse, reason, apis.ConditionSeverityInfo, fmt.Sprintf(messageFormat, messageA...))
}

// MarkBaseUnknown sets BaseUpToDate Unknown with reason: severity Info for
// ReasonBaseUnknown, Warning for a label that lies or a base that cannot be read.
func (fs *FunctionStatus) MarkBaseUnknown(reason, messageFormat string, messageA ...interface{}) {
	sev := apis.ConditionSeverityWarning
	if reason == ReasonBaseUnknown {
		sev = apis.ConditionSeverityInfo
	}
	fs.setBase(corev1.ConditionUnknown, reason, sev, fmt.Sprintf(messageFormat, messageA...))
}

// MarkBaseBlocked sets BaseUpToDate False with reason (the stall's:
// NamespaceNotOnboarded, RebuildNotPossible, DeployerMismatch...), severity Warning:
// an update is due and cannot start. It never gates Ready.
func (fs *FunctionStatus) MarkBaseBlocked(reason, messageFormat string, messageA ...interface{}) {
	fs.setBase(corev1.ConditionFalse, reason, apis.ConditionSeverityWarning, fmt.Sprintf(messageFormat, messageA...))
}

func (fs *FunctionStatus) setBase(status corev1.ConditionStatus, reason string, sev apis.ConditionSeverity, msg string) {
	functionCondSet.Manage(fs).SetCondition(apis.Condition{Type: FunctionConditionBaseUpToDate, Status: status,
		Reason: reason, Message: msg, Severity: sev})
}

// ClearBase removes BaseUpToDate and status.base: the base policy is Off.
func (fs *FunctionStatus) ClearBase() {
	fs.Base = nil
	_ = functionCondSet.Manage(fs).ClearCondition(FunctionConditionBaseUpToDate) // fails only for conditions of the set
}

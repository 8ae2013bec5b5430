package v1alpha1

import (
	"fmt"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"
)

// Condition types of a Function. Ready is derived from the other four.
const (
	// FunctionConditionReady is True when every other condition is True.
	FunctionConditionReady = apis.ConditionReady
	// FunctionConditionSourceReady is True when func.yaml was read from the repository and is valid.
	FunctionConditionSourceReady apis.ConditionType = "SourceReady"
	// FunctionConditionDeployed is True when the function's Knative Service exists.
	FunctionConditionDeployed apis.ConditionType = "Deployed"
	// FunctionConditionMiddlewareUpToDate is True when the running middleware is the newest available.
	FunctionConditionMiddlewareUpToDate apis.ConditionType = "MiddlewareUpToDate"
	// FunctionConditionServiceReady mirrors the Knative Service's Ready condition.
	FunctionConditionServiceReady apis.ConditionType = "ServiceReady"
)

// Reasons of the SourceReady condition.
const (
	ReasonSourceReady        = "FuncYamlRead"
	ReasonAuthSecretNotFound = "AuthSecretNotFound"
	ReasonAuthSecretInvalid  = "AuthSecretInvalid"
	ReasonGitCloneFailed     = "GitCloneFailed"
	ReasonBranchNotFound     = "BranchNotFound"
	ReasonPathNotFound       = "PathNotFound"
	ReasonFuncYamlNotFound   = "FuncYamlNotFound"
	ReasonFuncYamlInvalid    = "FuncYamlInvalid"
	ReasonUnsafeFuncYaml     = "UnsafeFuncYaml"
)

// Reasons of the Deployed and ServiceReady conditions.
const (
	ReasonDeployed = "Deployed"
	// ReasonNotDeployed says the function has no Knative Service: a normal state.
	ReasonNotDeployed = "NotDeployed"
	// ReasonKnativeServingNotInstalled says the cluster has no Knative Serving API.
	ReasonKnativeServingNotInstalled = "KnativeServingNotInstalled"
	// ReasonDescribeFailed says the Knative Service could not be read.
	ReasonDescribeFailed = "DescribeFailed"
	// ReasonServiceReady is the reason of a True ServiceReady.
	ReasonServiceReady = "ServiceReady"
	// ReasonServiceNotReady is the reason of a False ServiceReady whose Knative
	// condition carries none.
	ReasonServiceNotReady = "ServiceNotReady"
	// ReasonServiceReconciling says Knative has not yet observed the Service's latest spec.
	ReasonServiceReconciling = "ServiceReconciling"
)

// Reasons of the MiddlewareUpToDate condition.
const (
	ReasonMiddlewareUpToDate = "UpToDate"
	ReasonMiddlewareOutdated = "MiddlewareOutdated"
	// ReasonAutoUpdateDisabled is a True MiddlewareUpToDate whose update was skipped by policy.
	ReasonAutoUpdateDisabled     = "AutoUpdateDisabled"
	ReasonSourceManaged          = "SourceManagedMiddleware"
	ReasonRegistryUnreachable    = "RegistryUnreachable"
	ReasonImageInspectFailed     = "ImageInspectFailed"
	ReasonUnsupportedRuntime     = "UnsupportedRuntime"
	ReasonRegistrySecretNotFound = "RegistryAuthSecretNotFound"
	ReasonRegistrySecretInvalid  = "RegistryAuthSecretInvalid"
	// ReasonRebuildQueued is a False MiddlewareUpToDate whose rebuild waits for the budget.
	ReasonRebuildQueued = "RebuildQueued"
	// ReasonRebuilding is an Unknown MiddlewareUpToDate while a rebuild runs.
	ReasonRebuilding = "Rebuilding"
	// ReasonBuildFailed is a False MiddlewareUpToDate whose last rebuild failed.
	ReasonBuildFailed = "BuildFailed"
	// ReasonRebuildNotPossible is a False MiddlewareUpToDate that the operator cannot
	// rebuild: no Tekton on the cluster, or a function the func pipeline cannot build.
	ReasonRebuildNotPossible = "RebuildNotPossible"
)

// Reasons shared by several conditions.
const (
	// ReasonReconciling is the reason of a condition the operator has not decided yet.
	ReasonReconciling = "Reconciling"
	// ReasonSourceNotReady is the reason of a condition that waits for SourceReady.
	ReasonSourceNotReady = "SourceNotReady"
)

var functionCondSet = apis.NewLivingConditionSet(
	FunctionConditionSourceReady,
	FunctionConditionDeployed,
	FunctionConditionMiddlewareUpToDate,
	FunctionConditionServiceReady,
)

// Compile-time checks that Function is a Knative duck-typed, conditioned object.
var (
	_ apis.ConditionsAccessor = (*FunctionStatus)(nil)
	_ duckv1.KRShaped         = (*Function)(nil)
)

// GetConditionSet returns the set of conditions of a Function.
func (*Function) GetConditionSet() apis.ConditionSet { return functionCondSet }

// GetGroupVersionKind returns the GroupVersionKind of a Function.
func (*Function) GetGroupVersionKind() schema.GroupVersionKind {
	return SchemeGroupVersion.WithKind("Function")
}

// GetStatus returns the Function's duck-typed status.
func (f *Function) GetStatus() *duckv1.Status { return &f.Status.Status }

// GetCondition returns the condition of type t, or nil.
func (fs *FunctionStatus) GetCondition(t apis.ConditionType) *apis.Condition {
	return functionCondSet.Manage(fs).GetCondition(t)
}

// IsReady is true when the Ready condition is True.
func (fs *FunctionStatus) IsReady() bool {
	return functionCondSet.Manage(fs).IsHappy()
}

// InitializeConditions sets every condition that is not set yet to Unknown.
func (fs *FunctionStatus) InitializeConditions() {
	functionCondSet.Manage(fs).InitializeConditions()
}

// MarkSourceReady records that func.yaml was read at commit of branch.
func (fs *FunctionStatus) MarkSourceReady(branch, commit string) {
	functionCondSet.Manage(fs).MarkTrueWithReason(FunctionConditionSourceReady, ReasonSourceReady,
		"func.yaml read from branch %s at commit %s", branch, ShortCommit(commit))
}

// MarkSourceFailed records why the source could not be used.
func (fs *FunctionStatus) MarkSourceFailed(reason, messageFormat string, messageA ...interface{}) {
	functionCondSet.Manage(fs).MarkFalse(FunctionConditionSourceReady, reason, messageFormat, messageA...)
}

// MarkSourceUnknown records that the source is being checked.
func (fs *FunctionStatus) MarkSourceUnknown(reason, messageFormat string, messageA ...interface{}) {
	functionCondSet.Manage(fs).MarkUnknown(FunctionConditionSourceReady, reason, messageFormat, messageA...)
}

// MarkDeployed records that the function's Knative Service exists and runs image.
func (fs *FunctionStatus) MarkDeployed(service, image string) {
	functionCondSet.Manage(fs).MarkTrueWithReason(FunctionConditionDeployed, ReasonDeployed,
		"Knative Service %s runs %s", service, image)
}

// MarkNotDeployed records that the function has no Knative Service. The conditions
// that need one wait for it.
func (fs *FunctionStatus) MarkNotDeployed(service, namespace string) {
	functionCondSet.Manage(fs).MarkFalse(FunctionConditionDeployed, ReasonNotDeployed,
		"no Knative Service %q in namespace %q: deploy the function (func deploy)", service, namespace)
	fs.MarkServiceReadyUnknown(ReasonNotDeployed, "the function has no Knative Service")
	fs.MarkMiddlewareUnknown(ReasonNotDeployed, "the function has no Knative Service")
}

// MarkServiceReady records that the Knative Service is ready.
func (fs *FunctionStatus) MarkServiceReady(service string) {
	functionCondSet.Manage(fs).MarkTrueWithReason(FunctionConditionServiceReady, ReasonServiceReady,
		"Knative Service %s is ready", service)
}

// MarkServiceNotReady records why the Knative Service is not ready, in its own words.
func (fs *FunctionStatus) MarkServiceNotReady(reason, messageFormat string, messageA ...interface{}) {
	functionCondSet.Manage(fs).MarkFalse(FunctionConditionServiceReady, reason, messageFormat, messageA...)
}

// MarkDeployedUnknown records that whether the function is deployed is not known.
func (fs *FunctionStatus) MarkDeployedUnknown(reason, messageFormat string, messageA ...interface{}) {
	functionCondSet.Manage(fs).MarkUnknown(FunctionConditionDeployed, reason, messageFormat, messageA...)
}

// MarkMiddlewareUnknown records that whether the middleware is up to date is not known.
func (fs *FunctionStatus) MarkMiddlewareUnknown(reason, messageFormat string, messageA ...interface{}) {
	functionCondSet.Manage(fs).MarkUnknown(FunctionConditionMiddlewareUpToDate, reason, messageFormat, messageA...)
}

// MarkServiceReadyUnknown records that whether the Knative Service is ready is not known.
func (fs *FunctionStatus) MarkServiceReadyUnknown(reason, messageFormat string, messageA ...interface{}) {
	functionCondSet.Manage(fs).MarkUnknown(FunctionConditionServiceReady, reason, messageFormat, messageA...)
}

// MarkDownstreamWaitingForSource gives the conditions after SourceReady that were
// never decided the reason SourceNotReady; a decided one keeps its last observation.
func (fs *FunctionStatus) MarkDownstreamWaitingForSource() {
	const msg = "waiting for the function's source to be ready"
	for _, t := range []apis.ConditionType{FunctionConditionDeployed, FunctionConditionMiddlewareUpToDate, FunctionConditionServiceReady} {
		if c := fs.GetCondition(t); c == nil || (c.IsUnknown() && c.Reason == "") {
			functionCondSet.Manage(fs).MarkUnknown(t, ReasonSourceNotReady, msg)
		}
	}
}

// MarkMiddlewareUpToDate records that the function runs the newest middleware.
func (fs *FunctionStatus) MarkMiddlewareUpToDate(messageFormat string, messageA ...interface{}) {
	functionCondSet.Manage(fs).MarkTrueWithReason(FunctionConditionMiddlewareUpToDate, ReasonMiddlewareUpToDate, messageFormat, messageA...)
}

// MarkMiddlewareOutdated records that a rebuild would bring newer middleware.
func (fs *FunctionStatus) MarkMiddlewareOutdated(messageFormat string, messageA ...interface{}) {
	functionCondSet.Manage(fs).MarkFalse(FunctionConditionMiddlewareUpToDate, ReasonMiddlewareOutdated, messageFormat, messageA...)
}

// MarkMiddlewareTrueWithReason records a MiddlewareUpToDate that does not hold the
// function back, for a reason: an update skipped by policy, or middleware a rebuild
// cannot change.
func (fs *FunctionStatus) MarkMiddlewareTrueWithReason(reason, messageFormat string, messageA ...interface{}) {
	functionCondSet.Manage(fs).MarkTrueWithReason(FunctionConditionMiddlewareUpToDate, reason, messageFormat, messageA...)
}

// MarkRebuildQueued records an outdated function whose rebuild waits for a slot.
func (fs *FunctionStatus) MarkRebuildQueued(messageFormat string, messageA ...interface{}) {
	functionCondSet.Manage(fs).MarkFalse(FunctionConditionMiddlewareUpToDate, ReasonRebuildQueued, messageFormat, messageA...)
}

// MarkRebuilding records that a rebuild runs: whether the middleware is up to date is
// known when it ends.
func (fs *FunctionStatus) MarkRebuilding(messageFormat string, messageA ...interface{}) {
	functionCondSet.Manage(fs).MarkUnknown(FunctionConditionMiddlewareUpToDate, ReasonRebuilding, messageFormat, messageA...)
}

// MarkBuildFailed records that the last rebuild failed; the old image keeps serving.
func (fs *FunctionStatus) MarkBuildFailed(messageFormat string, messageA ...interface{}) {
	functionCondSet.Manage(fs).MarkFalse(FunctionConditionMiddlewareUpToDate, ReasonBuildFailed, messageFormat, messageA...)
}

// MarkRebuildNotPossible records outdated middleware the operator cannot rebuild.
func (fs *FunctionStatus) MarkRebuildNotPossible(messageFormat string, messageA ...interface{}) {
	functionCondSet.Manage(fs).MarkFalse(FunctionConditionMiddlewareUpToDate, ReasonRebuildNotPossible, messageFormat, messageA...)
}

// MaxHistory is how many entries status.history keeps.
const MaxHistory = 20

// AddHistory records a notable event, newest first, keeping at most MaxHistory entries.
func (fs *FunctionStatus) AddHistory(e HistoryEntry) {
	fs.History = append([]HistoryEntry{e}, fs.History...)
	if len(fs.History) > MaxHistory {
		fs.History = fs.History[:MaxHistory]
	}
}

// ShortCommit abbreviates a commit hash to 12 characters, for messages.
func ShortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

// String returns namespace/name of the Function, for logs and messages.
func (f *Function) String() string {
	return fmt.Sprintf("%s/%s", f.Namespace, f.Name)
}

// CleanPath returns spec.repository.path cleaned: "" for the repository root.
func (r Repository) CleanPath() string {
	p := strings.Trim(path.Clean(r.Path), "/")
	if p == "." {
		return ""
	}
	return p
}

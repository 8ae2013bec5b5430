package v1alpha1

import (
	"fmt"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"
)

// Condition types of a Function. Ready is derived from the four after it; Stalled and
// Reconciling are the kstatus conditions (sigs.k8s.io/cli-utils/pkg/kstatus), present
// only while True.
const (
	// FunctionConditionReady is True when every condition that gates it is True.
	FunctionConditionReady = apis.ConditionReady
	// FunctionConditionSourceReady is True when func.yaml was read from the repository and is valid.
	FunctionConditionSourceReady apis.ConditionType = "SourceReady"
	// FunctionConditionDeployed is True when the function's Knative Service exists.
	FunctionConditionDeployed apis.ConditionType = "Deployed"
	// FunctionConditionMiddlewareUpToDate is False when the function runs older
	// middleware than a rebuild with the linked func library would bring. It gates
	// Ready only when the operator is to rebuild it: with auto-update off, or for
	// middleware that lives in the function's own source, it has severity Info.
	FunctionConditionMiddlewareUpToDate apis.ConditionType = "MiddlewareUpToDate"
	// FunctionConditionServiceReady mirrors the Knative Service's Ready condition.
	FunctionConditionServiceReady apis.ConditionType = "ServiceReady"
	// FunctionConditionSourceReachable is False, with severity Warning, while the
	// repository does not answer (status.git.unreachableSince). It never gates Ready:
	// during an outage the last known good source stands, until outageGrace.
	FunctionConditionSourceReachable apis.ConditionType = "SourceReachable"
	// FunctionConditionRegistryReachable is False, with severity Warning, while the
	// registry of the running image does not answer
	// (status.middleware.registryUnreachableSince). Like SourceReachable, it never
	// gates Ready.
	FunctionConditionRegistryReachable apis.ConditionType = "RegistryReachable"
	// FunctionConditionSuspended is True, with severity Info, while spec.suspend is:
	// the other conditions are as the last check left them. It never gates Ready.
	FunctionConditionSuspended apis.ConditionType = "Suspended"
	// FunctionConditionStalled is True when only a change (of the Function, a Secret,
	// the repository, the image or the cluster) can make the Function Ready.
	FunctionConditionStalled apis.ConditionType = "Stalled"
	// FunctionConditionReconciling is True while a check or a rebuild is under way.
	FunctionConditionReconciling apis.ConditionType = "Reconciling"
)

// Reasons of the SourceReady condition.
const (
	ReasonFuncYamlRead       = "FuncYamlRead"
	ReasonAuthSecretNotFound = "AuthSecretNotFound"
	ReasonAuthSecretInvalid  = "AuthSecretInvalid"
	ReasonGitCloneFailed     = "GitCloneFailed"
	// ReasonBranchListFailed is listing the repository's branches failing (before any
	// clone): the host is unreachable, or refused the credentials.
	ReasonBranchListFailed = "BranchListFailed"
	// ReasonReachable is a True SourceReachable.
	ReasonReachable      = "Reachable"
	ReasonBranchNotFound = "BranchNotFound"
	// ReasonTagNotFound: spec.repository.ref.tag (or a revision refs/tags/<tag>) is not
	// in the repository, or no tag matches spec.repository.ref.semver.
	ReasonTagNotFound = "TagNotFound"
	// ReasonRevisionNotFound: spec.repository.revision, a plain name, is neither a tag
	// nor a branch of the repository.
	ReasonRevisionNotFound = "RevisionNotFound"
	// ReasonSemVerInvalid: spec.repository.ref.semver is not a semver range.
	ReasonSemVerInvalid = "SemVerInvalid"
	// ReasonCommitNotFound: the repository does not hold spec.repository.ref.commit, or
	// its server cannot fetch it by id.
	ReasonCommitNotFound   = "CommitNotFound"
	ReasonPathNotFound     = "PathNotFound"
	ReasonFuncYamlNotFound = "FuncYamlNotFound"
	ReasonFuncYamlInvalid  = "FuncYamlInvalid"
	ReasonUnsafeFuncYaml   = "UnsafeFuncYaml"
	// ReasonGitTimedOut: the git host did not finish listing the branches or the
	// clone within gitTimeout; counted as an outage.
	ReasonGitTimedOut = "GitTimedOut"
	// ReasonCloneTooLarge: the clone (or the branch listing) would transfer more than
	// cloneMaxBytes; it was stopped while it streamed.
	ReasonCloneTooLarge = "CloneTooLarge"
	// ReasonCloneTooManyFiles: the clone holds more objects than cloneMaxFiles.
	ReasonCloneTooManyFiles = "CloneTooManyFiles"
	// ReasonHostBusy: the Function's git host or registry is read by as many of
	// the operator's workers as one host may hold (half; one when it was slow); the
	// Function is checked again shortly. Not shown in conditions.
	ReasonHostBusy = "HostBusy"
	// ReasonHostNotAllowed: the operator's network policy refuses the host (or the
	// address it resolves to) of the repository or the image; nothing was sent to it.
	ReasonHostNotAllowed = "HostNotAllowed"
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
	// ReasonServiceNotFromFunc says the Knative Service named as the function was not
	// deployed by func for it (no label function.knative.dev/name): the operator does
	// not describe, inspect or rebuild it.
	ReasonServiceNotFromFunc = "ServiceNotFromFunc"
	// ReasonFunctionNameConflict says another Function of the namespace is bound to the
	// Knative Service of the same function name.
	ReasonFunctionNameConflict = "FunctionNameConflict"
)

// Reasons of the MiddlewareUpToDate condition.
const (
	ReasonUpToDate = "UpToDate"
	// ReasonMiddlewareOutdated is a False MiddlewareUpToDate whose rebuild is due.
	ReasonMiddlewareOutdated = "MiddlewareOutdated"
	// ReasonAutoUpdateDisabled is a False MiddlewareUpToDate of severity Info: outdated,
	// but auto-update is off, so it does not gate Ready.
	ReasonAutoUpdateDisabled = "AutoUpdateDisabled"
	// ReasonSourceManagedMiddleware is a MiddlewareUpToDate of middleware that lives in the
	// function's own source, which a rebuild cannot change: True, or False or Unknown
	// with severity Info.
	ReasonSourceManagedMiddleware = "SourceManagedMiddleware"
	// ReasonRegistryUnreachable: the registry did not answer, or answered 5xx; retried with backoff.
	ReasonRegistryUnreachable = "RegistryUnreachable"
	// ReasonRegistryAuthFailed: the registry refused the credentials of
	// spec.registry.authSecretRef (HTTP 401 or 403), or there were none.
	ReasonRegistryAuthFailed = "RegistryAuthFailed"
	// ReasonImageNotFound: the image the Knative Service runs is not in the registry.
	ReasonImageNotFound = "ImageNotFound"
	// ReasonImageInspectFailed: the image could not be read for another reason (a
	// malformed manifest or layer, an unexpected answer).
	ReasonImageInspectFailed = "ImageInspectFailed"
	// ReasonRegistryTimedOut: the registry did not finish answering within
	// registryTimeout; counted as an outage.
	ReasonRegistryTimedOut = "RegistryTimedOut"
	// ReasonImageTooLarge: reading the image would take more than the operator
	// allows: a manifest or config over inspectMaxMemory, or layers over
	// inspectMaxBytes once uncompressed.
	ReasonImageTooLarge = "ImageTooLarge"
	// ReasonImageDigestMismatch: the registry served a layer whose bytes are not
	// the digest its manifest names (a corrupt or a forged layer): no verdict is
	// drawn from it.
	ReasonImageDigestMismatch        = "ImageDigestMismatch"
	ReasonUnsupportedRuntime         = "UnsupportedRuntime"
	ReasonRegistryAuthSecretNotFound = "RegistryAuthSecretNotFound"
	ReasonRegistryAuthSecretInvalid  = "RegistryAuthSecretInvalid"
	// ReasonRebuildQueued is a False MiddlewareUpToDate whose rebuild waits for the budget.
	ReasonRebuildQueued = "RebuildQueued"
	// ReasonRebuilding is a False MiddlewareUpToDate while its rebuild runs.
	ReasonRebuilding = "Rebuilding"
	// ReasonBuildFailed is a False MiddlewareUpToDate whose last rebuild failed.
	ReasonBuildFailed = "BuildFailed"
	// ReasonRebuildNotPossible is a False MiddlewareUpToDate that the operator cannot
	// rebuild: no Tekton on the cluster, or a function the func pipeline cannot build.
	ReasonRebuildNotPossible = "RebuildNotPossible"
	// ReasonDeployerMismatch is a False MiddlewareUpToDate that the operator does not
	// rebuild because func's pipeline would deploy it with another deployer than the
	// one that deployed it (status.deployment.requestedDeployer against .deployer),
	// stranding the old deployer's resources beside the new ones (func's rule: only raw
	// to keda is a safe switch).
	ReasonDeployerMismatch = "DeployerMismatch"
	// ReasonNamespaceNotOnboarded is a False MiddlewareUpToDate that the operator may
	// not rebuild because the Function's namespace has not granted it (or the build
	// ServiceAccount) what a build needs: the message names the missing grant.
	ReasonNamespaceNotOnboarded = "NamespaceNotOnboarded"
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

// readyWithoutMiddleware derives Ready while MiddlewareUpToDate does not gate it.
var readyWithoutMiddleware = apis.NewLivingConditionSet(
	FunctionConditionSourceReady,
	FunctionConditionDeployed,
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

// InitializeConditions sets every condition that gates Ready and is not set yet to Unknown.
func (fs *FunctionStatus) InitializeConditions() {
	functionCondSet.Manage(fs).InitializeConditions()
}

// The MarkXxx helpers below change conditions only through these three, which derive
// Ready again afterwards.

func (fs *FunctionStatus) markTrue(t apis.ConditionType, reason, messageFormat string, messageA ...interface{}) {
	before := fs.GetCondition(FunctionConditionReady)
	functionCondSet.Manage(fs).MarkTrueWithReason(t, reason, messageFormat, messageA...)
	fs.recomputeReady(before)
}

func (fs *FunctionStatus) markFalse(t apis.ConditionType, reason, messageFormat string, messageA ...interface{}) {
	before := fs.GetCondition(FunctionConditionReady)
	functionCondSet.Manage(fs).MarkFalse(t, reason, messageFormat, messageA...)
	fs.recomputeReady(before)
}

func (fs *FunctionStatus) markUnknown(t apis.ConditionType, reason, messageFormat string, messageA ...interface{}) {
	before := fs.GetCondition(FunctionConditionReady)
	functionCondSet.Manage(fs).MarkUnknown(t, reason, messageFormat, messageA...)
	fs.recomputeReady(before)
}

// markMiddlewareInfo sets MiddlewareUpToDate so that it does not gate Ready: Knative
// severity Info, which the ConditionSet leaves out when it derives Ready.
func (fs *FunctionStatus) markMiddlewareInfo(status corev1.ConditionStatus, reason, messageFormat string, messageA ...interface{}) {
	before := fs.GetCondition(FunctionConditionReady)
	functionCondSet.Manage(fs).SetCondition(apis.Condition{
		Type: FunctionConditionMiddlewareUpToDate, Status: status, Reason: reason, Message: fmt.Sprintf(messageFormat, messageA...),
		Severity: apis.ConditionSeverityInfo,
	})
	fs.recomputeReady(before)
}

// recomputeReady derives Ready by the ConditionSet's own rule: True when every
// condition that gates it is True, else the newest False, else the newest Unknown.
// Marking Ready True makes a ConditionSet look at its dependents again. (Knative's
// MarkFalse and MarkUnknown also look at dependents of severity Info, and its
// ConditionSet counts an Info dependent as missing: a MiddlewareUpToDate of severity
// Info is therefore left to readyWithoutMiddleware.) before is Ready as it was before
// the mark: its transition time is kept when Ready ends up the same.
func (fs *FunctionStatus) recomputeReady(before *apis.Condition) {
	set := functionCondSet
	if c := fs.GetCondition(FunctionConditionMiddlewareUpToDate); c != nil && c.Severity == apis.ConditionSeverityInfo {
		set = readyWithoutMiddleware
	}
	set.Manage(fs).MarkTrue(FunctionConditionReady)
	if before == nil {
		return
	}
	// The mark may flip Ready and back: its transition time moves only on a real change.
	for i := range fs.Conditions {
		c := &fs.Conditions[i]
		if c.Type == FunctionConditionReady && c.Status == before.Status && c.Reason == before.Reason &&
			c.Message == before.Message && c.Severity == before.Severity {
			c.LastTransitionTime = before.LastTransitionTime
		}
	}
}

// MarkSourceReady records that func.yaml was read at commit of branch; an empty
// branch is a tag or a fixed commit (ref describes it).
func (fs *FunctionStatus) MarkSourceReady(branch, commit string) {
	fs.MarkSourceReadyAt("branch "+branch, commit)
}

// MarkSourceReadyAt records that func.yaml was read at commit of ref, a reference as
// messages show it ("branch main", "tag v1.2.3").
func (fs *FunctionStatus) MarkSourceReadyAt(ref, commit string) {
	fs.markTrue(FunctionConditionSourceReady, ReasonFuncYamlRead, "func.yaml read from %s at commit %s", ref, ShortCommit(commit))
}

// MarkSourceFailed records why the source could not be used.
func (fs *FunctionStatus) MarkSourceFailed(reason, messageFormat string, messageA ...interface{}) {
	fs.markFalse(FunctionConditionSourceReady, reason, messageFormat, messageA...)
}

// MarkSourceUnknown records that the source is being checked.
func (fs *FunctionStatus) MarkSourceUnknown(reason, messageFormat string, messageA ...interface{}) {
	fs.markUnknown(FunctionConditionSourceReady, reason, messageFormat, messageA...)
}

// MarkDeployed records that what deployed the function (workload: "Knative Service
// hello", "Deployment hello of func's raw deployer") exists and runs image; note, when
// not empty, adds what else the operator noticed of the deployment.
func (fs *FunctionStatus) MarkDeployed(workload, image, note string) {
	if note != "" {
		fs.markTrue(FunctionConditionDeployed, ReasonDeployed, "%s runs %s; %s", workload, image, note)
		return
	}
	fs.markTrue(FunctionConditionDeployed, ReasonDeployed, "%s runs %s", workload, image)
}

// MarkNotDeployed records that none of func's deployers deployed the function: no
// Knative Service, and no Deployment and Service of func's raw or keda deployer. The
// conditions that need one wait for it.
func (fs *FunctionStatus) MarkNotDeployed(function, namespace string) {
	fs.markFalse(FunctionConditionDeployed, ReasonNotDeployed,
		"no Knative Service, and no Deployment and Service of func's raw or keda deployer, named %q in namespace %q: deploy the function (func deploy)", function, namespace)
	fs.MarkServiceReadyUnknown(ReasonNotDeployed, "the function is not deployed")
	fs.MarkMiddlewareUnknown(ReasonNotDeployed, "the function is not deployed")
}

// MarkNotBound records why the Function may not act on what func deployed under its
// function's name (reason ServiceNotFromFunc or FunctionNameConflict). The conditions
// that need it wait.
func (fs *FunctionStatus) MarkNotBound(reason, messageFormat string, messageA ...interface{}) {
	fs.markFalse(FunctionConditionDeployed, reason, messageFormat, messageA...)
	fs.MarkServiceReadyUnknown(reason, "what is deployed under the function's name is not this Function's")
	fs.MarkMiddlewareUnknown(reason, "what is deployed under the function's name is not this Function's")
}

// MarkServiceReady records that what serves the function is ready, in the words of
// messageFormat ("Knative Service hello is ready").
func (fs *FunctionStatus) MarkServiceReady(messageFormat string, messageA ...interface{}) {
	fs.markTrue(FunctionConditionServiceReady, ReasonServiceReady, messageFormat, messageA...)
}

// MarkServiceNotReady records why the Knative Service is not ready, in its own words.
func (fs *FunctionStatus) MarkServiceNotReady(reason, messageFormat string, messageA ...interface{}) {
	fs.markFalse(FunctionConditionServiceReady, reason, messageFormat, messageA...)
}

// MarkDeployedUnknown records that whether the function is deployed is not known.
func (fs *FunctionStatus) MarkDeployedUnknown(reason, messageFormat string, messageA ...interface{}) {
	fs.markUnknown(FunctionConditionDeployed, reason, messageFormat, messageA...)
}

// MarkMiddlewareUnknown records that whether the middleware is up to date is not known.
func (fs *FunctionStatus) MarkMiddlewareUnknown(reason, messageFormat string, messageA ...interface{}) {
	fs.markUnknown(FunctionConditionMiddlewareUpToDate, reason, messageFormat, messageA...)
}

// MarkServiceReadyUnknown records that whether the Knative Service is ready is not known.
func (fs *FunctionStatus) MarkServiceReadyUnknown(reason, messageFormat string, messageA ...interface{}) {
	fs.markUnknown(FunctionConditionServiceReady, reason, messageFormat, messageA...)
}

// MarkDownstreamWaitingForSource gives the conditions after SourceReady that were
// never decided the reason SourceNotReady; a decided one keeps its last observation.
func (fs *FunctionStatus) MarkDownstreamWaitingForSource() {
	const msg = "waiting for the function's source to be ready"
	for _, t := range []apis.ConditionType{FunctionConditionDeployed, FunctionConditionMiddlewareUpToDate, FunctionConditionServiceReady} {
		if c := fs.GetCondition(t); c == nil || (c.IsUnknown() && c.Reason == "") {
			fs.markUnknown(t, ReasonSourceNotReady, msg)
		}
	}
}

// MarkMiddlewareUpToDate records that the function runs the newest middleware.
func (fs *FunctionStatus) MarkMiddlewareUpToDate(messageFormat string, messageA ...interface{}) {
	fs.markTrue(FunctionConditionMiddlewareUpToDate, ReasonUpToDate, messageFormat, messageA...)
}

// MarkMiddlewareOutdated records that a rebuild would bring newer middleware, and is due.
func (fs *FunctionStatus) MarkMiddlewareOutdated(messageFormat string, messageA ...interface{}) {
	fs.markFalse(FunctionConditionMiddlewareUpToDate, ReasonMiddlewareOutdated, messageFormat, messageA...)
}

// MarkAutoUpdateDisabled records outdated middleware that is not rebuilt because
// auto-update is off: False, with severity Info, so Ready does not depend on it.
func (fs *FunctionStatus) MarkAutoUpdateDisabled(messageFormat string, messageA ...interface{}) {
	fs.markMiddlewareInfo(corev1.ConditionFalse, ReasonAutoUpdateDisabled, messageFormat, messageA...)
}

// MarkSourceManagedUpToDate records middleware of the function's own source that is
// not older than what the linked func library pins, or that the library pins none of.
func (fs *FunctionStatus) MarkSourceManagedUpToDate(messageFormat string, messageA ...interface{}) {
	fs.markTrue(FunctionConditionMiddlewareUpToDate, ReasonSourceManagedMiddleware, messageFormat, messageA...)
}

// MarkSourceManagedOutdated records middleware of the function's own source that is
// older than what the linked func library pins. A rebuild cannot change it, so it
// does not gate Ready (severity Info): the function's owner updates the source.
func (fs *FunctionStatus) MarkSourceManagedOutdated(messageFormat string, messageA ...interface{}) {
	fs.markMiddlewareInfo(corev1.ConditionFalse, ReasonSourceManagedMiddleware, messageFormat, messageA...)
}

// MarkSourceManagedUnknown records middleware of the function's own source whose
// version could not be read (severity Info: it does not gate Ready).
func (fs *FunctionStatus) MarkSourceManagedUnknown(messageFormat string, messageA ...interface{}) {
	fs.markMiddlewareInfo(corev1.ConditionUnknown, ReasonSourceManagedMiddleware, messageFormat, messageA...)
}

// Queued reports whether the build waits for a slot of the fleet budget (nil: no build).
func (b *BuildStatus) Queued() bool { return b != nil && b.Phase == BuildPhaseQueued }

// InFlight reports whether the build runs: its objects are being created (Starting) or
// its PipelineRun runs (Running).
func (b *BuildStatus) InFlight() bool {
	return b != nil && (b.Phase == BuildPhaseStarting || b.Phase == BuildPhaseRunning)
}

// RebuildRecorded reports whether the last build's success is recorded: its image was
// seen serving, and status.middleware.lastRebuild is its completion time.
func (fs *FunctionStatus) RebuildRecorded() bool {
	b, mw := fs.Build, fs.Middleware
	return b != nil && mw != nil && mw.LastRebuild != nil && b.CompletionTime != nil && mw.LastRebuild.Equal(b.CompletionTime)
}

// Pending reports whether the build has not ended: queued or in flight.
func (b *BuildStatus) Pending() bool { return b.Queued() || b.InFlight() }

// MarkRebuildQueued records an outdated function whose rebuild waits for a slot.
func (fs *FunctionStatus) MarkRebuildQueued(messageFormat string, messageA ...interface{}) {
	fs.markFalse(FunctionConditionMiddlewareUpToDate, ReasonRebuildQueued, messageFormat, messageA...)
}

// MarkRebuilding records that a rebuild of an outdated function runs: the middleware
// is still the old one until the new image serves.
func (fs *FunctionStatus) MarkRebuilding(messageFormat string, messageA ...interface{}) {
	fs.markFalse(FunctionConditionMiddlewareUpToDate, ReasonRebuilding, messageFormat, messageA...)
}

// MarkBuildFailed records that the last rebuild failed; the old image keeps serving.
func (fs *FunctionStatus) MarkBuildFailed(messageFormat string, messageA ...interface{}) {
	fs.markFalse(FunctionConditionMiddlewareUpToDate, ReasonBuildFailed, messageFormat, messageA...)
}

// MarkDeployerMismatch records outdated middleware the operator does not rebuild: the
// rebuild would switch deployers and strand the old one's resources.
func (fs *FunctionStatus) MarkDeployerMismatch(messageFormat string, messageA ...interface{}) {
	fs.markFalse(FunctionConditionMiddlewareUpToDate, ReasonDeployerMismatch, messageFormat, messageA...)
}

// MarkRebuildNotPossible records outdated middleware the operator cannot rebuild.
func (fs *FunctionStatus) MarkRebuildNotPossible(messageFormat string, messageA ...interface{}) {
	fs.markFalse(FunctionConditionMiddlewareUpToDate, ReasonRebuildNotPossible, messageFormat, messageA...)
}

// MarkNamespaceNotOnboarded sets MiddlewareUpToDate False: the function's namespace
// has not granted what a rebuild needs.
func (fs *FunctionStatus) MarkNamespaceNotOnboarded(messageFormat string, messageA ...interface{}) {
	fs.markFalse(FunctionConditionMiddlewareUpToDate, ReasonNamespaceNotOnboarded, messageFormat, messageA...)
}

// MiddlewareOutdated reports whether the function runs older middleware than a
// rebuild would bring, whether or not a rebuild is allowed or under way.
func (fs *FunctionStatus) MiddlewareOutdated() bool {
	c := fs.GetCondition(FunctionConditionMiddlewareUpToDate)
	return c != nil && c.IsFalse()
}

// MarkSourceReachable records that the repository answered.
func (fs *FunctionStatus) MarkSourceReachable() {
	functionCondSet.Manage(fs).SetCondition(apis.Condition{Type: FunctionConditionSourceReachable, Status: corev1.ConditionTrue,
		Reason: ReasonReachable})
}

// MarkSourceUnreachable records that the repository does not answer. The condition
// has severity Warning and is not part of the set: Ready does not read it.
func (fs *FunctionStatus) MarkSourceUnreachable(reason, messageFormat string, messageA ...interface{}) {
	functionCondSet.Manage(fs).SetCondition(apis.Condition{Type: FunctionConditionSourceReachable, Status: corev1.ConditionFalse,
		Reason: reason, Message: fmt.Sprintf(messageFormat, messageA...), Severity: apis.ConditionSeverityWarning})
}

// MarkRegistryReachable records that the registry answered.
func (fs *FunctionStatus) MarkRegistryReachable() {
	functionCondSet.Manage(fs).SetCondition(apis.Condition{Type: FunctionConditionRegistryReachable, Status: corev1.ConditionTrue,
		Reason: ReasonReachable})
}

// MarkRegistryUnreachable records that the registry does not let the image be read
// (reason ReasonRegistryUnreachable or ReasonRegistryAuthFailed), with severity
// Warning; Ready does not read it.
func (fs *FunctionStatus) MarkRegistryUnreachable(reason, messageFormat string, messageA ...interface{}) {
	functionCondSet.Manage(fs).SetCondition(apis.Condition{Type: FunctionConditionRegistryReachable, Status: corev1.ConditionFalse,
		Reason: reason, Message: fmt.Sprintf(messageFormat, messageA...), Severity: apis.ConditionSeverityWarning})
}

// MarkStalled records that only a change can make the Function Ready, for kstatus
// (which reports it Failed). Reconciling is cleared: the two are never True together.
func (fs *FunctionStatus) MarkStalled(reason, messageFormat string, messageA ...interface{}) {
	fs.setProgress(FunctionConditionStalled, reason, fmt.Sprintf(messageFormat, messageA...))
}

// ReasonSuspended is a True Suspended.
const ReasonSuspended = "Suspended"

// MarkSuspended records that spec.suspend stops the checks and rebuilds: Suspended
// True, severity Info; Stalled and Reconciling go, as nothing is under way.
func (fs *FunctionStatus) MarkSuspended() { fs.MarkSuspendedBy("spec.suspend") }

// MarkSuspendedBy is MarkSuspended for a suspension decided by from (Settings.SuspendFrom:
// spec.suspend, or annotation functions.dev/suspend).
func (fs *FunctionStatus) MarkSuspendedBy(from string) {
	fs.ClearProgress()
	functionCondSet.Manage(fs).SetCondition(apis.Condition{
		Type: FunctionConditionSuspended, Status: corev1.ConditionTrue, Reason: ReasonSuspended,
		Message:  from + " is true: the function is not checked or rebuilt; the other conditions are as the last check left them",
		Severity: apis.ConditionSeverityInfo,
	})
}

// ClearSuspended removes Suspended.
func (fs *FunctionStatus) ClearSuspended() {
	_ = functionCondSet.Manage(fs).ClearCondition(FunctionConditionSuspended) // fails only for conditions of the set
}

// MarkReconciling records that a check or a rebuild is under way, for kstatus (which
// reports it InProgress). Stalled is cleared.
func (fs *FunctionStatus) MarkReconciling(reason, messageFormat string, messageA ...interface{}) {
	fs.setProgress(FunctionConditionReconciling, reason, fmt.Sprintf(messageFormat, messageA...))
}

// ClearProgress removes Stalled and Reconciling: nothing is under way and nothing stalls.
func (fs *FunctionStatus) ClearProgress() {
	fs.setProgress("", "", "")
}

// setProgress leaves at most the kstatus condition t, True; "" removes both. They are
// not part of the set, so their severity is Info and Ready ignores them.
func (fs *FunctionStatus) setProgress(t apis.ConditionType, reason, message string) {
	m := functionCondSet.Manage(fs)
	for _, other := range []apis.ConditionType{FunctionConditionStalled, FunctionConditionReconciling} {
		if other != t {
			_ = m.ClearCondition(other) // fails only for conditions of the set
		}
	}
	if t != "" {
		m.SetCondition(apis.Condition{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: message,
			Severity: apis.ConditionSeverityInfo})
	}
}

// MaxHistory is how many entries status.history keeps.
const MaxHistory = 20

// AddHistory records a notable event, newest first, keeping at most MaxHistory entries.
func (fs *FunctionStatus) AddHistory(e HistoryEntry) {
	// Newest first: an entry of an earlier time (a deploy func recorded before the
	// operator saw it) goes after the newer ones.
	i := 0
	for i < len(fs.History) && fs.History[i].Time.After(e.Time.Time) {
		i++
	}
	fs.History = slices.Insert(fs.History, i, e)
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

// Reference is the revision spec.repository follows by name: revision as written (a
// branch or a tag, or a full ref under refs/heads/ or refs/tags/), or branch as its
// full ref refs/heads/<branch>, so that a branch is never taken for a tag of the same
// name; empty when neither is set (the remote's default branch, or ref). Every reader
// goes through it, so that a Function written with either name reads the same.
func (r Repository) Reference() string {
	if r.Revision != "" {
		return r.Revision
	}
	if r.Branch != "" {
		return "refs/heads/" + r.Branch
	}
	return ""
}

// Directory is the function's directory as written: dir (the upstream operator's
// newer name), else path. CleanPath is what readers use.
func (r Repository) Directory() string {
	if r.Dir != "" {
		return r.Dir
	}
	return r.Path
}

// CleanPath returns the function's directory (Directory: spec.repository.dir or path)
// cleaned: "" for the repository root.
func (r Repository) CleanPath() string {
	p := strings.Trim(path.Clean(r.Directory()), "/")
	if p == "." {
		return ""
	}
	return p
}

package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"knative.dev/pkg/apis"
)

// FunctionConditionManagementDisabled is True, with severity Info, while the
// function's func.yaml (at the followed commit) sets deploy.managementDisabled: its
// owner asked (`func deploy --management-disabled`) that no operator manage it. The
// operator stands down: no rebuild of any cause, and a running build is followed to
// its end; the status is still read. It never gates Ready. Absent otherwise.
const FunctionConditionManagementDisabled apis.ConditionType = "ManagementDisabled"

// ReasonManagementDisabled is a True ManagementDisabled, and the reason of a False
// MiddlewareUpToDate of severity Info while the operator stands down.
const ReasonManagementDisabled = "ManagementDisabled"

// managementDisabledMessage says what ManagementDisabled means, for its message.
const managementDisabledMessage = "func.yaml sets deploy.managementDisabled (func deploy --management-disabled): " +
	"the operator stands down: it rebuilds nothing, for any cause, and reads the status only; " +
	"the Function is kept (docs/deploy-on-commit.md)"

// MarkManagementDisabled records func.yaml's deploy.managementDisabled, or removes
// the condition when disabled is false.
func (fs *FunctionStatus) MarkManagementDisabled(disabled bool) {
	m := functionCondSet.Manage(fs)
	if !disabled {
		_ = m.ClearCondition(FunctionConditionManagementDisabled) // fails only for conditions of the set
		return
	}
	m.SetCondition(apis.Condition{Type: FunctionConditionManagementDisabled, Status: corev1.ConditionTrue,
		Reason: ReasonManagementDisabled, Message: managementDisabledMessage, Severity: apis.ConditionSeverityInfo})
}

// ManagementDisabled reports whether func.yaml, as last read, disables the
// operator's management of the function.
func (fs *FunctionStatus) ManagementDisabled() bool {
	c := fs.GetCondition(FunctionConditionManagementDisabled)
	return c != nil && c.IsTrue()
}

// MarkMiddlewareNotManaged records outdated middleware the operator does not rebuild
// because func.yaml disables its management: False, with severity Info, so Ready
// does not depend on it.
func (fs *FunctionStatus) MarkMiddlewareNotManaged(messageFormat string, messageA ...interface{}) {
	fs.markMiddlewareInfo(corev1.ConditionFalse, ReasonManagementDisabled, messageFormat, messageA...)
}

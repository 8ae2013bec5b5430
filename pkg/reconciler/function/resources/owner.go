package resources

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fnops/func-operator/api/v1alpha1"
)

// ControlledBy reports whether fn is o's controller, as the API proxy makes it of
// every object of a build (Owner). Whoever may create objects in the
// namespace may write such a reference too: it tells the operator's objects from
// others only together with a build ID the status recorded.
func ControlledBy(o metav1.Object, fn *v1alpha1.Function) bool {
	ref := metav1.GetControllerOfNoCopy(o)
	return fn.UID != "" && ref != nil && ref.UID == fn.UID && IsFunctionRef(*ref)
}

// OwnedBy reports whether fn owns o.
func OwnedBy(o metav1.Object, fn *v1alpha1.Function) bool {
	for _, ref := range o.GetOwnerReferences() {
		if ref.UID == fn.UID && ref.Kind == FunctionKind {
			return true
		}
	}
	return false
}

// FunctionKind is the kind of a Function, as owner references name it.
const FunctionKind = "Function"

// IsFunctionRef reports whether ref names a Function, of any version of its group.
func IsFunctionRef(ref metav1.OwnerReference) bool {
	return ref.Kind == FunctionKind && strings.HasPrefix(ref.APIVersion, v1alpha1.SchemeGroupVersion.Group+"/")
}

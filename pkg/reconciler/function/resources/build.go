// Package resources builds the Kubernetes objects and requests of a Function's
// rebuild, without a cluster: pure functions of their inputs, tested without a
// control plane. It imports the API and pkg/funclib's request types only, never a
// client (controller-runtime, client-go) nor the Reconciler that calls it (depguard
// rule resources).
package resources

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/funclib"
)

// Labels the operator puts on every object a rebuild creates.
const (
	// LabelFunction is the name of the Function object the build is for.
	LabelFunction = "functions.dev/function"
	// LabelBuildID is the ID of the build (status.build.id).
	LabelBuildID = funclib.LabelBuildID
	// LabelManagedBy marks the objects of func-operator.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// LabelServiceUID is on a build's objects: the UID of the Knative Service the build
	// was started for, for whoever reads them. The operator checks status.build's
	// serviceUID, which it recorded itself: a label may be written by any tenant.
	LabelServiceUID = "functions.dev/service-uid"
	// ManagedBy is the value of LabelManagedBy.
	ManagedBy = "func-operator"
)

// BuildLabels are the labels of the objects of build id of fn.
func BuildLabels(fn *v1alpha1.Function, id string) map[string]string {
	return map[string]string{
		LabelFunction:  fn.Name,
		LabelBuildID:   id,
		LabelManagedBy: ManagedBy,
	}
}

// BuildRequest is the func library request that rebuilds fn from commit, the one the
// rebuild builds (status.middleware.rebuildFrom), with m, func.yaml at that commit.
func BuildRequest(fn *v1alpha1.Function, id, commit string, m funclib.Metadata, builderImages map[string]string) funclib.BuildRequest {
	builder := funclib.BuilderOf(m)
	return funclib.BuildRequest{
		Namespace:    fn.Namespace,
		Function:     m,
		GitURL:       fn.Spec.Repository.URL,
		Revision:     commit,
		ContextDir:   fn.Spec.Repository.CleanPath(),
		Labels:       BuildLabels(fn, id),
		ID:           id,
		Owner:        Owner(fn),
		BuilderImage: builderImages[builder+"/"+m.Runtime],
	}
}

// Owner is the owner reference of every object a build of fn creates: the cluster's
// garbage collector deletes them with fn. It does not block fn's deletion.
func Owner(fn *v1alpha1.Function) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "Function", Name: fn.Name, UID: fn.UID, Controller: ptr.To(true),
	}
}

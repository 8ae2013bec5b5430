// Package resources builds the Kubernetes objects and requests of a Function's rebuild, without a cluster.
package resources

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/funclib"
)

// Labels the operator puts on every object a rebuild creates.
const (
	// LabelFunction is the name of the Function object the build is for.
	LabelFunction = "functions.dev/function"
	// LabelBuildID is the ID of the build (status.build.id).
	LabelBuildID = "functions.dev/build-id"
	// LabelManagedBy marks the objects of func-operator.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// LabelServiceUID is on a build's objects: the UID of the Knative Service the build
	// was started for, so that an adopted build is checked against it too.
	LabelServiceUID = "functions.dev/service-uid"
	// ManagedBy is the value of LabelManagedBy.
	ManagedBy = "func-operator"
)

// PipelineClusterRole is the ClusterRole (config/200-pipeline-clusterrole.yaml) that
// lets a build PipelineRun deploy the Knative Service, and nothing more.
const PipelineClusterRole = "func-operator-pipeline"

// PipelineRoleBinding names the RoleBinding, one per function namespace, that grants
// PipelineClusterRole to the ServiceAccount the PipelineRuns run as.
const PipelineRoleBinding = "func-operator-pipeline"

// BuildLabels are the labels of the objects of build id of fn.
func BuildLabels(fn *v1alpha1.Function, id string) map[string]string {
	return map[string]string{
		LabelFunction:  fn.Name,
		LabelBuildID:   id,
		LabelManagedBy: ManagedBy,
	}
}

// OwnerReference is a reference to fn that keeps an object alive while fn exists.
// It is not a controller reference: an object shared by the Functions of a namespace
// carries one per Function, and is collected when the last one goes.
func OwnerReference(fn *v1alpha1.Function) metav1.OwnerReference {
	f := false
	return metav1.OwnerReference{
		APIVersion:         v1alpha1.SchemeGroupVersion.String(),
		Kind:               "Function",
		Name:               fn.Name,
		UID:                fn.UID,
		Controller:         &f,
		BlockOwnerDeletion: &f,
	}
}

// RoleBinding is the namespace's pipeline RoleBinding, owned by fn (among others).
func RoleBinding(fn *v1alpha1.Function, serviceAccount string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       fn.Namespace,
			Name:            PipelineRoleBinding,
			Labels:          map[string]string{LabelManagedBy: ManagedBy},
			OwnerReferences: []metav1.OwnerReference{OwnerReference(fn)},
		},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: PipelineClusterRole},
		Subjects: []rbacv1.Subject{{
			Kind: rbacv1.ServiceAccountKind, Namespace: fn.Namespace, Name: serviceAccount,
		}},
	}
}

// HasOwner reports whether refs has a reference to fn.
func HasOwner(refs []metav1.OwnerReference, fn *v1alpha1.Function) bool {
	for _, r := range refs {
		if r.UID == fn.UID {
			return true
		}
	}
	return false
}

// BuildRequest is the func library request that rebuilds fn from commit, the one it observed.
func BuildRequest(fn *v1alpha1.Function, id, commit string, m funclib.Metadata, builderImages map[string]string) funclib.BuildRequest {
	builder := funclib.BuilderOf(m)
	return funclib.BuildRequest{
		Namespace:    fn.Namespace,
		Function:     m,
		GitURL:       fn.Spec.Repository.URL,
		Revision:     commit,
		ContextDir:   fn.Spec.Repository.CleanPath(),
		Labels:       BuildLabels(fn, id),
		BuilderImage: builderImages[builder+"/"+m.Runtime],
	}
}

package function

import (
	"context"
	"testing"

	"github.com/fnops/func-operator/test/envtest"

	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fnops/func-operator/pkg/rebuild"
	"github.com/fnops/func-operator/pkg/reconciler/function/resources"
)

// TestReconciler_Finalize: as the operator, the build objects of a deleted Function
// are deleted in a namespace that onboarded it; in one that did not, where the
// operator may list PipelineRuns (its watch) but delete nothing, and may not even list
// the rest, finalizing ends without an error (it would be retried forever) and
// touches nothing.
func TestReconciler_Finalize(t *testing.T) {
	op := asOperator(t)
	ctx := context.Background()
	labels := map[string]string{resources.LabelFunction: "gone", resources.LabelManagedBy: resources.ManagedBy}
	for _, tt := range []struct {
		name        string
		onboarded   bool
		wantDeleted bool
	}{
		{name: "onboarded: deleted", onboarded: true, wantDeleted: true},
		{name: "not onboarded: left, no error", onboarded: false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ns := newBareNamespace(t)
			if tt.onboarded {
				onboard(t, ns)
			}
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gone-pipeline-secret", Labels: labels}}
			pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gone-pvc", Labels: labels},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				}}
			run := &pipelinev1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gone-run", Labels: labels},
				Spec: pipelinev1.PipelineRunSpec{PipelineRef: &pipelinev1.PipelineRef{Name: "gone-pipeline"}}}
			mustCreate(t, secret, pvc, run)
			r, _ := newTestReconciler(t, 10)
			r.Client, r.APIReader, r.Builds = op, op, &rebuild.Builds{Tekton: true}
			r.wire()
			key := types.NamespacedName{Namespace: ns, Name: "gone"}
			var err error
			// The operator's RoleBinding reaches the authorizer a moment after it is made.
			envtest.Until(t, "finalize ends", func() bool {
				err = r.finalize(ctx, key)
				return err == nil && (!tt.wantDeleted || gone(t, secret) && gone(t, pvc) && gone(t, run))
			})
			if !tt.wantDeleted && (gone(t, secret) || gone(t, pvc) || gone(t, run)) {
				t.Error("objects deleted in a namespace that did not onboard the operator")
			}
		})
	}
}

package operator

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
)

// TestOperatorRBAC_IsEnforced checks that the operators of these tests really run
// with only the RBAC of config/: what it grants works, what it does not is refused.
func TestOperatorRBAC_IsEnforced(t *testing.T) {
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(operatorConfig, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := newNamespace(t)
	if err := c.List(ctx, &v1alpha1.FunctionList{}, client.InNamespace(ns)); err != nil {
		t.Errorf("listing Functions as the operator: %v", err)
	}
	for name, try := range map[string]func() error{
		"create a Namespace": func() error {
			return c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "nope-"}})
		},
		"create a Function": func() error {
			return c.Create(ctx, &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x"},
				Spec: v1alpha1.FunctionSpec{Repository: v1alpha1.Repository{URL: "https://git.example/x.git"}}})
		},
		"delete a ConfigMap": func() error {
			return c.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x"}})
		},
		"list ConfigMaps outside its own namespace": func() error {
			return c.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(ns))
		},
	} {
		if err := try(); !apierrors.IsForbidden(err) {
			t.Errorf("%s as the operator: %v, want Forbidden", name, err)
		}
	}
}

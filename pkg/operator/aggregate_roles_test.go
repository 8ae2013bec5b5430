package operator

import (
	"context"
	"fmt"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/test/envtest"
)

// aggregateRolesFile is what makes Kubernetes' default roles cover Functions.
const aggregateRolesFile = "config/200-aggregate-clusterroles.yaml"

// TestAggregatedRoles_NamespaceUsers: with config/'s aggregated ClusterRoles and the
// real clusterrole-aggregation controller of kube-controller-manager, a user bound
// to a namespace's `edit` creates, changes and deletes Functions there, one bound to
// `view` reads them and may not write, and neither writes a Function's status. The
// control: before the file is applied, `edit` may not create one.
func TestAggregatedRoles_NamespaceUsers(t *testing.T) {
	ctx := context.Background()
	testEnv.StartControllersT(t, envtest.ClusterRoleAggregationController)
	ns := newBareNamespace(t)
	as := func(user string) client.Client {
		cfg := rest.CopyConfig(restConfig)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
		c, err := client.New(cfg, client.Options{Scheme: k8sClient.Scheme()})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for user, role := range map[string]string{"alice": "edit", "bob": "view"} {
		rb := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user + "-" + role},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		}
		if err := k8sClient.Create(ctx, rb); err != nil {
			t.Fatal(err)
		}
	}
	alice, bob := as("alice"), as("bob")
	newFn := func(name string) *v1alpha1.Function {
		return &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.FunctionSpec{Repository: v1alpha1.Repository{URL: "http://127.0.0.1:1/fns.git"}}}
	}

	// The control: Kubernetes' edit knows nothing of Functions by itself (unless a
	// test before applied the file: the cluster keeps it).
	if applied(t, ctx) {
		t.Log("the aggregated roles are already applied in this control plane: the control is skipped")
	} else if err := alice.Create(ctx, newFn("before")); !apierrors.IsForbidden(err) {
		t.Fatalf("edit created a Function before %s was applied: %v; want Forbidden", aggregateRolesFile, err)
	}

	if _, err := envtest.Apply(ctx, restConfig, aggregateRolesFile); err != nil {
		t.Fatal(err)
	}
	// The controller folds the rules in within moments; the authorizer sees them then.
	deadline := time.Now().Add(30 * time.Second)
	var err error
	for err = alice.Create(ctx, newFn("hello")); apierrors.IsForbidden(err) && time.Now().Before(deadline); err = alice.Create(ctx, newFn("hello")) {
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("edit creates a Function: %v", err)
	}

	fn := &v1alpha1.Function{}
	if err := bob.Get(ctx, client.ObjectKey{Namespace: ns, Name: "hello"}, fn); err != nil {
		t.Errorf("view reads a Function: %v", err)
	}
	var list v1alpha1.FunctionList
	if err := bob.List(ctx, &list, client.InNamespace(ns)); err != nil || len(list.Items) != 1 {
		t.Errorf("view lists Functions: %d, %v", len(list.Items), err)
	}
	if err := bob.Create(ctx, newFn("by-view")); !apierrors.IsForbidden(err) {
		t.Errorf("view created a Function: %v; want Forbidden", err)
	}
	fn.Status.Name = "forged"
	for who, c := range map[string]client.Client{"edit": alice, "view": bob} {
		if err := c.Status().Update(ctx, fn.DeepCopy()); !apierrors.IsForbidden(err) {
			t.Errorf("%s wrote a Function's status: %v; want Forbidden (the operator alone writes it)", who, err)
		}
	}
	if err := alice.Get(ctx, client.ObjectKey{Namespace: ns, Name: "hello"}, fn); err != nil {
		t.Fatal(err)
	}
	fn.Spec.Repository.Branch = "release"
	if err := alice.Update(ctx, fn); err != nil {
		t.Errorf("edit changes a Function: %v", err)
	}
	if err := alice.Delete(ctx, fn); err != nil {
		t.Errorf("edit deletes a Function: %v", err)
	}
	// Another namespace stays out of reach.
	other := newBareNamespace(t)
	if err := alice.Create(ctx, &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "x"},
		Spec: v1alpha1.FunctionSpec{Repository: v1alpha1.Repository{URL: "http://127.0.0.1:1/fns.git"}}}); !apierrors.IsForbidden(err) {
		t.Errorf("edit of %s created a Function in %s: %v; want Forbidden", ns, other, err)
	}
}

// applied reports whether the aggregated roles are in the control plane already.
func applied(t *testing.T, ctx context.Context) bool {
	t.Helper()
	objs, err := envtest.Read(aggregateRolesFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		err := k8sClient.Get(ctx, client.ObjectKey{Name: o.GetName()}, &rbacv1.ClusterRole{})
		switch {
		case err == nil:
			return true
		case !apierrors.IsNotFound(err):
			t.Fatal(fmt.Errorf("reading ClusterRole %s: %w", o.GetName(), err))
		}
	}
	return false
}

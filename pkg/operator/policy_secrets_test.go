package operator

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
)

// TestSecretReferencePolicy: the API server, with config/310-function-secret-policy.yaml,
// lets a developer who may write Functions but read only Secret "mine" name "mine",
// and refuses "theirs" in either reference, on create and on an update that moves a
// Function someone else made with "theirs" to another repository. An update that
// leaves the spec alone passes, as does an admin naming any Secret.
func TestSecretReferencePolicy(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	for _, name := range []string{"mine", "theirs"} {
		if err := k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Data: map[string][]byte{"token": []byte("t-" + name)}}); err != nil {
			t.Fatal(err)
		}
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "developer"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"functions.dev"}, Resources: []string{"functions"}, Verbs: []string{"get", "list", "create", "update", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"mine"}, Verbs: []string{"get"}},
	}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "developer"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "developer"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "dev"}}}
	for _, o := range []client.Object{role, binding} {
		if err := k8sClient.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	cfg := rest.CopyConfig(restConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "dev", Groups: []string{"system:authenticated"}}
	dev, err := client.New(cfg, client.Options{Scheme: k8sClient.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	function := func(name, git, registry string) *v1alpha1.Function {
		fn := &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.FunctionSpec{Repository: v1alpha1.Repository{URL: "http://127.0.0.1:1/" + name + ".git"}}}
		if git != "" {
			fn.Spec.Repository.AuthSecretRef = &corev1.LocalObjectReference{Name: git}
		}
		if registry != "" {
			fn.Spec.Registry.AuthSecretRef = &corev1.LocalObjectReference{Name: registry}
		}
		return fn
	}
	// The developer's RoleBinding reaches the authorizer a moment after it is made.
	eventually(t, 10*time.Second, func() string {
		if err := dev.Create(ctx, function("mine", "mine", "mine")); err != nil {
			return "naming a Secret the developer may read: " + err.Error()
		}
		return ""
	})
	refused := func(what string, err error, field string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), field+" names Secret theirs, which you may not read") {
			t.Errorf("%s: %v, want refused naming %s", what, err, field)
		}
	}
	refused("git Secret of another", dev.Create(ctx, function("a", "theirs", "")), "spec.repository.authSecretRef")
	refused("registry Secret of another", dev.Create(ctx, function("b", "mine", "theirs")), "spec.registry.authSecretRef")

	// Someone else's Function that names "theirs" (an admin may name any Secret).
	if err := k8sClient.Create(ctx, function("admins", "theirs", "theirs")); err != nil {
		t.Fatalf("an admin naming any Secret: %v", err)
	}
	fn := &v1alpha1.Function{}
	if err := dev.Get(ctx, client.ObjectKey{Namespace: ns, Name: "admins"}, fn); err != nil {
		t.Fatal(err)
	}
	fn.Labels = map[string]string{"team": "a"}
	if err := dev.Update(ctx, fn); err != nil {
		t.Errorf("an update that leaves the spec alone: %v", err)
	}
	fn.Spec.Repository.URL = "http://127.0.0.1:2/elsewhere.git"
	refused("moving another's Function that names theirs", dev.Update(ctx, fn), "spec.repository.authSecretRef")
}

package faults

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/fnops/func-operator/test/envtest"
)

// operatorRoleFile holds the operator's ClusterRole (what it does across namespaces)
// and Role (in its own), generated from the reconciler's RBAC markers.
const operatorRoleFile = "config/200-clusterrole.yaml"

// checkGrants fails the test unless identity (the credentials the front gives the
// operator binary) holds every rule of operatorRoleFile, as read from the file: the
// suite's RBAC is config/'s, applied and bound as `ko apply -f config/` does, never a
// copy, so a rule the operator gains (Deployments, core Services, HTTPScaledObjects
// for func's raw and keda deployers) reaches the binary here only through config/.
// It asks the API server with a SelfSubjectAccessReview per verb, as that identity.
func checkGrants(t *testing.T, identity *rest.Config) {
	t.Helper()
	objs, err := envtest.Read(operatorRoleFile)
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubernetes.NewForConfig(identity)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, o := range objs {
		var rules []rbacv1.PolicyRule
		namespace := ""
		switch o.GetKind() {
		case "ClusterRole":
			var role rbacv1.ClusterRole
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &role); err != nil {
				t.Fatalf("%s: decoding ClusterRole %s: %v", operatorRoleFile, o.GetName(), err)
			}
			rules = role.Rules
		case "Role":
			var role rbacv1.Role
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &role); err != nil {
				t.Fatalf("%s: decoding Role %s: %v", operatorRoleFile, o.GetName(), err)
			}
			rules, namespace = role.Rules, role.Namespace
		default:
			t.Fatalf("%s holds a %s, want only the operator's ClusterRole and Role", operatorRoleFile, o.GetKind())
		}
		for _, attrs := range ruleAttributes(rules, namespace) {
			review, err := c.AuthorizationV1().SelfSubjectAccessReviews().Create(context.Background(),
				&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("asking whether the operator may %s: %v", describeAttributes(attrs), err)
			}
			if !review.Status.Allowed {
				t.Errorf("the operator binary's identity may not %s, which %s %s grants: %s", describeAttributes(attrs), o.GetKind(), o.GetName(), review.Status.Reason)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatalf("%s grants nothing", operatorRoleFile)
	}
	// The negative control: the reviews tell, for this identity, what it may not do
	// (the operator reads func's workloads and never writes them).
	never := authorizationv1.ResourceAttributes{Group: "apps", Resource: "deployments", Verb: "delete"}
	review, err := c.AuthorizationV1().SelfSubjectAccessReviews().Create(context.Background(),
		&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &never}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if review.Status.Allowed {
		t.Errorf("the operator binary's identity may %s: it has more than %s grants", describeAttributes(never), operatorRoleFile)
	}
}

// ruleAttributes spells rules out into one access per group, resource and verb,
// in namespace ("" for every namespace).
func ruleAttributes(rules []rbacv1.PolicyRule, namespace string) []authorizationv1.ResourceAttributes {
	var out []authorizationv1.ResourceAttributes
	for _, r := range rules {
		for _, group := range r.APIGroups {
			for _, resource := range r.Resources {
				resource, subresource, _ := strings.Cut(resource, "/")
				for _, verb := range r.Verbs {
					out = append(out, authorizationv1.ResourceAttributes{Namespace: namespace, Group: group, Resource: resource, Subresource: subresource, Verb: verb})
				}
			}
		}
	}
	return out
}

func describeAttributes(a authorizationv1.ResourceAttributes) string {
	resource := a.Resource
	if a.Subresource != "" {
		resource += "/" + a.Subresource
	}
	where := "in every namespace"
	if a.Namespace != "" {
		where = "in namespace " + a.Namespace
	}
	group := a.Group
	if group == "" {
		group = "core"
	}
	return fmt.Sprintf("%s %s (%s) %s", a.Verb, resource, group, where)
}

func TestRuleAttributes(t *testing.T) {
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{"functions.dev"}, Resources: []string{"functions/status"}, Verbs: []string{"patch"}},
	}
	want := []authorizationv1.ResourceAttributes{
		{Namespace: "ns", Group: "apps", Resource: "deployments", Verb: "get"},
		{Namespace: "ns", Group: "apps", Resource: "deployments", Verb: "list"},
		{Namespace: "ns", Group: "functions.dev", Resource: "functions", Subresource: "status", Verb: "patch"},
	}
	if diff := cmp.Diff(want, ruleAttributes(rules, "ns")); diff != "" {
		t.Errorf("ruleAttributes (-want +got):\n%s", diff)
	}
}

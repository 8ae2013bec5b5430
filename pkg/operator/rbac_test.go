package operator

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/test/envtest"
)

// asOperator is a client with the operator's identity and only the RBAC of config/.
func asOperator(t *testing.T) client.Client {
	t.Helper()
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(operatorConfig, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestOperatorRBAC_IsEnforced checks that the operators of these tests really run
// with only the RBAC of config/: what it grants works, what it does not is refused.
func TestOperatorRBAC_IsEnforced(t *testing.T) {
	c := asOperator(t)
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

// TestOperatorRBAC_NoWayToTheCluster: as the operator's ServiceAccount, with only the
// RBAC of config/, nothing that leads to more rights works anywhere: a token Secret
// in kube-system, Secret reads outside onboarded namespaces, RoleBindings, pods, PVCs
// and ServiceAccounts of a namespace that did not onboard it. In a namespace that did,
// what a build writes works (the positive control).
func TestOperatorRBAC_NoWayToTheCluster(t *testing.T) {
	c := asOperator(t)
	ctx := context.Background()
	bare, onboarded := newBareNamespace(t), newNamespace(t)
	tokenSecret := func(ns string) *corev1.Secret {
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "token-",
				Annotations: map[string]string{corev1.ServiceAccountNameKey: "default"}},
			Type: corev1.SecretTypeServiceAccountToken,
		}
	}
	forbidden := map[string]func() error{
		"create a token Secret in kube-system": func() error { return c.Create(ctx, tokenSecret("kube-system")) },
		"list Secrets in kube-system":          func() error { return c.List(ctx, &corev1.SecretList{}, client.InNamespace("kube-system")) },
		"list Secrets cluster-wide":            func() error { return c.List(ctx, &corev1.SecretList{}) },
		"create a Secret in a namespace that did not onboard it": func() error {
			return c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: bare, GenerateName: "x-"}})
		},
		"create a RoleBinding in an onboarded namespace": func() error {
			return c.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: onboarded, GenerateName: "x-"},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "default", Namespace: onboarded}}})
		},
		"create a ServiceAccount in an onboarded namespace": func() error {
			return c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: onboarded, GenerateName: "x-"}})
		},
		"create a pod in an onboarded namespace": func() error {
			return c.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: onboarded, GenerateName: "x-"},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "x", Image: "127.0.0.1:5000/x"}}}})
		},
		"create a PVC in a namespace that did not onboard it": func() error {
			return c.Create(ctx, pvc(bare))
		},
		"create a token for a ServiceAccount": func() error {
			return c.SubResource("token").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "default"}},
				&authenticationv1.TokenRequest{})
		},
	}
	for name, try := range forbidden {
		if err := try(); !apierrors.IsForbidden(err) {
			t.Errorf("%s as the operator: %v, want Forbidden", name, err)
		}
	}
	// The positive control: in the onboarded namespace, what a build writes is
	// allowed (the RoleBinding may take a moment to reach the authorizer).
	eventually(t, 10*time.Second, func() string {
		if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: onboarded, GenerateName: "x-"}}); err != nil {
			return "creating a Secret in an onboarded namespace: " + err.Error()
		}
		if err := c.Create(ctx, pvc(onboarded)); err != nil {
			return "creating a PVC in an onboarded namespace: " + err.Error()
		}
		return ""
	})
}

func pvc(ns string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "x-"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		}}
}

// sensitive are the resources a cluster-wide write on leads to more rights: Secrets,
// RBAC, and whatever runs pods as a ServiceAccount of its namespace. Not among them:
// tokenreviews and subjectaccessreviews, which the ClusterRole creates for the
// metrics filter (TestOperator_MetricsSecure) and the tenancy checks: a review asks
// the API server whether a token is valid or a user may act, and stores nothing.
var sensitive = []string{"secrets", "serviceaccounts", "serviceaccounts/token", "roles", "rolebindings", "clusterroles",
	"clusterrolebindings", "persistentvolumeclaims", "pods", "pods/exec", "pods/attach", "pods/ephemeralcontainers",
	"deployments", "replicasets", "statefulsets", "daemonsets", "jobs", "cronjobs", "replicationcontrollers",
	"pipelineruns", "taskruns", "services", "configurations", "revisions", "*"}

// writes are the verbs that change something or lend rights.
var writes = []string{"create", "update", "patch", "delete", "deletecollection", "escalate", "bind", "impersonate", "*"}

// clusterWideWrites lists the rules of role that let its holder, in every namespace,
// write a sensitive resource or lend itself rights.
func clusterWideWrites(role *rbacv1.ClusterRole) []string {
	var out []string
	for _, r := range role.Rules {
		for _, res := range r.Resources {
			for _, v := range r.Verbs {
				if (slices.Contains(sensitive, res) && slices.Contains(writes, v)) || slices.Contains([]string{"escalate", "bind", "impersonate"}, v) {
					out = append(out, fmt.Sprintf("%s %s (groups %v)", v, res, r.APIGroups))
				}
			}
		}
	}
	return out
}

// TestClusterRole_NoClusterWideWrites reads the RBAC config/ installs: every
// ClusterRole a ClusterRoleBinding grants to the operator has no write on Secrets,
// ServiceAccounts, RBAC, PVCs or pods, and no escalate, bind or impersonate. The
// ClusterRoles a namespace binds (func-operator-namespace, func-operator-builder) are
// never bound cluster-wide.
func TestClusterRole_NoClusterWideWrites(t *testing.T) {
	// The positive control: the ClusterRole before issue 10 is caught.
	old := &rbacv1.ClusterRole{}
	if err := yaml.Unmarshal([]byte(`
rules:
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["create", "delete", "get", "list", "update", "watch"]
- apiGroups: ["rbac.authorization.k8s.io"]
  resources: ["rolebindings"]
  verbs: ["create", "delete", "get", "patch"]
- apiGroups: ["rbac.authorization.k8s.io"]
  resourceNames: ["func-operator-pipeline"]
  resources: ["clusterroles"]
  verbs: ["bind"]
`), old); err != nil {
		t.Fatal(err)
	}
	if got := clusterWideWrites(old); len(got) != 7 {
		t.Fatalf("the old ClusterRole: %d cluster-wide writes found (%v), want 7", len(got), got)
	}

	files, err := filepath.Glob(filepath.Join(envtest.RepoRoot(), "config", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := envtest.Read(files...)
	if err != nil {
		t.Fatal(err)
	}
	roles := map[string]*rbacv1.ClusterRole{}
	var bindings []*rbacv1.ClusterRoleBinding
	for _, o := range objs {
		switch o.GetKind() {
		case "ClusterRole":
			r := &rbacv1.ClusterRole{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, r); err != nil {
				t.Fatal(err)
			}
			roles[r.Name] = r
		case "ClusterRoleBinding":
			b := &rbacv1.ClusterRoleBinding{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, b); err != nil {
				t.Fatal(err)
			}
			bindings = append(bindings, b)
		}
	}
	if len(bindings) == 0 || roles["func-operator"] == nil {
		t.Fatalf("config/ has %d ClusterRoleBindings and ClusterRoles %v: the operator's are missing", len(bindings), slices.Collect(maps.Keys(roles)))
	}
	for _, b := range bindings {
		role := roles[b.RoleRef.Name]
		if role == nil {
			t.Errorf("ClusterRoleBinding %s grants ClusterRole %s, which config/ does not define", b.Name, b.RoleRef.Name)
			continue
		}
		if w := clusterWideWrites(role); len(w) > 0 {
			t.Errorf("ClusterRoleBinding %s grants, in every namespace: %v", b.Name, w)
		}
	}
}

// TestOnboarding_ByNamespaceAdmin: config/namespace/onboard.yaml is one step a
// namespace admin can take without cluster-admin: a user who holds, in that namespace
// only, the rights it grants (plus ServiceAccount and RoleBinding creation) applies it.
// A user who may create RoleBindings but lacks those rights is refused, as RBAC's
// escalation check requires: the grant cannot be made by someone who could not act so.
func TestOnboarding_ByNamespaceAdmin(t *testing.T) {
	ctx := context.Background()
	objs, err := envtest.Read("config/200-namespace-clusterrole.yaml", "config/200-builder-clusterrole.yaml")
	if err != nil {
		t.Fatal(err)
	}
	onlyRBAC := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, Verbs: []string{"get", "create", "patch", "update"}},
		{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"rolebindings"}, Verbs: []string{"get", "create", "patch", "update"}}}
	granted := make([][]rbacv1.PolicyRule, 0, len(objs))
	for _, o := range objs {
		r := &rbacv1.ClusterRole{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, r); err != nil {
			t.Fatal(err)
		}
		granted = append(granted, r.Rules)
	}
	rules := slices.Concat(append([][]rbacv1.PolicyRule{onlyRBAC}, granted...)...)
	for _, tt := range []struct {
		user    string
		rules   []rbacv1.PolicyRule
		allowed bool
	}{
		{user: "team-admin", rules: rules, allowed: true},
		{user: "rbac-only", rules: onlyRBAC, allowed: false},
	} {
		t.Run(tt.user, func(t *testing.T) {
			ns := newBareNamespace(t)
			if err := k8sClient.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tt.user}, Rules: tt.rules}); err != nil {
				t.Fatal(err)
			}
			if err := k8sClient.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tt.user},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: tt.user},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: tt.user}}}); err != nil {
				t.Fatal(err)
			}
			as := rest.CopyConfig(restConfig)
			as.Impersonate = rest.ImpersonationConfig{UserName: tt.user, Groups: []string{"system:authenticated"}}
			// RBAC's escalation check refuses the grant itself, not some other step.
			const escalation = "attempting to grant RBAC permissions not currently held"
			want := func(err error) bool {
				if tt.allowed {
					return err == nil
				}
				return err != nil && strings.Contains(err.Error(), escalation)
			}
			var err error
			// The user's RoleBinding reaches the authorizer a moment after it is made.
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
				if err = envtest.Onboard(ctx, as, ns); want(err) {
					break
				}
			}
			if !want(err) {
				t.Fatalf("onboarding as %s: %v, want allowed %t", tt.user, err, tt.allowed)
			}
		})
	}
}

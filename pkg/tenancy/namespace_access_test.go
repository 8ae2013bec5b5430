package tenancy

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/rerror"
	"github.com/fnops/func-operator/test/envtest"
)

// TestNamespaceAccess checks, as the operator, what a namespace that onboarded it
// (config/namespace/onboard.yaml) and one missing each part of it report.
func TestNamespaceAccess(t *testing.T) {
	op := asOperator(t)
	ctx := context.Background()
	allOperatorGrants := "the operator holds none of ClusterRole func-operator-namespace here (RoleBinding func-operator-namespace)"
	for _, tt := range []struct {
		name    string
		prepare func(t *testing.T, ns string)
		want    []string // what the message names as missing; none when onboarded
		// rebase checks for a rebase (CheckForRebase), which impersonates; pipeline
		// builds (Check) must pass without the impersonation.
		rebase bool
	}{{
		name:    "onboarded",
		prepare: func(t *testing.T, ns string) { onboard(t, ns) },
	}, {
		name:    "not onboarded",
		prepare: func(*testing.T, string) {},
		// The operator may not even read ServiceAccounts there: it says what it lacks.
		want: []string{allOperatorGrants},
	}, {
		name: "the operator's RoleBinding removed",
		prepare: func(t *testing.T, ns string) {
			onboard(t, ns)
			mustDelete(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "func-operator-namespace"}})
		},
		want: []string{allOperatorGrants},
	}, {
		name: "the build ServiceAccount removed",
		prepare: func(t *testing.T, ns string) {
			onboard(t, ns)
			mustDelete(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "func-operator-builder"}})
		},
		want: []string{"the build ServiceAccount func-operator-builder does not exist"},
	}, {
		name: "the build ServiceAccount's RoleBinding removed",
		prepare: func(t *testing.T, ns string) {
			onboard(t, ns)
			mustDelete(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "func-operator-builder"}})
		},
		want: []string{"the build ServiceAccount func-operator-builder holds none of ClusterRole func-operator-builder here (RoleBinding func-operator-builder)"},
	}, {
		name: "the operator may not impersonate the build ServiceAccount",
		prepare: func(t *testing.T, ns string) {
			onboard(t, ns)
			withoutImpersonation(t, ns, nil)
		},
		want:   []string{"the operator may not impersonate serviceaccounts named func-operator-builder (ClusterRole func-operator-namespace, RoleBinding func-operator-namespace)"},
		rebase: true,
	}, {
		name: "without impersonation, pipeline builds are still onboarded",
		prepare: func(t *testing.T, ns string) {
			onboard(t, ns)
			withoutImpersonation(t, ns, nil)
		},
	}, {
		name:    "onboarded, for a rebase too",
		prepare: func(t *testing.T, ns string) { onboard(t, ns) },
		rebase:  true,
	}, {
		// resourceNames count: impersonating another ServiceAccount is not the grant.
		name: "the operator may impersonate another ServiceAccount only",
		prepare: func(t *testing.T, ns string) {
			onboard(t, ns)
			withoutImpersonation(t, ns, &rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"serviceaccounts"},
				ResourceNames: []string{"default"}, Verbs: []string{"impersonate"}})
		},
		want:   []string{"the operator may not impersonate serviceaccounts named func-operator-builder (ClusterRole func-operator-namespace, RoleBinding func-operator-namespace)"},
		rebase: true,
	}, {
		name: "the operator's grant narrowed to reads",
		prepare: func(t *testing.T, ns string) {
			onboard(t, ns)
			mustDelete(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "func-operator-namespace"}})
			// A Role (envtest aggregates no ClusterRoles such as view).
			mustCreate(t, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reads"},
				Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets", "persistentvolumeclaims"}, Verbs: []string{"get", "list", "watch"}}}})
			mustCreate(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reads"},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "reads"},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "func-operator", Name: "func-operator"}}})
		},
		want: []string{"the operator may not create secrets, update secrets, delete secrets, create persistentvolumeclaims, delete persistentvolumeclaims, get serviceaccounts,",
			"create pipelineruns.tekton.dev, delete pipelineruns.tekton.dev (ClusterRole func-operator-namespace, RoleBinding func-operator-namespace)"},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			ns := newBareNamespace(t)
			tt.prepare(t, ns)
			// The API server's authorizer sees RBAC changes a moment later: ask until
			// the answer is the one wanted, or for 10 seconds.
			names := func(err error) bool {
				for _, w := range tt.want {
					if !strings.Contains(err.Error(), w) {
						return false
					}
				}
				return true
			}
			var err error
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
				a := &NamespaceAccess{Client: op, Reader: op}
				check := a.Check
				if tt.rebase {
					check = a.CheckForRebase
				}
				if err = check(ctx, ns, "func-operator-builder"); (err == nil) == (len(tt.want) == 0) && (err == nil || names(err)) {
					break
				}
			}
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Check: %v, want nil", err)
				}
				return
			}
			if !rerror.IsStalling(err) || rerror.Reason(err) != v1alpha1.ReasonNamespaceNotOnboarded {
				t.Fatalf("Check: %v, want a stall with reason %s", err, v1alpha1.ReasonNamespaceNotOnboarded)
			}
			msg := err.Error()
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q\ndoes not name %q", msg, w)
				}
			}
			if !strings.Contains(msg, "kubectl apply -n "+ns+" -f config/namespace/onboard.yaml") {
				t.Errorf("message %q does not say how to onboard", msg)
			}
		})
	}
}

// TestNamespaceAccess_CachesOnlySuccess: an onboarded namespace is not reviewed again
// within AccessTTL; one that is not is reviewed every time, so onboarding shows at once.
func TestNamespaceAccess_CachesOnlySuccess(t *testing.T) {
	op := asOperator(t)
	ctx := context.Background()
	ns := newBareNamespace(t)
	clk := clocktesting.NewFakeClock(time.Now())
	a := &NamespaceAccess{Client: op, Reader: op, clock: clk}
	if err := a.Check(ctx, ns, "func-operator-builder"); err == nil {
		t.Fatal("a namespace not onboarded passed")
	}
	onboard(t, ns)
	// Not cached: onboarding is seen as soon as the API server's authorizer sees it.
	envtest.Until(t, "onboarding is seen", func() bool { return a.Check(ctx, ns, "func-operator-builder") == nil })
	mustDelete(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "func-operator-namespace"}})
	// The positive control for the TTL: a fresh checker sees the revocation.
	envtest.Until(t, "a fresh checker sees the revocation", func() bool {
		return (&NamespaceAccess{Client: op, Reader: op}).Check(ctx, ns, "func-operator-builder") != nil
	})
	if err := a.Check(ctx, ns, "func-operator-builder"); err != nil {
		t.Errorf("within the TTL: %v, want the remembered success", err)
	}
	clk.Step(AccessTTL)
	if err := a.Check(ctx, ns, "func-operator-builder"); err == nil {
		t.Error("after the TTL, a revoked grant still passes")
	}
}

// TestNamespaceGrant_MatchesConfig keeps NamespaceGrant and BuilderGrant equal to the
// ClusterRoles of config/ that a namespace binds.
func TestNamespaceGrant_MatchesConfig(t *testing.T) {
	for file, want := range map[string][]Grant{
		"config/200-namespace-clusterrole.yaml":    NamespaceGrant,
		"config/200-builder-clusterrole.yaml":      BuilderGrant,
		"config/200-builder-keda-clusterrole.yaml": KedaBuilderGrant,
	} {
		objs, err := envtest.Read(file)
		if err != nil {
			t.Fatal(err)
		}
		role := &rbacv1.ClusterRole{}
		if len(objs) != 1 || runtime.DefaultUnstructuredConverter.FromUnstructured(objs[0].Object, role) != nil {
			t.Fatalf("%s: want one ClusterRole", file)
		}
		var got []Grant
		for _, r := range role.Rules {
			names := r.ResourceNames
			if len(names) == 0 {
				names = []string{""} // every object
			}
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, v := range r.Verbs {
						for _, n := range names {
							got = append(got, Grant{Group: g, Resource: res, Verb: v, Name: n})
						}
					}
				}
			}
		}
		key := func(g Grant) string { return g.String() }
		sortGrants := func(gs []Grant) []Grant {
			gs = slices.Clone(gs)
			slices.SortFunc(gs, func(a, b Grant) int { return strings.Compare(key(a), key(b)) })
			return gs
		}
		if diff := cmp.Diff(sortGrants(want), sortGrants(got)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", file, diff)
		}
	}
}

// TestNamespaceAccess_Keda: a namespace onboarded with onboard.yaml lets keda
// functions be rebuilt only once onboard-keda.yaml grants the build ServiceAccount
// HTTPScaledObjects; the message says which file. Knative and raw functions (the
// positive control) need onboard.yaml alone.
func TestNamespaceAccess_Keda(t *testing.T) {
	op := asOperator(t)
	ctx := context.Background()
	ns := newNamespace(t)
	a := &NamespaceAccess{Client: op, Reader: op}
	envtest.Until(t, "onboard.yaml is seen", func() bool { return a.CheckFor(ctx, ns, "func-operator-builder", false) == nil })
	err := a.CheckFor(ctx, ns, "func-operator-builder", true)
	if !IsNotOnboarded(err) {
		t.Fatalf("keda without onboard-keda.yaml: %v, want NotOnboarded", err)
	}
	for _, w := range []string{KedaBuilderClusterRole, "kubectl apply -n " + ns + " -f " + KedaOnboardingManifest, "keda deployer"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("message %q does not say %q", err, w)
		}
	}
	if err := envtest.OnboardKEDA(ctx, restConfig, ns); err != nil {
		t.Fatal(err)
	}
	envtest.Until(t, "onboard-keda.yaml is seen", func() bool { return a.CheckFor(ctx, ns, "func-operator-builder", true) == nil })
}

// withoutImpersonation replaces the operator's RoleBinding func-operator-namespace in
// ns by a Role of ClusterRole func-operator-namespace's rules but its impersonation,
// plus extra when set.
func withoutImpersonation(t *testing.T, ns string, extra *rbacv1.PolicyRule) {
	t.Helper()
	objs, err := envtest.Read("config/200-namespace-clusterrole.yaml")
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(objs[0].Object, role); err != nil {
		t.Fatal(err)
	}
	all := len(role.Rules)
	rules := slices.DeleteFunc(role.Rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Verbs, "impersonate") })
	if len(rules) != all-1 {
		t.Fatalf("ClusterRole func-operator-namespace: %d rules impersonate, want 1", all-len(rules))
	}
	if extra != nil {
		rules = append(rules, *extra)
	}
	mustDelete(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "func-operator-namespace"}})
	mustCreate(t, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "no-impersonation"}, Rules: rules},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "no-impersonation"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "no-impersonation"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "func-operator", Name: "func-operator"}}})
}

// TestNamespaceAccess_ImpersonatesTheCheckedServiceAccount: the operator must be able
// to impersonate the build ServiceAccount it is asked about, by name. Another
// pipelineServiceAccount, bound to ClusterRole func-operator-builder, is not covered
// by onboard.yaml's grant (it names func-operator-builder) until the namespace grants
// impersonating it too; func-operator-builder (the positive control) is.
func TestNamespaceAccess_ImpersonatesTheCheckedServiceAccount(t *testing.T) {
	op := asOperator(t)
	ctx := context.Background()
	ns := newNamespace(t)
	const other = "other-builder"
	mustCreate(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: other}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: other},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: BuilderClusterRole},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: other}}})
	a := &NamespaceAccess{Client: op, Reader: op}
	envtest.Until(t, "onboard.yaml is seen", func() bool { return a.Check(ctx, ns, "func-operator-builder") == nil })
	want := "the operator may not impersonate serviceaccounts named " + other + " (ClusterRole func-operator-namespace, RoleBinding func-operator-namespace)"
	var err error
	// A pipeline build as other needs no impersonation: onboarded.
	envtest.Until(t, "the other ServiceAccount's builder grant is seen", func() bool { return a.Check(ctx, ns, other) == nil })
	envtest.Until(t, "a rebase as the other ServiceAccount is refused", func() bool {
		err = a.CheckForRebase(ctx, ns, other)
		return err != nil && !strings.Contains(err.Error(), "build ServiceAccount")
	})
	if !IsNotOnboarded(err) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Check(%s): %v\nwant NotOnboarded naming %q", other, err, want)
	}
	mustCreate(t, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "impersonate-" + other},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, ResourceNames: []string{other}, Verbs: []string{"impersonate"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "impersonate-" + other},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "impersonate-" + other},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "func-operator", Name: "func-operator"}}})
	envtest.Until(t, "impersonating "+other+" granted", func() bool { return a.CheckForRebase(ctx, ns, other) == nil })
}

// TestCovers: a rule of resourceNames covers a grant of one of those names only; a
// rule without covers every name.
func TestCovers(t *testing.T) {
	impersonate := func(names ...string) authorizationv1.ResourceRule {
		return authorizationv1.ResourceRule{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, Verbs: []string{"impersonate"}, ResourceNames: names}
	}
	for _, tt := range []struct {
		name  string
		rule  authorizationv1.ResourceRule
		grant Grant
		want  bool
	}{
		{"named, the name", impersonate("func-operator-builder"), ImpersonateGrant("func-operator-builder"), true},
		{"named, another name", impersonate("default"), ImpersonateGrant("func-operator-builder"), false},
		{"every name", impersonate(), ImpersonateGrant("func-operator-builder"), true},
		{"named, a grant of every object", impersonate("func-operator-builder"), Grant{Resource: "serviceaccounts", Verb: "impersonate"}, false},
		{"another verb", impersonate(), Grant{Resource: "serviceaccounts", Verb: "get", Name: "func-operator-builder"}, false},
		{"wildcards", authorizationv1.ResourceRule{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}, ImpersonateGrant("x"), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := covers(tt.rule, tt.grant); got != tt.want {
				t.Errorf("covers(%+v, %v) = %t, want %t", tt.rule, tt.grant, got, tt.want)
			}
		})
	}
}

package operator

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	kedav1alpha1 "github.com/kedacore/http-add-on/operator/apis/http/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/test/envtest"
)

// funcKedaFixture is what func v0.50.1's keda deployer wrote, as the build
// ServiceAccount of namespace tenant (pkg/funclib's TestBuilderClusterRole_Keda
// records it).
const funcKedaFixture = "pkg/funclib/testdata/deployers/keda.yaml"

// TestKedaHostsPolicy: the API server, with config/320-keda-hosts-policy.yaml, lets the
// build ServiceAccount func-operator-builder of a namespace onboarded with
// onboard-keda.yaml write the HTTPScaledObject func's keda deployer writes (created,
// then updated), and refuses it any other host: another namespace's (.svc,
// .svc.cluster.local, with a port, a wildcard), an external one, another object's of
// its own namespace, none or "*" (the add-on's catch-all), and path prefixes or
// headers, on create and on update. Before the policy is applied, the same RoleBinding
// lets it claim another namespace's host (the attack). Writes by anyone else are not
// matched: another ServiceAccount with the same ClusterRole, and an admin, claim an
// external host. The bare host func writes is admitted in two namespaces at once:
// the collision the policy cannot see (docs/deployers.md).
func TestKedaHostsPolicy(t *testing.T) {
	env := envtest.StartT(t, envtest.KEDAHTTPCRDs)
	ctx := context.Background()
	if _, err := envtest.Apply(ctx, env.Config, envtest.RBACFiles...); err != nil {
		t.Fatal(err)
	}
	admin, err := env.Client(envtestSchemes...)
	if err != nil {
		t.Fatal(err)
	}
	a := envtest.NewNamespace(t, env.Config, "keda-a-", true)
	b := envtest.NewNamespace(t, env.Config, "keda-b-", true)
	for _, ns := range []string{a, b} {
		if err := envtest.OnboardKEDA(ctx, env.Config, ns); err != nil {
			t.Fatal(err)
		}
	}
	// Another ServiceAccount of A holding the same grant: not the build identity.
	if err := admin.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: a, Name: "gitops"}}); err != nil {
		t.Fatal(err)
	}
	if err := admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: a, Name: "gitops-keda"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "func-operator-builder-keda"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: a, Name: "gitops"}}}); err != nil {
		t.Fatal(err)
	}
	as := func(ns, sa string) client.Client {
		t.Helper()
		cfg := rest.CopyConfig(env.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":" + sa,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}}
		c, err := client.New(cfg, client.Options{Scheme: admin.Scheme()})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	builderA, builderB, gitopsA := as(a, "func-operator-builder"), as(b, "func-operator-builder"), as(a, "gitops")

	// Before the policy: RBAC alone lets A's build identity claim B's host. The
	// RoleBinding reaches the authorizer a moment after it is made.
	attack := scaledObject(a, "x", "x-interceptor-bridge."+b+".svc")
	eventually(t, 10*time.Second, func() string {
		if err := builderA.Create(ctx, attack.DeepCopy()); err != nil {
			return "A's build identity claiming B's host without the policy: " + err.Error()
		}
		return ""
	})
	if err := admin.Delete(ctx, attack); err != nil {
		t.Fatal(err)
	}

	if _, err := envtest.Apply(ctx, env.Config, envtest.KedaHostsPolicyFile); err != nil {
		t.Fatal(err)
	}
	// The policy is in force a moment after it is made: until then the attack is
	// admitted, and taken back.
	wantFirst := "HTTPScaledObject x: system:serviceaccount:" + a + ":func-operator-builder may claim only the hosts func's keda deployer writes for it, " +
		"x-interceptor-bridge." + a + ".svc and x-interceptor-bridge, not x-interceptor-bridge." + b + ".svc: " +
		"the KEDA HTTP add-on routes hosts cluster-wide (config/320-keda-hosts-policy.yaml)"
	eventually(t, 10*time.Second, func() string {
		err := builderA.Create(ctx, attack.DeepCopy())
		if err == nil {
			if err := admin.Delete(ctx, attack); err != nil {
				t.Fatal(err)
			}
			return "A's build identity claiming B's host: admitted, want refused"
		}
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), wantFirst) {
			return "A's build identity claiming B's host: " + err.Error() + ", want refused with " + wantFirst
		}
		return ""
	})

	// Positive control: what func's keda deployer writes, as A's build identity, is
	// admitted; so is func's update of it (a new maximum scale).
	fromFunc := funcScaledObject(t, a)
	if err := builderA.Create(ctx, fromFunc); err != nil {
		t.Fatalf("func's HTTPScaledObject, written by A's build identity: %v", err)
	}
	fromFunc.Spec.Replicas.Max = ptr.To(int32(5))
	if err := builderA.Update(ctx, fromFunc); err != nil {
		t.Fatalf("func's update of its HTTPScaledObject: %v", err)
	}

	for _, tc := range []struct {
		name string
		so   *kedav1alpha1.HTTPScaledObject
		want string
	}{{
		name: "another namespace's host, in full",
		so:   scaledObject(a, "x", "x-interceptor-bridge."+b+".svc.cluster.local"),
		want: "not x-interceptor-bridge." + b + ".svc.cluster.local:",
	}, {
		name: "another namespace's host, with a port (the add-on strips it)",
		so:   scaledObject(a, "x", "x-interceptor-bridge."+b+".svc:8080"),
		want: "not x-interceptor-bridge." + b + ".svc:8080:",
	}, {
		name: "another namespace's hosts, by a wildcard",
		so:   scaledObject(a, "x", "*."+b+".svc"),
		want: "not *." + b + ".svc:",
	}, {
		name: "an external host beside func's",
		so:   scaledObject(a, "x", "x-interceptor-bridge."+a+".svc", "x-interceptor-bridge", "api.example.com"),
		want: "x-interceptor-bridge." + a + ".svc and x-interceptor-bridge, not api.example.com:",
	}, {
		name: "another object's host of its own namespace",
		so:   scaledObject(a, "x", "hello-interceptor-bridge."+a+".svc", "hello-interceptor-bridge"),
		want: "not hello-interceptor-bridge." + a + ".svc, hello-interceptor-bridge:",
	}, {
		name: "no hosts, the add-on's catch-all",
		so:   scaledObject(a, "x"),
		want: "x-interceptor-bridge; no hosts would route every host no other HTTPScaledObject claims",
	}, {
		name: "the catch-all host",
		so:   scaledObject(a, "x", "*"),
		want: "not *:",
	}, {
		name: "func's hosts with a path prefix",
		so: withSpec(scaledObject(a, "x", "x-interceptor-bridge."+a+".svc", "x-interceptor-bridge"), func(s *kedav1alpha1.HTTPScaledObjectSpec) {
			s.PathPrefixes = []string{"/api"}
		}),
		want: "may not set pathPrefixes",
	}, {
		name: "func's hosts with headers",
		so: withSpec(scaledObject(a, "x", "x-interceptor-bridge."+a+".svc", "x-interceptor-bridge"), func(s *kedav1alpha1.HTTPScaledObjectSpec) {
			s.Headers = []kedav1alpha1.Header{{Name: "User-Agent"}}
		}),
		want: "may not set headers",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			err := builderA.Create(ctx, tc.so)
			if err == nil {
				// Admitted: out of the way of the next case.
				if err := admin.Delete(ctx, tc.so); err != nil {
					t.Fatal(err)
				}
			}
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "ValidatingAdmissionPolicy 'func-operator-keda-hosts'") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("created by A's build identity: %v, want refused by the policy with %q", err, tc.want)
			}
		})
	}

	// An update is checked too: func's object moved to B's host.
	moved := &kedav1alpha1.HTTPScaledObject{}
	if err := builderA.Get(ctx, client.ObjectKeyFromObject(fromFunc), moved); err != nil {
		t.Fatal(err)
	}
	moved.Spec.Hosts = append(moved.Spec.Hosts, "hello-interceptor-bridge."+b+".svc")
	if err := builderA.Update(ctx, moved); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "not hello-interceptor-bridge."+b+".svc:") {
		t.Errorf("func's object moved to B's host by an update: %v, want refused", err)
	}

	// Not matched: another ServiceAccount with the same grant, and an admin of B.
	if err := gitopsA.Create(ctx, scaledObject(a, "api", "api.example.com")); err != nil {
		t.Errorf("an external host, written by another ServiceAccount of A with the same ClusterRole: %v", err)
	}
	if err := admin.Create(ctx, scaledObject(b, "api", "api.example.com")); err != nil {
		t.Errorf("an external host, written by an admin: %v", err)
	}

	// What the policy cannot see: func's keda function of the same name in B claims
	// the same bare host, admitted.
	if err := builderB.Create(ctx, funcScaledObject(t, b)); err != nil {
		t.Fatalf("func's HTTPScaledObject, written by B's build identity: %v", err)
	}
	for _, ns := range []string{a, b} {
		so := &kedav1alpha1.HTTPScaledObject{}
		if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "hello"}, so); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"hello-interceptor-bridge." + ns + ".svc", "hello-interceptor-bridge"}, so.Spec.Hosts); diff != "" {
			t.Errorf("hosts of %s/hello (-want +got):\n%s", ns, diff)
		}
	}
}

// scaledObject is an HTTPScaledObject ns/name claiming hosts (none: the field left out).
func scaledObject(ns, name string, hosts ...string) *kedav1alpha1.HTTPScaledObject {
	return &kedav1alpha1.HTTPScaledObject{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: kedav1alpha1.HTTPScaledObjectSpec{Hosts: hosts,
			ScaleTargetRef: kedav1alpha1.ScaleTargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: name, Service: name, Port: 80}},
	}
}

// withSpec returns so with change applied to its spec.
func withSpec(so *kedav1alpha1.HTTPScaledObject, change func(*kedav1alpha1.HTTPScaledObjectSpec)) *kedav1alpha1.HTTPScaledObject {
	change(&so.Spec)
	return so
}

// funcScaledObject is the HTTPScaledObject func's keda deployer wrote (funcKedaFixture),
// as it writes it in namespace ns: its namespace and the host that names it moved
// there; its owner, a Deployment not made here, left out.
func funcScaledObject(t *testing.T, ns string) *kedav1alpha1.HTTPScaledObject {
	t.Helper()
	objs, err := envtest.Read(funcKedaFixture)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() != "HTTPScaledObject" {
			continue
		}
		so := &kedav1alpha1.HTTPScaledObject{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, so); err != nil {
			t.Fatal(err)
		}
		// Moved only if func still writes these hosts; else this test must learn the new ones.
		recorded := []string{so.Name + "-interceptor-bridge." + so.Namespace + ".svc", so.Name + "-interceptor-bridge"}
		if diff := cmp.Diff(recorded, so.Spec.Hosts); diff != "" {
			t.Fatalf("%s: func's hosts changed (-this test's +func's):\n%s", funcKedaFixture, diff)
		}
		so.Spec.Hosts[0] = so.Name + "-interceptor-bridge." + ns + ".svc"
		so.Namespace, so.OwnerReferences = ns, nil
		return so
	}
	t.Fatalf("%s holds no HTTPScaledObject", funcKedaFixture)
	return nil
}

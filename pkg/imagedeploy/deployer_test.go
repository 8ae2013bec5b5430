package imagedeploy

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/tenancy"
	"github.com/fnops/func-operator/test/envtest"
)

// Images of the tests, on a loopback registry that is never asked: Deploy writes
// references, it pulls nothing.
const (
	oldImage = "127.0.0.1:5000/fns/hello@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	newImage = "127.0.0.1:5000/fns/hello@sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	// thirdImage is a deploy that must not happen.
	thirdImage = "127.0.0.1:5000/fns/hello@sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"

	builder  = tenancy.BuilderServiceAccount
	function = "hello"
	oldBuilt = "20250101T000000"
)

// deployTime is the clock of the tests' Deployers: func's BUILT becomes it.
var deployTime = time.Date(2026, 7, 1, 12, 30, 45, 0, time.UTC)

// TestDeploy deploys a new digest, as the operator, into what func's knative, raw and
// keda deployers wrote, in a namespace that onboarded it. The image changes, with
// what func changes beside it on an update, and nothing else. The write was made as
// the build ServiceAccount: an admission policy of the test refuses updates of these
// objects by anyone else there (its positive control: the admin's update is refused).
func TestDeploy(t *testing.T) {
	apiServer(t)
	ctx := context.Background()
	onlyTheBuilderUpdates(t)
	for _, deployer := range funclib.Deployers() {
		t.Run(deployer, func(t *testing.T) {
			ns := newNamespace(t, true)
			label(t, ns, onlyBuilderLabel)
			createFunction(t, deployer, ns)
			before := get(t, deployer, ns)
			// A dry run is admitted as the update would be, and changes nothing.
			envtest.Until(t, "the test's policy refuses the admin's update", func() bool {
				o := before.DeepCopy()
				o.SetAnnotations(map[string]string{"by": "admin"})
				err := admin.Update(ctx, o, client.DryRunAll)
				return err != nil && strings.Contains(err.Error(), "not the build ServiceAccount")
			})

			d := &Deployer{Config: operatorConfig, clock: clocktesting.NewFakePassiveClock(deployTime)}
			target := Target{Deployer: deployer, Namespace: ns, Name: function}
			w := deploy(t, d, target, builder, newImage)

			after := get(t, deployer, ns)
			want := before.DeepCopy()
			setContainer(t, want, deployer, newImage, deployTime.Format(builtLayout))
			if deployer == funclib.DeployerKnative {
				unstructured.RemoveNestedField(want.Object, "spec", "template", "metadata", "name")
			}
			if diff := cmp.Diff(want.Object["spec"], after.Object["spec"]); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before.GetLabels(), after.GetLabels()); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before.GetAnnotations(), after.GetAnnotations()); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
			wantW := Written{Image: newImage, Generation: before.GetGeneration() + 1, ResourceVersion: after.GetResourceVersion(), Changed: true}
			if diff := cmp.Diff(wantW, w); diff != "" {
				t.Errorf("Written (-want +got):\n%s", diff)
			}
			if !managedBy(after, FieldManager) {
				t.Errorf("managedFields name no manager %s: %+v", FieldManager, after.GetManagedFields())
			}

			// Again: it runs the image already, and nothing is written.
			again, err := d.Deploy(ctx, target, builder, newImage)
			if err != nil {
				t.Fatal(err)
			}
			if again.Changed || again.ResourceVersion != after.GetResourceVersion() {
				t.Errorf("a second Deploy of the same image: %+v, want no write (resourceVersion %s)", again, after.GetResourceVersion())
			}
		})
	}
}

// TestDeploy_NotOnboarded: in a namespace that did not onboard the operator, the
// impersonation is refused with an error that names the grant and the manifest, and
// nothing changes. Onboarding it (the positive control) lets the same Deploy through.
func TestDeploy_NotOnboarded(t *testing.T) {
	apiServer(t)
	ctx := context.Background()
	for _, deployer := range []string{funclib.DeployerKnative, funclib.DeployerRaw} {
		t.Run(deployer, func(t *testing.T) {
			ns := newNamespace(t, false)
			createFunction(t, deployer, ns)
			before := get(t, deployer, ns)
			d := &Deployer{Config: operatorConfig}
			target := Target{Deployer: deployer, Namespace: ns, Name: function}

			_, err := d.Deploy(ctx, target, builder, newImage)
			f := wantForbidden(t, err, true)
			if f.Grant != tenancy.ImpersonateGrant(builder) {
				t.Errorf("grant %v, want %v", f.Grant, tenancy.ImpersonateGrant(builder))
			}
			for _, w := range []string{
				"the operator may not impersonate serviceaccounts named func-operator-builder (ClusterRole func-operator-namespace, RoleBinding func-operator-namespace)",
				"kubectl apply -n " + ns + " -f config/namespace/onboard.yaml",
			} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not say %q", err, w)
				}
			}
			unchanged(t, deployer, before)

			if err := envtest.Onboard(ctx, adminConfig, ns); err != nil {
				t.Fatal(err)
			}
			deploy(t, d, target, builder, newImage)
			if got := image(t, get(t, deployer, ns), deployer); got != newImage {
				t.Errorf("once onboarded: image %s, want %s", got, newImage)
			}
		})
	}
}

// TestDeploy_OnlyTheBuildServiceAccount: onboarding lets the operator impersonate
// func-operator-builder alone (resourceNames). Another ServiceAccount of the same
// namespace, even one bound to the same ClusterRole, and `default`, are refused, and
// nothing changes; func-operator-builder (the positive control, first) is allowed.
func TestDeploy_OnlyTheBuildServiceAccount(t *testing.T) {
	apiServer(t)
	ctx := context.Background()
	ns := newNamespace(t, true)
	const other = "other-builder"
	mustCreate(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: other}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: other},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: tenancy.BuilderClusterRole},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: other}}})
	createFunction(t, funclib.DeployerKnative, ns)
	d := &Deployer{Config: operatorConfig}
	target := Target{Deployer: funclib.DeployerKnative, Namespace: ns, Name: function}
	deploy(t, d, target, builder, newImage)
	before := get(t, funclib.DeployerKnative, ns)

	for _, sa := range []string{other, "default"} {
		_, err := d.Deploy(ctx, target, sa, thirdImage)
		f := wantForbidden(t, err, true)
		if f.Grant != tenancy.ImpersonateGrant(sa) || !strings.Contains(err.Error(), "may not impersonate serviceaccounts named "+sa) {
			t.Errorf("as %s: %v (grant %v), want the impersonation of %s refused", sa, err, f.Grant, sa)
		}
	}
	unchanged(t, funclib.DeployerKnative, before)
}

// TestOperator_NoDirectWrite: the operator's own identity, without impersonation, may
// not update or patch the Knative Service or the Deployment, even in a namespace that
// onboarded it; it may read them (the positive control: same identity, same objects),
// and Deploy, impersonating, writes them.
func TestOperator_NoDirectWrite(t *testing.T) {
	apiServer(t)
	ctx := context.Background()
	ns := newNamespace(t, true)
	op, err := client.New(operatorConfig, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, deployer := range []string{funclib.DeployerKnative, funclib.DeployerRaw} {
		t.Run(deployer, func(t *testing.T) {
			createFunction(t, deployer, ns)
			o := get(t, deployer, ns)
			if err := op.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
				t.Fatalf("the operator's read: %v", err)
			}
			before := o.DeepCopy()
			setContainer(t, o, deployer, thirdImage, "")
			if err := op.Update(ctx, o); !apierrors.IsForbidden(err) {
				t.Errorf("the operator's own update: %v, want forbidden", err)
			}
			patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"annotations":{"by":"operator"}}}`))
			if err := op.Patch(ctx, before.DeepCopy(), patch); !apierrors.IsForbidden(err) {
				t.Errorf("the operator's own patch: %v, want forbidden", err)
			}
			unchanged(t, deployer, before)

			deploy(t, &Deployer{Config: operatorConfig}, Target{Deployer: deployer, Namespace: ns, Name: function}, builder, newImage)
			if got := image(t, get(t, deployer, ns), deployer); got != newImage {
				t.Errorf("Deploy: image %s, want %s", got, newImage)
			}
		})
	}
}

// TestDeploy_BuilderGrantRevoked: once the namespace takes the build ServiceAccount's
// grant back (RoleBinding func-operator-builder), the impersonation still works but
// the read is refused: the error names the build ServiceAccount's missing grant, and
// nothing changes. Before (the positive control) the same Deploy went through.
func TestDeploy_BuilderGrantRevoked(t *testing.T) {
	apiServer(t)
	ctx := context.Background()
	ns := newNamespace(t, true)
	createFunction(t, funclib.DeployerRaw, ns)
	d := &Deployer{Config: operatorConfig}
	target := Target{Deployer: funclib.DeployerRaw, Namespace: ns, Name: function}
	deploy(t, d, target, builder, newImage)
	before := get(t, funclib.DeployerRaw, ns)

	mustDelete(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tenancy.BuilderClusterRole}})
	var err error
	// The authorizer sees a revocation a moment later, and may still allow the read
	// while it refuses the write: wait until it refuses the read too.
	envtest.Until(t, "the revocation is seen", func() bool {
		_, err = d.Deploy(ctx, target, builder, thirdImage)
		return err != nil && strings.Contains(err.Error(), "may not get")
	})
	f := wantForbidden(t, err, false)
	if want := (tenancy.Grant{Group: "apps", Resource: "deployments", Verb: "get"}); f.Grant != want {
		t.Errorf("grant %v, want %v", f.Grant, want)
	}
	if w := "the build ServiceAccount func-operator-builder may not get deployments.apps (ClusterRole func-operator-builder, RoleBinding func-operator-builder)"; !strings.Contains(err.Error(), w) {
		t.Errorf("error %q\ndoes not say %q", err, w)
	}
	unchanged(t, funclib.DeployerRaw, before)
}

// TestDeploy_RefusesWhatItMustNotWrite: a Deployment another func deployer wrote
// than the caller names (the function was redeployed since), a Knative Service being
// deleted, and an update an admission policy refuses, are left as they are; the
// positive control is TestDeploy.
func TestDeploy_RefusesWhatItMustNotWrite(t *testing.T) {
	apiServer(t)
	ctx := context.Background()
	ns := newNamespace(t, true)
	d := &Deployer{Config: operatorConfig}

	createFunction(t, funclib.DeployerKeda, ns)
	before := get(t, funclib.DeployerKeda, ns)
	var err error
	envtest.Until(t, "onboarding is seen", func() bool {
		_, err = d.Deploy(ctx, Target{Deployer: funclib.DeployerRaw, Namespace: ns, Name: function}, builder, newImage)
		return err != nil && !IsForbidden(err)
	})
	if !strings.Contains(err.Error(), `func's "keda" deployer wrote it`) {
		t.Errorf("raw target of a keda Deployment: %v, want it refused", err)
	}
	unchanged(t, funclib.DeployerKeda, before)

	createFunction(t, funclib.DeployerKnative, ns)
	svc := &servingv1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: function}}
	if err := admin.Get(ctx, client.ObjectKeyFromObject(svc), svc); err != nil {
		t.Fatal(err)
	}
	svc.Finalizers = []string{"test.functions.dev/hold"}
	if err := admin.Update(ctx, svc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		svc := &servingv1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: function}}
		_ = admin.Patch(context.Background(), svc, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`)))
	})
	if err := admin.Delete(ctx, svc); err != nil {
		t.Fatal(err)
	}
	before = get(t, funclib.DeployerKnative, ns)
	_, err = d.Deploy(ctx, Target{Deployer: funclib.DeployerKnative, Namespace: ns, Name: function}, builder, newImage)
	if err == nil || !strings.Contains(err.Error(), "being deleted") {
		t.Errorf("a Knative Service being deleted: %v, want it refused", err)
	}
	unchanged(t, funclib.DeployerKnative, before)

	// An admission policy's refusal may be a 403 too (reason Forbidden), and is no
	// missing grant: it is passed on as the API server's, not as a ForbiddenError.
	noOneUpdates(t)
	ns = newNamespace(t, true)
	label(t, ns, noUpdatesLabel)
	createFunction(t, funclib.DeployerRaw, ns)
	before = get(t, funclib.DeployerRaw, ns)
	// The policy in force (a dry run changes nothing), and the namespace's onboarding
	// seen (the builder may read the Deployment), before the one Deploy.
	envtest.Until(t, "the policy refuses the admin's update", func() bool {
		err := admin.Update(ctx, before.DeepCopy(), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "refused by the test policy")
	})
	envtest.Until(t, "onboarding is seen", func() bool {
		_, err = d.Deploy(ctx, Target{Deployer: funclib.DeployerRaw, Namespace: ns, Name: function}, builder, newImage)
		return err != nil && !IsForbidden(err)
	})
	if !strings.Contains(err.Error(), "refused by the test policy") {
		t.Errorf("Deploy: %v, want the policy's refusal", err)
	}
	if IsForbidden(err) || tenancy.IsNotOnboarded(err) || !apierrors.IsForbidden(err) {
		t.Errorf("an admission policy's refusal: %v: IsForbidden %t, tenancy.IsNotOnboarded %t, apierrors.IsForbidden %t; want false, false, true",
			err, IsForbidden(err), tenancy.IsNotOnboarded(err), apierrors.IsForbidden(err))
	}
	unchanged(t, funclib.DeployerRaw, before)
}

// deploy calls Deploy until it succeeds, for 10 seconds: the API server's authorizer
// sees a namespace's onboarding a moment after it is applied.
func deploy(t *testing.T, d *Deployer, target Target, serviceAccount, image string) Written { //nolint:unparam // the ServiceAccount is what the tests are about
	t.Helper()
	var w Written
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if w, err = d.Deploy(context.Background(), target, serviceAccount, image); err == nil {
			return w
		}
	}
	t.Fatalf("Deploy(%+v, %s, %s): %v", target, serviceAccount, image, err)
	return w
}

// wantForbidden fails the test unless err is a *ForbiddenError of the impersonation
// (impersonation) or of the build ServiceAccount's request, which tenancy and
// apierrors tell too.
func wantForbidden(t *testing.T, err error, impersonation bool) *ForbiddenError {
	t.Helper()
	var f *ForbiddenError
	if !errors.As(err, &f) || !IsForbidden(err) || !tenancy.IsNotOnboarded(err) || !apierrors.IsForbidden(err) {
		t.Fatalf("Deploy: %v, want a ForbiddenError (IsForbidden, tenancy.IsNotOnboarded, apierrors.IsForbidden)", err)
	}
	if f.Impersonation != impersonation {
		t.Fatalf("Deploy: %v: Impersonation %t, want %t", err, f.Impersonation, impersonation)
	}
	return f
}

// newNamespace creates a namespace of its own for a test, onboarded when onboard is set.
func newNamespace(t *testing.T, onboard bool) string {
	t.Helper()
	return envtest.NewNamespace(t, adminConfig, "imagedeploy-test-", onboard)
}

// createFunction creates, as the admin, what func's deployer wrote for function in ns,
// running oldImage: for raw and keda the Deployment func v0.50.1 wrote, recorded
// (pkg/funclib/testdata/deployers); for knative a Service as its knative deployer
// writes it, with a template name as another writer (kn) may have left.
func createFunction(t *testing.T, deployer, ns string) {
	t.Helper()
	var obj *unstructured.Unstructured
	if deployer == funclib.DeployerKnative {
		labels := map[string]string{"boson.dev/function": "true", "function.knative.dev/name": function, "function.knative.dev/runtime": "go"}
		annotations := map[string]string{funclib.DeployerAnnotation: funclib.DeployerKnative}
		svc := &servingv1.Service{
			TypeMeta:   metav1.TypeMeta{APIVersion: "serving.knative.dev/v1", Kind: "Service"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: function, Labels: labels, Annotations: annotations},
			Spec: servingv1.ServiceSpec{ConfigurationSpec: servingv1.ConfigurationSpec{Template: servingv1.RevisionTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Name: function + "-first", Labels: labels, Annotations: annotations},
				Spec: servingv1.RevisionSpec{PodSpec: corev1.PodSpec{Containers: []corev1.Container{{
					Image: oldImage,
					Env:   []corev1.EnvVar{{Name: "BUILT", Value: oldBuilt}, {Name: "ADDRESS", Value: "0.0.0.0"}},
				}}}},
			}}},
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(svc)
		if err != nil {
			t.Fatal(err)
		}
		obj = &unstructured.Unstructured{Object: m}
	} else {
		objs, err := envtest.Read("pkg/funclib/testdata/deployers/" + deployer + ".yaml")
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if o.GetKind() == "Deployment" {
				obj = o
				break
			}
		}
		if obj == nil {
			t.Fatalf("no Deployment in func's %s fixture", deployer)
		}
		obj.SetNamespace(ns)
		setContainer(t, obj, deployer, oldImage, oldBuilt)
	}
	if err := admin.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %s's %s: %v", deployer, obj.GetKind(), err)
	}
}

// get reads, as the admin, what createFunction made in ns.
func get(t *testing.T, deployer, ns string) *unstructured.Unstructured {
	t.Helper()
	o := &unstructured.Unstructured{}
	if deployer == funclib.DeployerKnative {
		o.SetAPIVersion("serving.knative.dev/v1")
		o.SetKind("Service")
	} else {
		o.SetAPIVersion("apps/v1")
		o.SetKind("Deployment")
	}
	if err := admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: function}, o); err != nil {
		t.Fatal(err)
	}
	return o
}

// unchanged fails the test when the object before was written since.
func unchanged(t *testing.T, deployer string, before *unstructured.Unstructured) {
	t.Helper()
	after := get(t, deployer, before.GetNamespace())
	if after.GetResourceVersion() != before.GetResourceVersion() || image(t, after, deployer) != image(t, before, deployer) {
		t.Errorf("written: resourceVersion %s, image %s; want %s, %s as before", after.GetResourceVersion(), image(t, after, deployer),
			before.GetResourceVersion(), image(t, before, deployer))
	}
}

// container returns the function's container of obj, as func's deployer names it: the
// first (knative) or user-container (raw, keda). Tests edit it in place.
func container(t *testing.T, obj *unstructured.Unstructured, deployer string) map[string]any {
	t.Helper()
	spec, _ := obj.Object["spec"].(map[string]any)
	tmpl, _ := spec["template"].(map[string]any)
	pod, _ := tmpl["spec"].(map[string]any)
	cs, _ := pod["containers"].([]any)
	for i, c := range cs {
		m, _ := c.(map[string]any)
		if (deployer == funclib.DeployerKnative && i == 0) || (deployer != funclib.DeployerKnative && m["name"] == "user-container") {
			return m
		}
	}
	t.Fatalf("no function container in %s", obj.GetName())
	return nil
}

func image(t *testing.T, obj *unstructured.Unstructured, deployer string) string {
	t.Helper()
	s, _ := container(t, obj, deployer)["image"].(string)
	return s
}

// setContainer sets the function's container's image and, when built is not empty,
// its BUILT variable.
func setContainer(t *testing.T, obj *unstructured.Unstructured, deployer, img, built string) {
	t.Helper()
	c := container(t, obj, deployer)
	c["image"] = img
	if built == "" {
		return
	}
	env, _ := c["env"].([]any)
	for _, e := range env {
		if m, _ := e.(map[string]any); m["name"] == "BUILT" {
			m["value"] = built
			return
		}
	}
	t.Fatalf("no BUILT in %s's container", obj.GetName())
}

func managedBy(obj *unstructured.Unstructured, manager string) bool {
	for _, f := range obj.GetManagedFields() {
		if f.Manager == manager && f.Operation == metav1.ManagedFieldsOperationUpdate {
			return true
		}
	}
	return false
}

// onlyBuilderLabel marks the namespaces where only their build ServiceAccount may
// update Knative Services and Deployments (onlyTheBuilderUpdates).
const onlyBuilderLabel = "imagedeploy-test.functions.dev/only-the-builder-updates"

// noUpdatesLabel marks the namespaces where no one may (noOneUpdates).
const noUpdatesLabel = "imagedeploy-test.functions.dev/no-updates"

// onlyTheBuilderUpdates installs, once, an admission policy of the tests: in a
// namespace labelled onlyBuilderLabel, only the namespace's build ServiceAccount may
// update Knative Services and Deployments. An update that passes was made as it.
func onlyTheBuilderUpdates(t *testing.T) {
	t.Helper()
	updatePolicy(t, "imagedeploy-test-only-the-builder-updates", onlyBuilderLabel,
		"request.userInfo.username == 'system:serviceaccount:' + request.namespace + ':"+builder+"'",
		"'updated by ' + request.userInfo.username + ', not the build ServiceAccount'", "")
}

// noOneUpdates installs, once, an admission policy of the tests that refuses every
// update of Knative Services and Deployments in a namespace labelled noUpdatesLabel,
// with a 403 (reason Forbidden), as RBAC refuses.
func noOneUpdates(t *testing.T) {
	t.Helper()
	updatePolicy(t, "imagedeploy-test-no-updates", noUpdatesLabel, "false", "'refused by the test policy imagedeploy-test-no-updates'",
		metav1.StatusReasonForbidden)
}

// updatePolicy installs a ValidatingAdmissionPolicy, bound to the namespaces labelled
// label, that admits an update of a Knative Service or Deployment when expression
// holds, and refuses it with reason (the API server's default, Invalid, when empty).
func updatePolicy(t *testing.T, name, label, expression, message string, reason metav1.StatusReason) {
	t.Helper()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{"serving.knative.dev", "apps"}, APIVersions: []string{"*"},
						Resources: []string{"services", "deployments"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: expression, MessageExpression: message}},
		},
	}
	if reason != "" {
		policy.Spec.Validations[0].Reason = &reason
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{label: "true"}}},
		},
	}
	for _, o := range []client.Object{policy, binding} {
		if err := admin.Create(context.Background(), o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}

func label(t *testing.T, ns, key string) {
	t.Helper()
	n := &corev1.Namespace{}
	if err := admin.Get(context.Background(), client.ObjectKey{Name: ns}, n); err != nil {
		t.Fatal(err)
	}
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels[key] = "true"
	if err := admin.Update(context.Background(), n); err != nil {
		t.Fatal(err)
	}
}

func mustCreate(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := admin.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

func mustDelete(t *testing.T, o client.Object) {
	t.Helper()
	if err := admin.Delete(context.Background(), o); err != nil {
		t.Fatalf("deleting %T %s: %v", o, o.GetName(), err)
	}
}

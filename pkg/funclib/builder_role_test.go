package funclib

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	httpv1alpha1 "github.com/kedacore/http-add-on/operator/apis/http/v1alpha1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	eventingv1 "knative.dev/eventing/pkg/apis/eventing/v1"
	fn "knative.dev/func/pkg/functions"
	"knative.dev/func/pkg/knative"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/test/envtest"
)

// builderFuncYAML is a function that uses everything func's deployer checks or
// writes: Secret and ConfigMap envs and volumes, a PVC, its own ServiceAccount and
// a subscription.
const builderFuncYAML = `
specVersion: 0.36.0
name: hello
runtime: go
image: 127.0.0.1:5000/fns/hello:latest
run:
  envs:
  - name: DB_PASSWORD
    value: '{{ secret:db:password }}'
  - value: '{{ configMap:settings }}'
  volumes:
  - secret: db
    path: /db
  - configMap: settings
    path: /cfg
  - persistentVolumeClaim:
      claimName: data
    path: /data
deploy:
  serviceAccountName: fn-runner
  subscriptions:
  - source: default
    filters:
      type: greeting
`

// TestBuilderClusterRole runs the deploy step's own code, func's knative deployer (as
// the func-utils image runs it in a build), as the build ServiceAccount of a namespace
// onboarded with config/namespace/onboard.yaml: the ClusterRole func-operator-builder
// is enough to deploy, and then update, a function that uses every kind of reference.
// Without the RoleBinding, the same deploy is refused (the negative control).
func TestBuilderClusterRole(t *testing.T) {
	b := setUpBuilder(t, envtest.KnativeServingCRDs, envtest.KnativeEventingCRDs)
	ctx, admin, ns, f := b.ctx, b.admin, b.ns, b.f
	go simulateKnativeServing(ctx, t, admin, ns)

	deploy := func() (fn.DeploymentResult, error) {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		return knative.NewDeployer().Deploy(ctx, f)
	}
	res, err := deploy()
	if err != nil {
		t.Fatalf("deploying as the build ServiceAccount: %v", err)
	}
	if res.Status != fn.Deployed {
		t.Errorf("first deploy: %+v, want Deployed", res)
	}
	svc := &servingv1.Service{}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "hello"}, svc); err != nil {
		t.Fatal(err)
	}
	if sa := svc.Spec.Template.Spec.ServiceAccountName; sa != "fn-runner" || len(svc.Spec.Template.Spec.Volumes) != 3 {
		t.Errorf("Service runs as %q with %d volumes, want fn-runner with 3", sa, len(svc.Spec.Template.Spec.Volumes))
	}
	trigger := &eventingv1.Trigger{}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "hello-function-trigger-0"}, trigger); err != nil {
		t.Errorf("the subscription's Trigger: %v", err)
	}

	// A rebuild updates the Service it deployed.
	f.Deploy.Image = "127.0.0.1:5000/fns/hello@sha256:" + strings.Repeat("b", 64)
	if res, err := deploy(); err != nil || res.Status != fn.Updated {
		t.Fatalf("updating as the build ServiceAccount: %+v, %v", res, err)
	}

	// The negative control: without its RoleBinding, the same ServiceAccount may not.
	b.revoke(t, "serving.knative.dev", "services")
	f.Deploy.Image = f.Image
	_, err = deploy()
	if err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("deploying without the RoleBinding: %v, want forbidden", err)
	}
}

// builderSetup is a control plane with namespace tenant onboarded
// (config/namespace/onboard.yaml), the objects builderFuncYAML references, and func's
// clients acting as the build ServiceAccount (KUBECONFIG) for the test.
type builderSetup struct {
	env   *envtest.Environment
	ctx   context.Context
	admin client.Client
	ns    string
	// f is builderFuncYAML, to deploy to ns.
	f fn.Function
	// token is the build ServiceAccount's.
	token string
}

// setUpBuilder starts the control plane with extraCRDs for one test.
func setUpBuilder(t *testing.T, extraCRDs ...string) *builderSetup {
	t.Helper()
	env := envtest.StartT(t, extraCRDs...)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if _, err := envtest.Apply(ctx, env.Config, "config/200-builder-clusterrole.yaml", "config/200-builder-keda-clusterrole.yaml"); err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, servingv1.AddToScheme, eventingv1.AddToScheme, httpv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	admin, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	const ns = "tenant"
	create := func(objs ...client.Object) {
		t.Helper()
		for _, o := range objs {
			if err := admin.Create(ctx, o); err != nil {
				t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
			}
		}
	}
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
	create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if err := envtest.Onboard(ctx, env.Config, ns); err != nil {
		t.Fatal(err)
	}
	create(
		&corev1.Secret{ObjectMeta: meta("db"), StringData: map[string]string{"password": "pw-db-3b1c9"}},
		&corev1.ConfigMap{ObjectMeta: meta("settings"), Data: map[string]string{"GREETING": "hi"}},
		&corev1.PersistentVolumeClaim{ObjectMeta: meta("data"), Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		}},
		&corev1.ServiceAccount{ObjectMeta: meta("fn-runner")},
	)

	// func's clients, as in the build's deploy step, act as the build ServiceAccount.
	tr := &authenticationv1.TokenRequest{}
	if err := admin.SubResource("token").Create(ctx, &corev1.ServiceAccount{ObjectMeta: meta("func-operator-builder")}, tr); err != nil {
		t.Fatal(err)
	}
	b := &builderSetup{env: env, ctx: ctx, admin: admin, ns: ns, token: tr.Status.Token}
	b.pointFuncAt(t, env.Config.Host, env.Config.CAData)

	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "func.yaml"), []byte(builderFuncYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := fn.NewFunction(root)
	if err != nil {
		t.Fatal(err)
	}
	f.Namespace, f.Deploy.Image = ns, f.Image
	b.f = f
	return b
}

// pointFuncAt points func's clients (KUBECONFIG, for the rest of the test) at the
// API server at server, whose certificate ca signs, as the build ServiceAccount.
func (b *builderSetup) pointFuncAt(t *testing.T, server string, ca []byte) {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	kc.AuthInfos["builder"] = &clientcmdapi.AuthInfo{Token: b.token}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "builder", Namespace: b.ns}
	kc.CurrentContext = "c"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	t.Setenv(clientcmd.RecommendedConfigPathEnvVar, path)
}

// revoke deletes the build ServiceAccount's RoleBinding and waits until the API
// server's authorizer, which learns of the deletion through its own watch, refuses it
// get on resources of group: so that a deploy meets one refusal, not a mix.
func (b *builderSetup) revoke(t *testing.T, group, resources string) {
	t.Helper()
	b.revokeBinding(t, "func-operator-builder", group, resources)
}

// revokeBinding is revoke for RoleBinding binding.
func (b *builderSetup) revokeBinding(t *testing.T, binding, group, resources string) {
	t.Helper()
	if err := b.admin.Delete(b.ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: b.ns, Name: binding}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               "system:serviceaccount:" + b.ns + ":func-operator-builder",
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: b.ns, Verb: "get", Group: group, Resource: resources},
		}}
		if err := b.admin.Create(b.ctx, sar); err != nil {
			t.Fatal(err)
		}
		if !sar.Status.Allowed {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the build ServiceAccount may still get %s.%s 30s after its RoleBinding was deleted", resources, group)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// simulateKnativeServing plays the part of the Knative Serving controller, which
// envtest has not: each Service of namespace that is not Ready for its generation is
// made Ready, with a Route that has its URL. It writes as admin.
func simulateKnativeServing(ctx context.Context, t *testing.T, admin client.Client, namespace string) {
	for ctx.Err() == nil {
		var list servingv1.ServiceList
		if err := admin.List(ctx, &list, client.InNamespace(namespace)); err == nil {
			for i := range list.Items {
				s := &list.Items[i]
				if s.Status.ObservedGeneration == s.Generation && s.IsReady() {
					continue
				}
				url := &apis.URL{Scheme: "http", Host: "127.0.0.1", Path: "/" + namespace + "/" + s.Name}
				route := &servingv1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: s.Name}}
				if err := admin.Create(ctx, route); err != nil && !apierrors.IsAlreadyExists(err) {
					t.Errorf("simulation: creating Route: %v", err)
				}
				if err := admin.Get(ctx, client.ObjectKeyFromObject(route), route); err == nil {
					route.Status.URL = url
					_ = admin.Status().Update(ctx, route)
				}
				s.Status.ObservedGeneration = s.Generation
				s.Status.URL = url
				s.Status.LatestCreatedRevisionName = s.Name + "-00001"
				s.Status.LatestReadyRevisionName = s.Name + "-00001"
				s.Status.Conditions = duckv1.Conditions{
					{Type: apis.ConditionReady, Status: corev1.ConditionTrue},
					{Type: servingv1.ServiceConditionConfigurationsReady, Status: corev1.ConditionTrue},
					{Type: servingv1.ServiceConditionRoutesReady, Status: corev1.ConditionTrue},
				}
				_ = admin.Status().Update(ctx, s)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

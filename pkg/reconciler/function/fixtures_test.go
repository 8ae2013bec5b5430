package function

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/git"
	"github.com/fnops/func-operator/pkg/knative"
	"github.com/fnops/func-operator/pkg/registry"
	"github.com/fnops/func-operator/pkg/tenancy"
	"github.com/fnops/func-operator/test/envtest"
	"github.com/fnops/func-operator/test/gitserver"
)

// Credentials the test repositories require. They must never show up in a status,
// an event or an error.
const (
	testToken    = "tok-9f8e7d6c5b4a-secret"
	testUser     = "alice"
	testPassword = "pw-1a2b3c4d5e-secret"
	// envSecret is in the operator's environment during the tests: func.yaml must
	// never be able to read it.
	envSecret = "env-value-should-never-leak"
)

func funcYAML(name, runtime string) string {
	return fmt.Sprintf("specVersion: 0.36.0\nname: %s\nruntime: %s\ninvoke: http\nbuild:\n  builder: pack\n", name, runtime)
}

// gitFixture is a set of real repositories served over smart HTTP.
type gitFixture struct {
	http                          *gitserver.HTTPServer
	public, private, basic, trunk *gitserver.Repo
}

func newGitFixture(t *testing.T) *gitFixture {
	t.Helper()
	root := gitserver.NewRepoRoot(t)
	f := &gitFixture{http: gitserver.StartHTTP(t, root)}

	f.public = gitserver.CreateRepo(t, root, "public")
	f.public.Commit(t, "main", map[string]string{
		"func.yaml":          funcYAML("hello", "go"),
		"fns/echo/func.yaml": funcYAML("echo", "node"),
		"fns/README.md":      "functions of the monorepo\n",
		"notafunction/x.txt": "no func.yaml here\n",
		"fns/linked/x.txt":   "x\n",
		"fns/bad/func.yaml":  "name: [unclosed\n",
		"fns/unsafe/func.yaml": funcYAML("unsafe", "go") +
			"run:\n  envs:\n  - name: LEAK\n    value: '{{ env:FUNC_OPERATOR_TEST_SECRET }}'\n",
	}, "functions")
	f.public.Tag(t, "v1.0.0", f.public.Head(t, "main"), true)

	f.private = gitserver.CreateRepo(t, root, "private")
	f.private.Commit(t, "main", map[string]string{"func.yaml": funcYAML("private", "python")}, "private function")
	f.http.RequireToken("private", testToken)

	f.basic = gitserver.CreateRepo(t, root, "basic")
	f.basic.Commit(t, "main", map[string]string{"func.yaml": funcYAML("basic", "quarkus")}, "basic-auth function")
	f.http.RequireBasicAuth("basic", testUser, testPassword)

	f.trunk = gitserver.CreateRepo(t, root, "trunk")
	f.trunk.Commit(t, "trunk", map[string]string{"func.yaml": funcYAML("trunky", "rust")}, "on trunk")
	f.trunk.SetHEAD(t, "trunk")
	return f
}

// newTestReconciler returns a Reconciler on the shared control plane. It reads
// straight from the API server (no cache), which the direct step tests rely on.
func newTestReconciler(t *testing.T, events int) (*Reconciler, *record.FakeRecorder) {
	t.Helper()
	apiServer(t)
	rec := record.NewFakeRecorder(events)
	services := &knative.Services{Reader: k8sClient}
	return &Reconciler{
		Describer: funclib.NewDescriber(services),
		Services:  services,
		Inspector: registry.NewInspector(0),
		Client:    k8sClient,
		APIReader: k8sClient,
		Recorder:  rec,
		Config:    config.NewStore(),
		Fetcher:   git.NewFetcher(t.TempDir(), 0),
		Access:    &tenancy.NamespaceAccess{Client: k8sClient, Reader: k8sClient},
		Secrets:   &tenancy.Secrets{Reader: k8sClient},
	}, rec
}

func newFunction(ns, name string, repo v1alpha1.Repository) *v1alpha1.Function {
	return &v1alpha1.Function{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.FunctionSpec{Repository: repo},
	}
}

func secretRef(name string) *corev1.LocalObjectReference {
	return &corev1.LocalObjectReference{Name: name}
}

func mustCreate(t *testing.T, objs ...client.Object) {
	t.Helper()
	apiServer(t)
	for _, o := range objs {
		if err := k8sClient.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

func getFunction(t *testing.T, ns, name string) *v1alpha1.Function {
	t.Helper()
	apiServer(t)
	fn := &v1alpha1.Function{}
	if err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, fn); err != nil {
		t.Fatalf("getting Function %s/%s: %v", ns, name, err)
	}
	return fn
}

func reconcileOnce(t *testing.T, r *Reconciler, ns, name string) (reconcile.Result, error) {
	t.Helper()
	return r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}})
}

// asOperator is a client with the operator's identity and only the RBAC of config/.
func asOperator(t *testing.T) client.Client {
	t.Helper()
	apiServer(t)
	c, err := client.New(envtest.AsOperator(restConfig), client.Options{Scheme: k8sClient.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// until polls cond for 10 seconds.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("not within 10s: %s", what)
}

func onboard(t *testing.T, ns string) {
	t.Helper()
	apiServer(t)
	if err := envtest.Onboard(context.Background(), restConfig, ns); err != nil {
		t.Fatal(err)
	}
}

func mustDelete(t *testing.T, o client.Object) {
	t.Helper()
	apiServer(t)
	if err := k8sClient.Delete(context.Background(), o); err != nil {
		t.Fatalf("deleting %T %s: %v", o, o.GetName(), err)
	}
}

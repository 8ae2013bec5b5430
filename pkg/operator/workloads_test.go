package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	kedav1alpha1 "github.com/kedacore/http-add-on/operator/apis/http/v1alpha1"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"knative.dev/pkg/apis"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/rebuild"
	"github.com/fnops/func-operator/pkg/workload"
	"github.com/fnops/func-operator/test/envtest"
	"github.com/fnops/func-operator/test/gitserver"
	"github.com/fnops/func-operator/test/registrytest"
	"github.com/fnops/func-operator/test/tekton"
)

// deployAsFunc writes what func v0.50.1's raw deployer (deployer "raw") or keda
// deployer ("keda") writes for function name running image (envtest.FuncWorkload).
// The workload controllers and the kubelet simulation take it from there.
func deployAsFunc(t *testing.T, c client.Client, ns, name, image, deployer string) {
	t.Helper()
	if err := envtest.NewFuncWorkload(ns, name, image, deployer).Create(context.Background(), c); err != nil {
		t.Fatal(err)
	}
}

// conditionOf returns "" when the Function's condition t has status and reason (through c).
func conditionOf(c client.Client, ns, name string, t string, status corev1.ConditionStatus, reason string) func() string {
	return func() string {
		fn := &v1alpha1.Function{}
		if err := c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, fn); err != nil {
			return err.Error()
		}
		got := fn.Status.GetCondition(apisType(t))
		if got == nil || got.Status != status || got.Reason != reason {
			return fmt.Sprintf("%s = %+v, want %s/%s", t, got, status, reason)
		}
		return ""
	}
}

// scaleDeployment sets the replicas of Deployment name, as KEDA (or a user) would.
func scaleDeployment(t *testing.T, c client.Client, ns, name string, replicas int32) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := &appsv1.Deployment{}
		if err := c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, d); err != nil {
			return err
		}
		d.Spec.Replicas = ptr.To(replicas)
		return c.Update(context.Background(), d)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// rolledOut returns "" once Deployment name runs image on every replica, available.
func rolledOut(c client.Client, ns, name, image string) func() string {
	return func() string {
		d := &appsv1.Deployment{}
		if err := c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, d); err != nil {
			return err.Error()
		}
		s := d.Status
		if d.Spec.Template.Spec.Containers[0].Image != image || s.ObservedGeneration < d.Generation ||
			s.UpdatedReplicas != *d.Spec.Replicas || s.AvailableReplicas != *d.Spec.Replicas || s.Replicas != *d.Spec.Replicas {
			return fmt.Sprintf("Deployment %s: image %s, generation %d, status %+v", name, d.Spec.Template.Spec.Containers[0].Image, d.Generation, s)
		}
		return ""
	}
}

// TestOperator_RawFunctionWithoutKnative: on a cluster without Knative Serving (only
// the Function CRD and Tekton), a function func's raw deployer deployed is looked
// after as fully as a Knative one: Deployed, ServiceReady from the real deployment
// and replicaset controllers (the kubelet's part simulated), the middleware inspected,
// and outdated middleware rebuilt through func's pipeline on the real Tekton
// controller, verified once the Deployment rolled the new image out. Then the KEDA
// HTTP add-on is installed: without a restart, a keda function is picked up, and
// rebuilt once its namespace granted HTTPScaledObjects (onboard-keda.yaml).
func TestOperator_RawFunctionWithoutKnative(t *testing.T) {
	env := envtest.StartT(t, envtest.TektonCRDs)
	c, err := env.Client(envtestSchemes...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := envtest.Apply(context.Background(), env.Config, append(envtest.RBACFiles, envtest.PolicyFiles...)...); err != nil {
		t.Fatal(err)
	}
	tekton.StartControllerT(t, env.Config)
	env.StartControllersT(t, envtest.WorkloadControllers()...)
	ns := envtest.NewNamespace(t, env.Config, "raw-", true)
	// The rebuilt image's pods are held not ready until released: the rebuild must not
	// count before the new image serves.
	var (
		release  atomic.Bool
		oldImage string
	)
	kubelet := envtest.SimulateKubeletT(t, env.Config, envtest.KubeletOptions{Namespace: ns, NotReady: func(p *corev1.Pod) bool {
		return !release.Load() && p.Labels["function.knative.dev/name"] == "hello" && p.Spec.Containers[0].Image != oldImage
	}})

	reg := registrytest.Start(t)
	root := gitserver.NewRepoRoot(t)
	srv := gitserver.StartHTTP(t, root)
	repo := gitserver.CreateRepo(t, root, "fleet")
	commit := repo.Commit(t, "main", map[string]string{
		"hello/func.yaml":  funcYAML("hello", "go") + "registry: " + reg.Host + "/fns\ndeployer: raw\nbuild:\n  builder: pack\n",
		"scaler/func.yaml": funcYAML("scaler", "go") + "registry: " + reg.Host + "/fns\ndeployer: keda\nbuild:\n  builder: pack\n",
	}, "the fleet")
	oldImage = reg.Push(t, "fns/hello", oldMiddleware)
	deployAsFunc(t, c, ns, "hello", oldImage, "raw")
	sim := tekton.StartKubelet(t, env.Config, tekton.Options{Namespaces: []string{ns}, Registry: reg, Decide: succeed(t)})

	cfg := rebuildConfig(2)
	startOperatorOn(t, env, cfg, ns)
	for _, name := range []string{"hello", "scaler"} {
		if err := c.Create(context.Background(), &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.FunctionSpec{Repository: v1alpha1.Repository{URL: srv.URL("fleet"), Branch: "main", Path: name}}}); err != nil {
			t.Fatal(err)
		}
	}

	// Rebuilt through the real Tekton controller, and verified once rolled out.
	fnOf := func(name string) *v1alpha1.Function {
		fn := &v1alpha1.Function{}
		if err := c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, fn); err != nil {
			t.Fatal(err)
		}
		return fn
	}
	eventually(t, 90*time.Second, func() string {
		fn := fnOf("hello")
		if b := fn.Status.Build; b == nil || b.Phase != v1alpha1.BuildPhaseSucceeded {
			return fmt.Sprintf("build = %+v, conditions = %+v", fn.Status.Build, fn.Status.Conditions)
		}
		return ""
	})
	// The PipelineRun succeeded and the Deployment runs the new template, but no new
	// pod is ready: not counted, for longer than the machine's polls.
	for deadline := time.Now().Add(3 * rebuild.PollWhileWaiting); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		fn := fnOf("hello")
		mw, up := fn.Status.Middleware, fn.Status.GetCondition("MiddlewareUpToDate")
		if mw != nil && mw.LastRebuild != nil || up == nil || up.Reason != v1alpha1.ReasonRebuilding || !strings.Contains(up.Message, "waiting for Deployment hello") {
			t.Fatalf("before the new image serves: middleware %+v, MiddlewareUpToDate %+v; want the rebuild waiting for the Deployment", mw, up)
		}
	}
	release.Store(true)
	kubelet.Resync()
	eventually(t, 30*time.Second, func() string {
		if mw := fnOf("hello").Status.Middleware; mw == nil || mw.LastRebuild == nil {
			return fmt.Sprintf("middleware = %+v: the rebuild not counted once the new image serves", mw)
		}
		return ""
	})
	d := &appsv1.Deployment{}
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "hello"}, d); err != nil {
		t.Fatal(err)
	}
	newImage := d.Spec.Template.Spec.Containers[0].Image
	if newImage == oldImage || !strings.HasPrefix(newImage, reg.Host+"/fns/hello@sha256:") {
		t.Fatalf("the Deployment runs %s after the rebuild; want a new image of %s/fns/hello by digest", newImage, reg.Host)
	}
	eventually(t, 30*time.Second, rolledOut(c, ns, "hello", newImage))
	eventually(t, 30*time.Second, conditionOf(c, ns, "hello", "Ready", corev1.ConditionTrue, ""))
	fn := fnOf("hello")
	available := availableGoMiddleware(t)
	if got := fn.Status.Deployment; got.Deployer != v1alpha1.DeployerRaw || got.RequestedDeployer != v1alpha1.DeployerRaw || got.Image != newImage {
		t.Errorf("status.deployment = %+v, want deployer raw, requested raw, image %s", got, newImage)
	}
	if s := fn.Status.Service; s == nil || s.UID != d.UID || s.URL != "http://hello."+ns+".svc" || s.Ready != v1alpha1.ServiceReadyTrue {
		t.Errorf("status.service = %+v, want the Deployment's UID %s, URL http://hello.%s.svc, ready", s, d.UID, ns)
	}
	if b := fn.Status.Build; b.Commit != commit || b.FromImage != oldImage || b.ToMiddleware != available || fn.Status.Middleware.Current != available {
		t.Errorf("status.build = %+v, middleware = %+v", b, fn.Status.Middleware)
	}
	if runs := sim.Started(); len(runs) != 1 {
		t.Errorf("%d PipelineRuns started, want 1 (the keda function is not deployed yet)", len(runs))
	}

	// kubectl get functions shows the deployer (server-side printing, as kubectl asks).
	if got := printedColumn(t, env.Config, ns, "Deployer"); got["hello"] != "raw" {
		t.Errorf("kubectl get functions: Deployer column %v, want raw for hello", got)
	}

	// The keda function is not deployed; then func's keda deployer deploys it, on a
	// cluster that does not serve HTTPScaledObjects yet.
	eventually(t, 20*time.Second, conditionOf(c, ns, "scaler", "Deployed", corev1.ConditionFalse, v1alpha1.ReasonNotDeployed))
	scalerImage := reg.Push(t, "fns/scaler", oldMiddleware)
	if err := env.InstallCRDs(envtest.KEDAHTTPCRDs); err != nil {
		t.Fatal(err)
	}
	envtest.SimulateKEDAHTTPAddOnT(t, env.Config, envtest.KEDAHTTPAddOnOptions{Namespace: ns})
	deployAsFunc(t, c, ns, "scaler", scalerImage, "keda")
	// Picked up without a restart: the HTTPScaledObject's Ready counts. Its middleware
	// is outdated, but the namespace has not granted the build ServiceAccount
	// HTTPScaledObjects (config/namespace/onboard-keda.yaml): no rebuild yet.
	eventually(t, 30*time.Second, conditionOf(c, ns, "scaler", "ServiceReady", corev1.ConditionTrue, v1alpha1.ReasonServiceReady))
	eventually(t, 30*time.Second, conditionOf(c, ns, "scaler", "MiddlewareUpToDate", corev1.ConditionFalse, v1alpha1.ReasonNamespaceNotOnboarded))
	if m := fnOf("scaler").Status.GetCondition("MiddlewareUpToDate").Message; !strings.Contains(m, "config/namespace/onboard-keda.yaml") {
		t.Errorf("scaler's MiddlewareUpToDate message %q does not name onboard-keda.yaml", m)
	}
	if err := envtest.OnboardKEDA(context.Background(), env.Config, ns); err != nil {
		t.Fatal(err)
	}
	// A check on request (no watch sees a namespace onboard): rebuilt with func's keda
	// deployer, verified once rolled out.
	sc := fnOf("scaler")
	sc.Annotations = map[string]string{v1alpha1.AnnotationRequestedAt: "onboarded-keda"}
	if err := c.Update(context.Background(), sc); err != nil {
		t.Fatal(err)
	}
	eventually(t, 90*time.Second, conditionOf(c, ns, "scaler", "Ready", corev1.ConditionTrue, ""))
	sc = fnOf("scaler")
	if b := sc.Status.Build; b == nil || b.Phase != v1alpha1.BuildPhaseSucceeded || b.FromImage != scalerImage || sc.Status.Middleware.Current != available {
		t.Errorf("scaler's status.build = %+v, middleware %+v; want rebuilt from %s to %s", b, sc.Status.Middleware, scalerImage, available)
	}
	if got := sc.Status.Deployment; got.Deployer != v1alpha1.DeployerKeda || got.Image == scalerImage || !strings.HasPrefix(got.Image, reg.Host+"/fns/scaler@sha256:") {
		t.Errorf("scaler's status.deployment = %+v, want keda running a new image", got)
	}
	if runs := sim.Started(); len(runs) != 2 {
		t.Errorf("%d PipelineRuns started, want 2 (hello, then scaler once onboarded for keda)", len(runs))
	}
	wantURL := fmt.Sprintf("http://scaler-interceptor-bridge.%s.svc:8080", ns)
	if s := sc.Status.Service; s == nil || s.URL != wantURL {
		t.Errorf("scaler's status.service = %+v, want URL %s", s, wantURL)
	}
	// KEDA scales the keda function to zero: still ready (a request scales it up).
	// The same for the raw function is not (the positive control of the check).
	scaleDeployment(t, c, ns, "scaler", 0)
	scaleDeployment(t, c, ns, "hello", 0)
	eventually(t, 30*time.Second, conditionOf(c, ns, "hello", "ServiceReady", corev1.ConditionFalse, workload.ReasonScaledToZero))
	eventually(t, 30*time.Second, conditionOf(c, ns, "scaler", "ServiceReady", corev1.ConditionTrue, v1alpha1.ReasonServiceReady))
	if d := fnOf("scaler").Status.GetCondition("ServiceReady"); !strings.Contains(d.Message, "scaled to zero by KEDA") {
		t.Errorf("scaler's ServiceReady = %+v, want it to say KEDA scaled it to zero", d)
	}
}

// envtestSchemes are the types the tests read and write.
var envtestSchemes = []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, pipelinev1.AddToScheme, kedav1alpha1.AddToScheme}

// startOperatorOn runs the operator on env, a control plane of the test's own with
// config/'s RBAC applied, as config/ installs it: as its ServiceAccount, in its
// namespace, watching the namespaces given, until the test ends.
func startOperatorOn(t *testing.T, env *envtest.Environment, cfg config.Config, watch ...string) {
	t.Helper()
	store := config.NewStore()
	store.Set(cfg)
	runManager(t, envtest.AsOperator(env.Config), Options{WatchNamespaces: watch, SystemNamespace: "func-operator",
		MetricsAddr: "0", ProbeAddr: "0", WorkDir: t.TempDir(), Config: store, APIRecheck: 300 * time.Millisecond,
		SkipControllerNameValidation: true})
}

func apisType(t string) apis.ConditionType { return apis.ConditionType(t) }

// printedColumn returns, by Function name, the cells of column of `kubectl get
// functions -n ns`: the API server's Table of the CRD's printer columns.
func printedColumn(t *testing.T, cfg *rest.Config, ns, column string) map[string]string {
	t.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.JoinPath(cfg.Host, "apis/functions.dev/v1alpha1/namespaces", ns, "functions")
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var table metav1.Table
	if err := json.NewDecoder(resp.Body).Decode(&table); err != nil {
		t.Fatal(err)
	}
	col, name := -1, -1
	for i, c := range table.ColumnDefinitions {
		switch c.Name {
		case column:
			col = i
		case "Name":
			name = i
		}
	}
	if col < 0 || name < 0 {
		t.Fatalf("no %s or Name column in %+v", column, table.ColumnDefinitions)
	}
	out := map[string]string{}
	for _, row := range table.Rows {
		out[fmt.Sprint(row.Cells[name])] = fmt.Sprint(row.Cells[col])
	}
	return out
}

// TestOperator_CachesCutWorkloads: what the manager's caches hold of the raw and keda
// deployers' objects, read back through them: a Deployment without its env values (a
// Secret's value may be written there in plain) or other annotations, a Service's
// metadata without its other annotations; objects func did not label are not cached.
func TestOperator_CachesCutWorkloads(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	store := config.NewStore()
	store.Set(config.Defaults())
	systemNamespace := newNamespace(t)
	ownNamespaceRBAC(t, systemNamespace)
	mgr, _ := runManager(t, operatorConfig, Options{WatchNamespaces: []string{ns}, SystemNamespace: systemNamespace,
		MetricsAddr: "0", ProbeAddr: "0", WorkDir: t.TempDir(), Config: store, SkipControllerNameValidation: true})

	const secretValue = "pw-in-plain-env-5c1d"
	big := strings.Repeat("x", 32<<10)
	deployAsFunc(t, k8sClient, ns, "hello", "127.0.0.1:5000/fns/hello@sha256:"+strings.Repeat("a", 64), "raw")
	for _, o := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}} {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "hello"}, o); err != nil {
				return err
			}
			o.SetAnnotations(map[string]string{"function.knative.dev/deployer": "raw", "kubectl.kubernetes.io/last-applied-configuration": big})
			if d, ok := o.(*appsv1.Deployment); ok {
				d.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "DB_PASSWORD", Value: secretValue}}
			}
			return k8sClient.Update(ctx, o)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Not func's: no function name label.
	unlabelled := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	if err := k8sClient.Create(ctx, unlabelled); err != nil {
		t.Fatal(err)
	}

	cached := mgr.GetClient()
	d := &appsv1.Deployment{}
	eventually(t, 20*time.Second, func() string {
		if err := cached.Get(ctx, types.NamespacedName{Namespace: ns, Name: "hello"}, d); err != nil {
			return err.Error()
		}
		if d.Annotations["kubectl.kubernetes.io/last-applied-configuration"] != "" || len(d.Spec.Template.Spec.Containers[0].Env) > 0 {
			return fmt.Sprintf("the cached Deployment keeps %d annotations and env %v", len(d.Annotations), d.Spec.Template.Spec.Containers[0].Env)
		}
		if d.Generation < 2 {
			return "the cache has not seen the update yet"
		}
		return ""
	})
	if d.Annotations["function.knative.dev/deployer"] != "raw" || d.Spec.Template.Spec.Containers[0].Image == "" {
		t.Errorf("the cached Deployment lost what the operator reads: annotations %v, containers %+v", d.Annotations, d.Spec.Template.Spec.Containers)
	}
	svc := &metav1.PartialObjectMetadata{}
	svc.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Service"))
	eventually(t, 20*time.Second, func() string {
		if err := cached.Get(ctx, types.NamespacedName{Namespace: ns, Name: "hello"}, svc); err != nil {
			return err.Error()
		}
		if len(svc.Annotations) != 1 || svc.Annotations["function.knative.dev/deployer"] != "raw" {
			return fmt.Sprintf("the cached Service keeps annotations of %d keys, want the deployer's alone", len(svc.Annotations))
		}
		return ""
	})
	// The Service func did not label is not in the cache (the positive control: the
	// same Get of func's Service above succeeds).
	if err := cached.Get(ctx, types.NamespacedName{Namespace: ns, Name: "other"}, svc); !apierrors.IsNotFound(err) {
		t.Errorf("reading an unlabelled Service through the cache: %v, want NotFound", err)
	}
}

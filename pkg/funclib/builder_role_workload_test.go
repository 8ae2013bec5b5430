package funclib

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"flag"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	httpv1alpha1 "github.com/kedacore/http-add-on/operator/apis/http/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	eventingv1 "knative.dev/eventing/pkg/apis/eventing/v1"
	fn "knative.dev/func/pkg/functions"
	"knative.dev/func/pkg/k8s"
	"knative.dev/func/pkg/keda"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/fnops/func-operator/test/envtest"
)

// updateFixtures rewrites testdata/deployers/ from what func's deployers write.
var updateFixtures = flag.Bool("update-deployer-fixtures", false, "rewrite testdata/deployers/ from what func's raw and keda deployers write")

// TestBuilderClusterRole_Raw runs func's raw deployer (pkg/k8s, as the func-utils
// image runs it in a build) as the build ServiceAccount of a namespace onboarded
// with config/namespace/onboard.yaml, against the real deployment, replicaset and
// garbage collector controllers and the kubelet simulation: ClusterRole
// func-operator-builder is enough to deploy (a Deployment that becomes available,
// its Service, a Trigger), then update (a new image rolled out, the changed
// subscription's stale Trigger deleted; keda: the HTTPScaledObject's new maximum
// scale), a function that uses every kind of
// reference; what its requests asked is exactly what the deployer's code reads and
// writes, all granted but the read of namespace dapr-system. Without the
// RoleBinding, the same deploy is refused (the negative control). What func wrote
// is kept in testdata/deployers/raw.yaml.
func TestBuilderClusterRole_Raw(t *testing.T) {
	testBuilderWorkload(t, "raw")
}

// TestBuilderClusterRole_Keda is TestBuilderClusterRole_Raw for func's keda deployer
// (pkg/keda: raw plus the KEDA HTTP add-on's HTTPScaledObject and an ExternalName
// Service to the add-on's interceptor), with the add-on's operator simulated
// (HTTPScaledObject Ready). What func wrote is kept in testdata/deployers/keda.yaml.
func TestBuilderClusterRole_Keda(t *testing.T) {
	testBuilderWorkload(t, "keda")
}

// testBuilderWorkload is TestBuilderClusterRole_Raw or _Keda, as deployer says.
func testBuilderWorkload(t *testing.T, deployer string) {
	crds := []string{envtest.KnativeEventingCRDs}
	if deployer == "keda" {
		crds = append(crds, envtest.KEDAHTTPCRDs)
	}
	b := setUpBuilder(t, crds...)
	ctx, admin, ns := b.ctx, b.admin, b.ns
	b.env.StartControllersT(t, envtest.WorkloadControllers()...)
	envtest.SimulateKubeletT(t, b.env.Config, envtest.KubeletOptions{Namespace: ns})
	if deployer == "keda" {
		envtest.SimulateKEDAHTTPAddOnT(t, b.env.Config, envtest.KEDAHTTPAddOnOptions{Namespace: ns})
		// HTTPScaledObjects are granted apart (func-operator-builder-keda).
		if err := envtest.OnboardKEDA(ctx, b.env.Config, ns); err != nil {
			t.Fatal(err)
		}
	}
	// Dapr's namespace exists, but the build ServiceAccount may not read it (no
	// grant of namespaces): func takes that as no Dapr.
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "dapr-system"}}); err != nil {
		t.Fatal(err)
	}
	writes := b.recordWrites(t)

	f := b.f
	f.Deploy.Deployer = deployer
	deploy := func() (fn.DeploymentResult, error) {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if deployer == "keda" {
			return keda.NewDeployer().Deploy(ctx, f)
		}
		return k8s.NewDeployer().Deploy(ctx, f)
	}
	res, err := deploy()
	if err != nil {
		t.Fatalf("deploying as the build ServiceAccount: %v", err)
	}
	if res.Status != fn.Deployed || res.Deployer != deployer {
		t.Errorf("first deploy: %+v, want Deployed by %s", res, deployer)
	}
	checkFixture(t, deployer, writes.take())
	d := checkDeployment(t, admin, ns, deployer, f.Deploy.Image)
	svc := &corev1.Service{}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "hello"}, svc); err != nil {
		t.Fatal(err)
	}
	wantPorts := []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}
	if diff := cmp.Diff(wantPorts, svc.Spec.Ports); diff != "" || !metav1.IsControlledBy(svc, d) || svc.Spec.Selector["function.knative.dev/name"] != "hello" {
		t.Errorf("Service hello: ports (-want +got):\n%s; controlled by the Deployment: %v; selector %v", diff, metav1.IsControlledBy(svc, d), svc.Spec.Selector)
	}
	firstTriggers := triggers(t, admin, ns)
	if len(firstTriggers) != 1 {
		t.Errorf("Triggers %v, want one for the subscription", firstTriggers)
	}
	if deployer == "keda" {
		checkKeda(t, admin, ns, d)
	}

	// A rebuild: a new image rolls out; the subscription's filter changed, so its old
	// Trigger is stale and deleted.
	f.Deploy.Image = "127.0.0.1:5000/fns/hello@sha256:" + strings.Repeat("b", 64)
	f.Deploy.Subscriptions[0].Filters = map[string]string{"type": "farewell"}
	// keda: a new maximum scale changes the HTTPScaledObject's spec, which func
	// updates (and waits Ready again).
	maxScale := int64(5)
	f.Deploy.Options.Scale = &fn.ScaleOptions{Max: &maxScale}
	if res, err := deploy(); err != nil || res.Status != fn.Updated {
		t.Fatalf("updating as the build ServiceAccount: %+v, %v", res, err)
	}
	if deployer == "keda" {
		// func's wait (WaitForHTTPScaledObjectAvailable) reads no observedGeneration
		// either: the Ready it saw may be the previous generation's.
		hso := &httpv1alpha1.HTTPScaledObject{}
		envtest.Until(t, "the add-on simulation marks the updated HTTPScaledObject Ready", func() bool {
			if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "hello"}, hso); err != nil {
				return false
			}
			ready := meta.FindStatusCondition(hso.Status.Conditions, httpv1alpha1.ConditionTypeReady)
			return ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == hso.Generation
		})
		if hso.Spec.Replicas == nil || hso.Spec.Replicas.Max == nil || *hso.Spec.Replicas.Max != 5 {
			t.Errorf("HTTPScaledObject after the update: replicas %+v, want max 5", hso.Spec.Replicas)
		}
	}
	// func's wait for the Deployment (WaitForDeploymentAvailable) reads no
	// observedGeneration: it may see the status of the previous rollout, complete,
	// and return before the deployment controller has seen the update. The
	// controllers finish the rollout after it.
	envtest.Until(t, "the update rolls out", func() bool {
		d := &appsv1.Deployment{}
		return admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "hello"}, d) == nil && d.Status.ObservedGeneration == d.Generation &&
			d.Status.Replicas == 1 && d.Status.UpdatedReplicas == 1 && d.Status.AvailableReplicas == 1
	})
	checkDeployment(t, admin, ns, deployer, f.Deploy.Image)
	if got := triggers(t, admin, ns); len(got) != 1 || slices.Equal(got, firstTriggers) {
		t.Errorf("Triggers after the update %v, want one, not %v", got, firstTriggers)
	}

	checkAccess(t, deployer, writes.access())

	if deployer == "keda" {
		// Without config/namespace/onboard-keda.yaml's RoleBinding, func's keda
		// deployer updates the Deployment (func-operator-builder) but may not write
		// its HTTPScaledObject.
		b.revokeBinding(t, "func-operator-builder-keda", "http.keda.sh", "httpscaledobjects")
		f.Deploy.Image = f.Image
		if _, err := deploy(); err == nil || !strings.Contains(err.Error(), "forbidden") || !strings.Contains(err.Error(), "httpscaledobjects") {
			t.Errorf("deploying keda without func-operator-builder-keda: %v, want forbidden on httpscaledobjects", err)
		}
	}
	// The negative control: without its RoleBinding, the same ServiceAccount may not.
	b.revoke(t, "apps", "deployments")
	f.Deploy.Image = f.Image
	_, err = deploy()
	if err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("deploying without the RoleBinding: %v, want forbidden", err)
	}
}

// checkDeployment checks the Deployment func wrote: the deployer's annotation, the
// function's label, the image, the references of builderFuncYAML, no Dapr; and that
// the controllers made it available with every pod of that image.
func checkDeployment(t *testing.T, admin client.Client, ns, deployer, image string) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "hello"}, d); err != nil {
		t.Fatal(err)
	}
	if got := d.Annotations["function.knative.dev/deployer"]; got != deployer {
		t.Errorf("Deployment annotation function.knative.dev/deployer = %q, want %q", got, deployer)
	}
	if got := d.Labels["function.knative.dev/name"]; got != "hello" {
		t.Errorf("Deployment label function.knative.dev/name = %q, want hello", got)
	}
	if _, dapr := d.Annotations["dapr.io/enabled"]; dapr {
		t.Errorf("Deployment has Dapr's annotations %v: the build ServiceAccount read namespace dapr-system", d.Annotations)
	}
	spec := d.Spec.Template.Spec
	if len(spec.Containers) != 1 || spec.Containers[0].Name != "user-container" || spec.Containers[0].Image != image ||
		spec.ServiceAccountName != "fn-runner" || len(spec.Volumes) != 3 {
		t.Errorf("Deployment's pod template: containers %+v, ServiceAccount %q, %d volumes; want user-container of %s, fn-runner, 3",
			spec.Containers, spec.ServiceAccountName, len(spec.Volumes), image)
	}
	var available bool
	for _, c := range d.Status.Conditions {
		available = available || c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue
	}
	if !available || d.Status.AvailableReplicas != 1 || d.Status.UpdatedReplicas != 1 {
		t.Errorf("Deployment status %+v, want Available with its one replica updated", d.Status)
	}
	var pods corev1.PodList
	if err := admin.List(context.Background(), &pods, client.InNamespace(ns), client.MatchingLabels(d.Spec.Selector.MatchLabels)); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Spec.Containers[0].Image != image {
			t.Errorf("pod %s of image %s after the deploy of %s", p.Name, p.Spec.Containers[0].Image, image)
		}
	}
	return d
}

// checkKeda checks what the keda deployer adds: the ExternalName Service to the
// add-on's interceptor and the HTTPScaledObject, both controlled by the Deployment,
// the latter Ready.
func checkKeda(t *testing.T, admin client.Client, ns string, d *appsv1.Deployment) {
	t.Helper()
	bridge := &corev1.Service{}
	if err := admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "hello-interceptor-bridge"}, bridge); err != nil {
		t.Fatal(err)
	}
	if bridge.Spec.Type != corev1.ServiceTypeExternalName || bridge.Spec.ExternalName != "keda-add-ons-http-interceptor-proxy.keda.svc.cluster.local" || !metav1.IsControlledBy(bridge, d) {
		t.Errorf("interceptor bridge Service %+v, want ExternalName to the add-on's interceptor, controlled by the Deployment", bridge.Spec)
	}
	hso := &httpv1alpha1.HTTPScaledObject{}
	if err := admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "hello"}, hso); err != nil {
		t.Fatal(err)
	}
	want := httpv1alpha1.HTTPScaledObjectSpec{
		Hosts:          []string{"hello-interceptor-bridge." + ns + ".svc", "hello-interceptor-bridge"},
		ScaleTargetRef: httpv1alpha1.ScaleTargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "hello", Service: "hello", Port: 80},
	}
	got := httpv1alpha1.HTTPScaledObjectSpec{Hosts: hso.Spec.Hosts, ScaleTargetRef: hso.Spec.ScaleTargetRef}
	if diff := cmp.Diff(want, got); diff != "" || !metav1.IsControlledBy(hso, d) || hso.Annotations["function.knative.dev/deployer"] != "keda" {
		t.Errorf("HTTPScaledObject (-want +got):\n%s; controlled by the Deployment: %v; annotations %v", diff, metav1.IsControlledBy(hso, d), hso.Annotations)
	}
	if !meta.IsStatusConditionTrue(hso.Status.Conditions, httpv1alpha1.ConditionTypeReady) {
		t.Errorf("HTTPScaledObject conditions %+v, want Ready", hso.Status.Conditions)
	}
}

// checkAccess checks what func's requests of a deploy and an update asked: exactly
// what the deployer's code reads and writes (the rules of
// config/200-builder-clusterrole.yaml name the calls), every one of it granted by
// the ClusterRole but the refused read of namespace dapr-system.
func checkAccess(t *testing.T, deployer string, accessed []string) {
	t.Helper()
	want := []string{
		"create deployments.apps", "get deployments.apps", "update deployments.apps",
		"list replicasets.apps",
		"create services", "get services", "update services",
		"get configmaps", "get persistentvolumeclaims", "get secrets", "get serviceaccounts",
		"list pods",
		"create triggers.eventing.knative.dev", "delete triggers.eventing.knative.dev", "list triggers.eventing.knative.dev",
		"get namespaces (refused)",
	}
	if deployer == "keda" {
		want = append(want, "create httpscaledobjects.http.keda.sh", "get httpscaledobjects.http.keda.sh", "update httpscaledobjects.http.keda.sh")
	}
	slices.Sort(want)
	if diff := cmp.Diff(want, accessed); diff != "" {
		t.Errorf("what func's %s deployer asked of the API server (-want +got):\n%s", deployer, diff)
	}
	files := []string{"config/200-builder-clusterrole.yaml"}
	if deployer == "keda" {
		files = append(files, "config/200-builder-keda-clusterrole.yaml")
	}
	roles := make([][]rbacv1.PolicyRule, 0, len(files))
	for _, file := range files {
		objs, err := envtest.Read(file)
		if err != nil {
			t.Fatal(err)
		}
		role := &rbacv1.ClusterRole{}
		if len(objs) != 1 || runtime.DefaultUnstructuredConverter.FromUnstructured(objs[0].Object, role) != nil {
			t.Fatalf("%s: want one ClusterRole", file)
		}
		roles = append(roles, role.Rules)
	}
	rules := slices.Concat(roles...)
	granted := map[string]bool{}
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				if g != "" {
					res += "." + g
				}
				for _, v := range r.Verbs {
					granted[v+" "+res] = true
				}
			}
		}
	}
	for _, a := range accessed {
		if !strings.HasSuffix(a, " (refused)") && !granted[a] {
			t.Errorf("func's %s deployer was allowed %q, which ClusterRoles %v do not grant", deployer, a, files)
		}
	}
}

// triggers returns the names of the namespace's Triggers, sorted.
func triggers(t *testing.T, admin client.Client, ns string) []string {
	t.Helper()
	var list eventingv1.TriggerList
	if err := admin.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(list.Items))
	for _, tr := range list.Items {
		names = append(names, tr.Name)
	}
	slices.Sort(names)
	return names
}

// write is a create (POST) or update (PUT) func sent to the API server.
type write struct {
	method, path, contentType string
	body                      []byte
}

// writeRecorder keeps the writes of func's clients, and what each of their
// requests asked (accessed).
type writeRecorder struct {
	mu       sync.Mutex
	writes   []write
	accessed map[string]bool
}

// access returns what func's requests so far asked, each as "verb resource.group",
// with " (refused)" when the API server answered Forbidden; sorted.
func (r *writeRecorder) access() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(maps.Keys(r.accessed))
}

// accessOf says what a request asks as "verb resource.group" (RBAC's terms), or ""
// for discovery.
func accessOf(method string, u *url.URL) string {
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:] // api, v1
	case len(parts) >= 3 && parts[0] == "apis":
		parts = append([]string{parts[1]}, parts[3:]...) // group first
	default:
		return ""
	}
	group := ""
	if !strings.HasPrefix(u.Path, "/api/") {
		group, parts = parts[0], parts[1:]
	}
	if len(parts) >= 2 && parts[0] == "namespaces" && len(parts) != 2 {
		parts = parts[2:] // a namespaced resource
	}
	if len(parts) == 0 {
		return ""
	}
	resource, named := parts[0], len(parts) >= 2
	if len(parts) >= 3 {
		resource += "/" + parts[2]
	}
	verb := map[string]string{http.MethodPost: "create", http.MethodPut: "update", http.MethodPatch: "patch"}[method]
	switch method {
	case http.MethodGet:
		verb = "list"
		if named {
			verb = "get"
		} else if u.Query().Get("watch") == "true" {
			verb = "watch"
		}
	case http.MethodDelete:
		verb = "deletecollection"
		if named {
			verb = "delete"
		}
	}
	if group != "" {
		resource += "." + group
	}
	return verb + " " + resource
}

// statusWriter keeps the status code of a response.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

// Flush passes streaming (watches) on.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// take returns the writes so far and forgets them.
func (r *writeRecorder) take() []write {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.writes
	r.writes = nil
	return w
}

// recordWrites points func's clients at a proxy (loopback) to the API server that
// records each create and update they send, as sent: what func writes, before the
// API server's defaults; and what each request asks, allowed or refused.
func (b *builderSetup) recordWrites(t *testing.T) *writeRecorder {
	t.Helper()
	target, err := url.Parse(b.env.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(b.env.Config.CAData) {
		t.Fatal("the API server's CA: no certificate")
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}
	r := &writeRecorder{accessed: map[string]bool{}}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		w := &statusWriter{ResponseWriter: rw, code: http.StatusOK}
		defer func() {
			if a := accessOf(req.Method, req.URL); a != "" {
				if w.code == http.StatusForbidden {
					a += " (refused)"
				}
				r.mu.Lock()
				r.accessed[a] = true
				r.mu.Unlock()
			}
		}()
		if req.Method == http.MethodPost || req.Method == http.MethodPut {
			body, err := io.ReadAll(req.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			req.Body = io.NopCloser(bytes.NewReader(body))
			r.mu.Lock()
			r.writes = append(r.writes, write{method: req.Method, path: req.URL.Path, contentType: req.Header.Get("Content-Type"), body: body})
			r.mu.Unlock()
		}
		proxy.ServeHTTP(w, req)
	}))
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	b.pointFuncAt(t, srv.URL, ca)
	return r
}

// checkFixture compares the writes of a first deploy with
// testdata/deployers/<deployer>.yaml (rewritten under -update-deployer-fixtures), made stable: the
// BUILT variable's time and owners' UIDs replaced.
func checkFixture(t *testing.T, deployer string, writes []write) {
	t.Helper()
	var out bytes.Buffer
	out.WriteString("# What func v0.50.1's " + deployer + " deployer writes on a first deploy of builderFuncYAML\n" +
		"# (pkg/funclib/builder_role_test.go) to namespace tenant, as sent (before the API\n" +
		"# server's defaults), in order; BUILT's time and owners' UIDs replaced.\n" +
		"# TestBuilderClusterRole_" + strings.ToUpper(deployer[:1]) + deployer[1:] + " records it; -update-deployer-fixtures rewrites it.\n")
	for _, w := range writes {
		obj, err := decodeWrite(w)
		if err != nil {
			t.Fatalf("%s %s: %v", w.method, w.path, err)
		}
		stabilize(obj)
		content, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString("---\n# " + w.method + " " + w.path + "\n")
		out.Write(content)
	}
	path := filepath.Join("testdata", "deployers", deployer+".yaml")
	if *updateFixtures {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, out.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update-deployer-fixtures to record it)", err)
	}
	if diff := cmp.Diff(string(want), out.String()); diff != "" {
		t.Errorf("what func's %s deployer writes differs from %s (-want +got; -update-deployer-fixtures rewrites it):\n%s", deployer, path, diff)
	}
}

// decodeWrite returns the object a write sent, as JSON would have it: client-go
// sends built-in types as protobuf, custom resources as JSON.
func decodeWrite(w write) (map[string]any, error) {
	content := w.body
	if strings.HasPrefix(w.contentType, runtime.ContentTypeProtobuf) {
		obj, gvk, err := clientgoscheme.Codecs.UniversalDeserializer().Decode(w.body, nil, nil)
		if err != nil {
			return nil, err
		}
		obj.GetObjectKind().SetGroupVersionKind(*gvk)
		if content, err = json.Marshal(obj); err != nil {
			return nil, err
		}
	}
	var obj map[string]any
	if err := json.Unmarshal(content, &obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// stabilize replaces what changes from run to run in a written object: the value
// of env BUILT (the deploy's time) and ownerReferences' UIDs.
func stabilize(obj map[string]any) {
	if md, ok := obj["metadata"].(map[string]any); ok {
		if refs, ok := md["ownerReferences"].([]any); ok {
			for _, r := range refs {
				if ref, ok := r.(map[string]any); ok {
					ref["uid"] = "<owner uid>"
				}
			}
		}
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if v["name"] == "BUILT" {
				if _, ok := v["value"]; ok {
					v["value"] = "<deploy time>"
				}
			}
			for _, k := range slices.Sorted(maps.Keys(v)) {
				walk(v[k])
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(obj)
}

// TestAccessOf reads requests as RBAC does: verb, resource and group.
func TestAccessOf(t *testing.T) {
	for _, tc := range []struct{ method, url, want string }{
		{"GET", "/api/v1/namespaces/dapr-system", "get namespaces"},
		{"GET", "/api/v1/namespaces/tenant/pods?labelSelector=a%3Db", "list pods"},
		{"GET", "/api/v1/namespaces/tenant/pods?watch=true", "watch pods"},
		{"PUT", "/api/v1/namespaces/tenant/pods/p/status", "update pods/status"},
		{"POST", "/apis/apps/v1/namespaces/tenant/deployments", "create deployments.apps"},
		{"GET", "/apis/apps/v1/namespaces/tenant/deployments/hello", "get deployments.apps"},
		{"DELETE", "/apis/eventing.knative.dev/v1/namespaces/tenant/triggers/x", "delete triggers.eventing.knative.dev"},
		{"DELETE", "/apis/eventing.knative.dev/v1/namespaces/tenant/triggers", "deletecollection triggers.eventing.knative.dev"},
		{"GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles/x", "get clusterroles.rbac.authorization.k8s.io"},
		{"GET", "/api", ""}, {"GET", "/api/v1", ""}, {"GET", "/apis", ""}, {"GET", "/apis/apps", ""}, {"GET", "/apis/apps/v1", ""},
	} {
		u, err := url.Parse(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := accessOf(tc.method, u); got != tc.want {
			t.Errorf("accessOf(%s %s) = %q, want %q", tc.method, tc.url, got, tc.want)
		}
	}
}

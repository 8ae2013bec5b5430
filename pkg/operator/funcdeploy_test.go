package operator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"knative.dev/pkg/apis"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/test/gitserver"
	"github.com/fnops/func-operator/test/registrytest"
)

// The Function as func v0.50.1 sees it: it decodes our objects into the upstream
// operator's Go types (github.com/functions-dev/func-operator api/v1alpha1 v0.2.1,
// which the module proxy does not serve). These types have their JSON shape (written
// from their published field list, not copied), so that a List and an Update through
// them go through the same decoding as func's.
type (
	theirFunction struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata,omitempty"`
		Spec              theirSpec   `json:"spec,omitempty"`
		Status            theirStatus `json:"status,omitempty"`
	}
	theirFunctionList struct {
		metav1.TypeMeta `json:",inline"`
		metav1.ListMeta `json:"metadata,omitempty"`
		Items           []theirFunction `json:"items"`
	}
	theirSpec struct {
		Repository           theirRepository `json:"repository,omitempty"`
		Registry             theirRegistry   `json:"registry,omitempty"`
		AutoUpdateMiddleware *bool           `json:"autoUpdateMiddleware,omitempty"`
	}
	theirRepository struct {
		URL           string                       `json:"url"`
		Branch        string                       `json:"branch,omitempty"`
		AuthSecretRef *corev1.LocalObjectReference `json:"authSecretRef,omitempty"`
		Path          string                       `json:"path,omitempty"`
	}
	theirRegistry struct {
		AuthSecretRef *corev1.LocalObjectReference `json:"authSecretRef,omitempty"`
	}
	theirStatus struct {
		Name       string             `json:"name"`
		Conditions []metav1.Condition `json:"conditions,omitempty"`
		Git        struct {
			ResolvedBranch string      `json:"resolvedBranch,omitempty"`
			ObservedCommit string      `json:"observedCommit,omitempty"`
			LastChecked    metav1.Time `json:"lastChecked,omitempty"`
		} `json:"git,omitempty"`
		Deployment struct {
			Image      string      `json:"image,omitempty"`
			ImageBuilt metav1.Time `json:"imageBuilt,omitempty"`
			Revision   string      `json:"revision,omitempty"`
			Deployer   string      `json:"deployer,omitempty"`
			Runtime    string      `json:"runtime,omitempty"`
		} `json:"deployment,omitempty"`
		Middleware struct {
			Current    string  `json:"current,omitempty"`
			Available  *string `json:"available,omitempty"`
			AutoUpdate struct {
				Enabled bool   `json:"enabled"`
				Source  string `json:"source,omitempty"`
			} `json:"autoUpdate"`
			PendingRebuild bool        `json:"pendingRebuild"`
			LastRebuild    metav1.Time `json:"lastRebuild,omitempty"`
		} `json:"middleware,omitempty"`
		Service struct {
			URL   string `json:"url,omitempty"`
			Ready string `json:"ready,omitempty"` // a string there: True, False or Unknown
		} `json:"service,omitempty"`
		History []struct {
			Time    metav1.Time `json:"time"`
			Message string      `json:"message"`
		} `json:"history,omitempty"`
	}
)

func (f *theirFunction) DeepCopyObject() runtime.Object     { return jsonCopy(f, &theirFunction{}) }
func (l *theirFunctionList) DeepCopyObject() runtime.Object { return jsonCopy(l, &theirFunctionList{}) }

func jsonCopy[T runtime.Object](from, into T) runtime.Object {
	b, err := json.Marshal(from)
	if err == nil {
		err = json.Unmarshal(b, into)
	}
	if err != nil {
		panic(err)
	}
	return into
}

// theirScheme registers the upstream shape as functions.dev/v1alpha1 Function, as
// func's v1alpha1.AddToScheme does.
func theirScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	gv := v1alpha1.SchemeGroupVersion
	s.AddKnownTypeWithName(gv.WithKind("Function"), &theirFunction{})
	s.AddKnownTypeWithName(gv.WithKind("FunctionList"), &theirFunctionList{})
	metav1.AddToGroupVersion(s, gv)
	return s
}

// annotationLastDeployed is what func deploy sets on every deploy (RFC 3339).
const annotationLastDeployed = "functions.knative.dev/last-deployed"

// funcDeployer does to the Function what `func deploy` of func v0.50.1 does
// (pkg/operator/sync.go), as a user who may write Functions: finds the Function of
// the function (status.name first, else metadata.name) with a List, and Updates it
// with the spec replaced by a bare one and a new last-deployed annotation, without a
// retry; or Creates one. Every object func's client would decode is decoded into the
// upstream types; when that fails, func deploy would fail there: the failure is
// recorded and the deployer goes on, to check the rest.
type funcDeployer struct {
	t     *testing.T
	c     client.Client // through theirScheme
	raw   client.Client // the same user, unstructured: to go on past a decode error
	disc  discovery.DiscoveryInterface
	codec runtime.Decoder // func's client's: the upstream types' JSON
	ns    string
	name  string // the function's, in func.yaml
	mu    sync.Mutex
	clash map[string]int // func's List errors, by message: each one a `func deploy` that fails
}

func newFuncDeployer(t *testing.T, cfg *rest.Config, ns, name string) *funcDeployer {
	t.Helper()
	c, err := client.New(cfg, client.Options{Scheme: theirScheme()})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	codec := serializer.WithoutConversionCodecFactory{CodecFactory: serializer.NewCodecFactory(theirScheme())}.UniversalDeserializer()
	return &funcDeployer{t: t, c: c, raw: raw, disc: disc, codec: codec, ns: ns, name: name, clash: map[string]int{}}
}

// deploy syncs the Function of the deployer's function as func deploy does, and returns
// "created" or "updated", or the error func would print as a warning.
func (d *funcDeployer) deploy(ctx context.Context, url, branch, path string) (string, error) {
	name := d.name
	// hasFunctionCRD
	resources, err := d.disc.ServerResourcesForGroupVersion(v1alpha1.SchemeGroupVersion.String())
	if err != nil {
		return "", fmt.Errorf("checking for Function CRD: %w", err)
	}
	hasCRD := false
	for _, r := range resources.APIResources {
		hasCRD = hasCRD || r.Kind == "Function"
	}
	if !hasCRD {
		return "", errors.New("the Function CRD is not served: func deploy would not write a Function")
	}
	spec := theirSpec{Repository: theirRepository{URL: url, Branch: branch, Path: path}}
	spec.Registry.AuthSecretRef = &corev1.LocalObjectReference{Name: name + "-registry-auth"}
	now := time.Now().UTC().Format(time.RFC3339)

	list, err := d.list(ctx)
	if err != nil {
		return "", fmt.Errorf("looking up existing Function CR: %w", err)
	}
	var existing, byName *theirFunction
	for i := range list.Items {
		if list.Items[i].Status.Name == name {
			existing = &list.Items[i]
			break
		}
		if byName == nil && list.Items[i].Name == name {
			byName = &list.Items[i]
		}
	}
	if existing == nil {
		existing = byName
	}
	if existing != nil {
		existing.Spec = spec
		if existing.Annotations == nil {
			existing.Annotations = map[string]string{}
		}
		existing.Annotations[annotationLastDeployed] = now
		if err := d.write(ctx, existing, false); err != nil {
			return "", fmt.Errorf("updating Function CR: %w", err)
		}
		return "updated", nil
	}
	fn := &theirFunction{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: d.ns, Annotations: map[string]string{annotationLastDeployed: now}},
		Spec:       spec,
	}
	if err := d.write(ctx, fn, true); err != nil {
		return "", fmt.Errorf("creating Function CR: %w", err)
	}
	return "created", nil
}

// list is func's List. When its decode fails, the failure is recorded (func deploy
// fails there) and the test goes on with the items decoded without
// status.service.ready, to check everything else.
func (d *funcDeployer) list(ctx context.Context) (*theirFunctionList, error) {
	var list theirFunctionList
	err := d.c.List(ctx, &list, client.InNamespace(d.ns))
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		return &list, err
	}
	d.recordClash("List", err)
	u := &unstructured.UnstructuredList{}
	u.SetGroupVersionKind(v1alpha1.SchemeGroupVersion.WithKind("FunctionList"))
	if err := d.raw.List(ctx, u, client.InNamespace(d.ns)); err != nil {
		return nil, err
	}
	list = theirFunctionList{}
	for _, item := range u.Items {
		unstructured.RemoveNestedField(item.Object, "status", "service", "ready")
		fn, err := d.decode(item.Object)
		if err != nil {
			return nil, fmt.Errorf("decoding %s even without status.service.ready: %w", item.GetName(), err)
		}
		list.Items = append(list.Items, *fn)
	}
	return &list, nil
}

// write sends fn as func's client would (the same JSON), then decodes what the API
// server answered into the upstream types, as func's client does; a decode error is
// recorded (func reports the write failed, although the API server made it).
func (d *funcDeployer) write(ctx context.Context, fn *theirFunction, create bool) error {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(fn)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(v1alpha1.SchemeGroupVersion.WithKind("Function"))
	if create {
		err = d.raw.Create(ctx, u)
	} else {
		err = d.raw.Update(ctx, u)
	}
	if err != nil {
		return err
	}
	what := "Update"
	if create {
		what = "Create"
	}
	if _, err := d.decode(u.Object); err != nil {
		d.recordClash(what, err)
	}
	return nil
}

// decode decodes an object into the upstream types through the codec func's client uses.
func (d *funcDeployer) decode(obj map[string]interface{}) (*theirFunction, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	fn := &theirFunction{}
	if _, _, err := d.codec.Decode(b, nil, fn); err != nil {
		return nil, err
	}
	return fn, nil
}

func (d *funcDeployer) recordClash(what string, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.clash[what+": "+err.Error()]++
}

// clashes returns func's List errors seen, with how often.
func (d *funcDeployer) clashes() map[string]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]int{}
	for k, v := range d.clash {
		out[k] = v
	}
	return out
}

// newFuncUser returns the rest.Config of a user who may write the namespace's
// Functions and read the registry Secret func deploy creates for function name (the
// API server's Secret policy wants that), and nothing else.
func newFuncUser(t *testing.T, ns, name string) *rest.Config {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "func-deployer"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"functions.dev"}, Resources: []string{"functions"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{name + "-registry-auth"}, Verbs: []string{"get"}},
	}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "func-deployer"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "func-deployer"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "developer"}}}
	for _, o := range []client.Object{role, binding} {
		if err := k8sClient.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	cfg := rest.CopyConfig(restConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "developer", Groups: []string{"system:authenticated"}}
	return cfg
}

// withLatency returns cfg whose every request waits d first: a client a round trip
// away from the API server.
func withLatency(cfg *rest.Config, d time.Duration) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			time.Sleep(d)
			return rt.RoundTrip(req)
		})
	})
	return cfg
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// gatingConditions are Ready and the four it is derived from.
var gatingConditions = []apis.ConditionType{
	v1alpha1.FunctionConditionReady, v1alpha1.FunctionConditionSourceReady, v1alpha1.FunctionConditionDeployed,
	v1alpha1.FunctionConditionMiddlewareUpToDate, v1alpha1.FunctionConditionServiceReady,
}

// conditionWatch records every version of a Function the API server sends on a
// watch: which of the gating conditions went False, and every transition.
type conditionWatch struct {
	mu          sync.Mutex
	versions    int
	falses      []string
	transitions []string
	ended       bool
}

func watchConditions(t *testing.T, ns, name string) *conditionWatch {
	t.Helper()
	wc, err := client.NewWithWatch(restConfig, client.Options{Scheme: k8sClient.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := wc.Watch(ctx, &v1alpha1.FunctionList{}, client.InNamespace(ns), client.MatchingFields{"metadata.name": name})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	cw := &conditionWatch{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		last := map[apis.ConditionType]string{}
		for ev := range w.ResultChan() {
			fn, ok := ev.Object.(*v1alpha1.Function)
			if !ok {
				continue
			}
			cw.mu.Lock()
			cw.versions++
			for _, ct := range gatingConditions {
				c := fn.Status.GetCondition(ct)
				if c == nil {
					continue
				}
				now := fmt.Sprintf("%s/%s", c.Status, c.Reason)
				if last[ct] != "" && last[ct] != now {
					cw.transitions = append(cw.transitions, fmt.Sprintf("%s %s -> %s", ct, last[ct], now))
				}
				last[ct] = now
				if c.IsFalse() {
					cw.falses = append(cw.falses, fmt.Sprintf("%s False %s: %s (resourceVersion %s)", ct, c.Reason, c.Message, fn.ResourceVersion))
				}
			}
			cw.mu.Unlock()
		}
		cw.mu.Lock()
		cw.ended = ctx.Err() == nil
		cw.mu.Unlock()
	}()
	t.Cleanup(func() {
		cancel()
		w.Stop()
		<-done
	})
	return cw
}

// check fails the test when a gating condition was False at any time, and logs
// what the watch saw.
func (cw *conditionWatch) check(t *testing.T) {
	t.Helper()
	cw.mu.Lock()
	defer cw.mu.Unlock()
	counts := map[string]int{}
	for _, tr := range cw.transitions {
		counts[tr]++
	}
	lines := make([]string, 0, len(counts))
	for tr, n := range counts {
		lines = append(lines, fmt.Sprintf("%3dx %s", n, tr))
	}
	sort.Strings(lines)
	t.Logf("the watch saw %d versions of the Function; transitions of Ready and the conditions it derives from:\n  %s",
		cw.versions, strings.Join(lines, "\n  "))
	if cw.ended {
		t.Errorf("the watch ended before the test: versions after it were not seen")
	}
	if len(cw.falses) > 0 {
		t.Errorf("a condition went False while func deploy wrote the Function:\n  %s", strings.Join(cw.falses, "\n  "))
	}
}

// served returns "" once the operator handled the latest generation of Function
// hello, read func.yaml from branch at commit and every gating condition is True.
func served(ns, branch, commit string) func() string {
	return func() string {
		fn := &v1alpha1.Function{}
		if err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "hello"}, fn); err != nil {
			return err.Error()
		}
		if fn.Status.ObservedGeneration != fn.Generation {
			return fmt.Sprintf("observedGeneration %d, generation %d", fn.Status.ObservedGeneration, fn.Generation)
		}
		if g := fn.Status.Git; g == nil || g.ResolvedBranch != branch || g.ObservedCommit != commit {
			return fmt.Sprintf("status.git = %+v, want branch %s at %s", fn.Status.Git, branch, commit)
		}
		for _, ct := range gatingConditions {
			if c := fn.Status.GetCondition(ct); !c.IsTrue() {
				return fmt.Sprintf("%s = %+v, want True", ct, c)
			}
		}
		return ""
	}
}

// autoUpdateIs returns "" once the operator handled Function hello's latest generation
// and reports auto-update as want.
func autoUpdateIs(ns string, want v1alpha1.AutoUpdateStatus) func() string {
	return func() string {
		fn := &v1alpha1.Function{}
		if err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "hello"}, fn); err != nil {
			return err.Error()
		}
		if fn.Status.ObservedGeneration != fn.Generation {
			return fmt.Sprintf("observedGeneration %d, generation %d", fn.Status.ObservedGeneration, fn.Generation)
		}
		if mw := fn.Status.Middleware; mw == nil || mw.AutoUpdate == nil || *mw.AutoUpdate != want {
			return fmt.Sprintf("status.middleware = %+v, want autoUpdate %+v", fn.Status.Middleware, want)
		}
		return ""
	}
}

// TestOperator_FuncDeployWritesTheFunction: `func deploy` (v0.50.1) writes the
// Function itself, as a developer, through the upstream operator's types: a Create
// with a bare spec, then on each deploy a List and an Update that replaces the spec.
// The operator serves it throughout: the usual conditions, the new spec read as soon
// as the generation is observed, no condition False in between. func's reads decode
// our objects (a field whose JSON type differs breaks every func deploy of the
// namespace). Settings func resets in the spec are kept by their annotations. How
// often the operator's status writes make func's Update (which does not retry) fail
// with a conflict is measured and logged.
func TestOperator_FuncDeployWritesTheFunction(t *testing.T) {
	ctx := context.Background()
	root := gitserver.NewRepoRoot(t)
	srv := gitserver.StartHTTP(t, root)
	repo := gitserver.CreateRepo(t, root, "mono")
	onMain := repo.Commit(t, "main", map[string]string{"functions/hello/func.yaml": funcYAML("hello", "go")}, "hello")
	// On branch release the function moved: only the new path holds its func.yaml.
	onRelease := repo.Commit(t, "release", map[string]string{"fns/hello/func.yaml": funcYAML("hello", "go")}, "hello moved")
	url := srv.URL("mono")

	ns := newNamespace(t)
	reg := registrytest.StartPrivate(t, registryUser, registryPassword)
	middleware := availableGoMiddleware(t)
	// What func deploy does first: the registry Secret and the Knative Service.
	if err := k8sClient.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hello-registry-auth"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: reg.DockerConfigJSON()},
	}); err != nil {
		t.Fatal(err)
	}
	svc := &servingv1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hello",
		Labels: map[string]string{"function.knative.dev/name": "hello"}}}
	deployImage := func(image string, revision int) {
		t.Helper()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(svc), svc); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			svc.Spec.Template.Spec.PodSpec = corev1.PodSpec{Containers: []corev1.Container{{Image: image}}}
			if svc.UID == "" {
				return k8sClient.Create(ctx, svc)
			}
			return k8sClient.Update(ctx, svc)
		})
		if err != nil {
			t.Fatal(err)
		}
		// The real Knative Serving controller rolls the Revision out and reports the
		// Service ready.
		want := fmt.Sprintf("hello-%05d", revision)
		eventually(t, 60*time.Second, func() string {
			s := getService(t, ns, "hello")
			if s.Status.ObservedGeneration != s.Generation || !s.IsReady() || s.Status.LatestReadyRevisionName != want {
				return fmt.Sprintf("Knative Service status %+v, want Revision %s ready", s.Status, want)
			}
			return ""
		})
	}
	deployImage(reg.Push(t, "fns/hello", middleware), 1)

	userCfg := newFuncUser(t, ns, "hello")
	user, err := client.New(userCfg, client.Options{Scheme: k8sClient.Scheme()}) // kubectl, as the same developer
	if err != nil {
		t.Fatal(err)
	}
	startOperator(t, time.Hour, ns) // no periodic check: only func's writes and the watches act
	fd := newFuncDeployer(t, userCfg, ns, "hello")

	// The first func deploy: no Function yet, func creates it. (The developer's
	// RoleBinding reaches the authorizer a moment after it is made.)
	eventually(t, 10*time.Second, func() string {
		op, err := fd.deploy(ctx, url, "main", "functions/hello")
		if err != nil {
			return err.Error()
		}
		if op != "created" {
			t.Fatalf("the first func deploy %s the Function, want created", op)
		}
		return ""
	})
	eventually(t, 30*time.Second, served(ns, "main", onMain))
	fn := getFunction(t, ns, "hello")
	if r := fn.Spec.Repository; r.URL != url || r.Branch != "main" || r.Path != "functions/hello" || fn.Spec.Registry.AuthSecretRef == nil ||
		fn.Spec.Registry.AuthSecretRef.Name != "hello-registry-auth" {
		t.Errorf("spec = %+v, want what func deploy wrote", fn.Spec)
	}
	if _, err := time.Parse(time.RFC3339, fn.Annotations[annotationLastDeployed]); err != nil {
		t.Errorf("annotation %s = %q: %v", annotationLastDeployed, fn.Annotations[annotationLastDeployed], err)
	}
	if fn.Status.Name != "hello" || fn.Status.Service == nil || !fn.Status.Service.Ready.IsTrue() {
		t.Errorf("status.name %q, status.service %+v: want the function's name and its ready Service", fn.Status.Name, fn.Status.Service)
	}
	// The deploy func recorded shows as upstream shows it: status.deployment.imageBuilt
	// and a history entry at its time, and an Event.
	deployedAt, _ := time.Parse(time.RFC3339, fn.Annotations[annotationLastDeployed])
	eventually(t, 20*time.Second, func() string {
		fn := getFunction(t, ns, "hello")
		d, h := fn.Status.Deployment, fn.Status.History
		if d == nil || d.ImageBuilt == nil || !d.ImageBuilt.Time.Equal(deployedAt) || len(h) == 0 ||
			h[0].Message != v1alpha1.HistoryDeployed || !h[0].Time.Time.Equal(deployedAt) {
			return fmt.Sprintf("status.deployment = %+v, history = %+v; want the deploy at %s", d, h, deployedAt)
		}
		if ev := eventsOf(t, ns, "hello")["Deployed"]; len(ev) != 1 {
			return fmt.Sprintf("Deployed Events %q, want one", ev)
		}
		return ""
	})

	watch := watchConditions(t, ns, "hello")

	// The second func deploy moves the function: branch release, path fns/hello.
	if op, err := fd.deploy(ctx, url, "release", "fns/hello"); err != nil || op != "updated" {
		t.Fatalf("the second func deploy: %s, %v; want the Function updated", op, err)
	}
	eventually(t, 30*time.Second, served(ns, "release", onRelease))

	// Settings: spec.autoUpdateMiddleware is lost on the next func deploy...
	patch := func(body string) {
		t.Helper()
		if err := user.Patch(ctx, &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hello"}},
			client.RawPatch(types.MergePatchType, []byte(body))); err != nil {
			t.Fatal(err)
		}
	}
	deployOK := func(branch, path string) {
		t.Helper()
		if _, err := fd.deploy(ctx, url, branch, path); err != nil {
			t.Fatalf("func deploy of %s/%s: %v", branch, path, err)
		}
	}
	patch(`{"spec":{"autoUpdateMiddleware":false}}`)
	eventually(t, 20*time.Second, autoUpdateIs(ns, v1alpha1.AutoUpdateStatus{Enabled: false, Source: v1alpha1.AutoUpdateSourceFunction}))
	deployOK("main", "functions/hello")
	eventually(t, 20*time.Second, autoUpdateIs(ns, v1alpha1.AutoUpdateStatus{Enabled: true, Source: v1alpha1.AutoUpdateSourceOperatorConfig}))
	eventually(t, 20*time.Second, served(ns, "main", onMain))

	// ...its annotation is kept, as is a suspension by annotation.
	patch(`{"metadata":{"annotations":{"functions.dev/auto-update-middleware":"false"}}}`)
	eventually(t, 20*time.Second, autoUpdateIs(ns, v1alpha1.AutoUpdateStatus{Enabled: false, Source: v1alpha1.AutoUpdateSourceAnnotation}))
	deployOK("release", "fns/hello")
	eventually(t, 20*time.Second, served(ns, "release", onRelease))
	eventually(t, 20*time.Second, autoUpdateIs(ns, v1alpha1.AutoUpdateStatus{Enabled: false, Source: v1alpha1.AutoUpdateSourceAnnotation}))
	if a := getFunction(t, ns, "hello").Annotations[v1alpha1.AnnotationAutoUpdateMiddleware]; a != "false" {
		t.Errorf("annotation %s = %q after func deploy, want false kept", v1alpha1.AnnotationAutoUpdateMiddleware, a)
	}

	patch(`{"metadata":{"annotations":{"functions.dev/suspend":"true"}}}`)
	eventually(t, 20*time.Second, condition(ns, "hello", v1alpha1.FunctionConditionSuspended, corev1.ConditionTrue, v1alpha1.ReasonSuspended))
	deployOK("main", "functions/hello")
	eventually(t, 20*time.Second, func() string { // the operator handled the new generation, suspended
		if fn := getFunction(t, ns, "hello"); fn.Status.ObservedGeneration != fn.Generation {
			return fmt.Sprintf("observedGeneration %d, generation %d", fn.Status.ObservedGeneration, fn.Generation)
		}
		return ""
	})
	fn = getFunction(t, ns, "hello")
	if c := fn.Status.GetCondition(v1alpha1.FunctionConditionSuspended); !c.IsTrue() || !strings.Contains(c.Message, v1alpha1.AnnotationSuspend) {
		t.Errorf("Suspended = %+v after func deploy, want True, naming the annotation", c)
	}
	if fn.Spec.Suspend || fn.Status.Git == nil || fn.Status.Git.ResolvedBranch != "release" {
		t.Errorf("spec.suspend %t, status.git %+v: want the suspended Function left unchecked on branch release", fn.Spec.Suspend, fn.Status.Git)
	}
	patch(`{"metadata":{"annotations":{"functions.dev/suspend":null}}}`)
	eventually(t, 20*time.Second, served(ns, "main", onMain))

	// The source policy's annotation is kept by func deploy as well. (Each deploy
	// waits for the operator to have written what the patch before it changed: func's
	// update of the Function does not retry a conflict.)
	onCommit := func(enabled bool, branch string) func() string {
		return func() string {
			fn := getFunction(t, ns, "hello")
			st := fn.Status.DeployOnCommit
			on := st != nil && st.Enabled && st.Source == v1alpha1.AutoUpdateSourceAnnotation
			if on != enabled || fn.Status.Git == nil || fn.Status.Git.ResolvedBranch != branch || fn.Status.ObservedGeneration != fn.Generation {
				return fmt.Sprintf("annotations %v, status.deployOnCommit %+v, status.git %+v: want the policy on by the annotation: %t, on %s",
					fn.Annotations, st, fn.Status.Git, enabled, branch)
			}
			return ""
		}
	}
	patch(`{"metadata":{"annotations":{"functions.dev/deploy-on-commit":"true"}}}`)
	eventually(t, 20*time.Second, onCommit(true, "main"))
	deployOK("release", "fns/hello")
	eventually(t, 20*time.Second, onCommit(true, "release"))
	patch(`{"metadata":{"annotations":{"functions.dev/deploy-on-commit":null}}}`)
	eventually(t, 20*time.Second, onCommit(false, "release"))
	deployOK("main", "functions/hello")
	eventually(t, 20*time.Second, served(ns, "main", onMain))

	// An invalid value holds rebuilds, is reported, and does not touch Ready.
	patch(`{"metadata":{"annotations":{"functions.dev/auto-update-middleware":"nope"}}}`)
	eventually(t, 20*time.Second, condition(ns, "hello", v1alpha1.FunctionConditionSettingsValid, corev1.ConditionFalse, v1alpha1.ReasonInvalidAnnotation))
	eventually(t, 20*time.Second, autoUpdateIs(ns, v1alpha1.AutoUpdateStatus{Enabled: false, Source: v1alpha1.AutoUpdateSourceAnnotation}))
	if c := getFunction(t, ns, "hello").Status.GetCondition(v1alpha1.FunctionConditionReady); !c.IsTrue() {
		t.Errorf("Ready = %+v with an invalid settings annotation, want True (SettingsValid never gates it)", c)
	}
	eventually(t, 20*time.Second, func() string {
		if ev := eventsOf(t, ns, "hello")[v1alpha1.ReasonInvalidAnnotation]; len(ev) == 0 || !strings.Contains(ev[0], `"nope"`) {
			return fmt.Sprintf("events %s: %q, want one naming the value", v1alpha1.ReasonInvalidAnnotation, ev)
		}
		return ""
	})
	patch(`{"metadata":{"annotations":{"functions.dev/auto-update-middleware":"true"}}}`)
	eventually(t, 20*time.Second, autoUpdateIs(ns, v1alpha1.AutoUpdateStatus{Enabled: true, Source: v1alpha1.AutoUpdateSourceAnnotation}))
	if c := getFunction(t, ns, "hello").Status.GetCondition(v1alpha1.FunctionConditionSettingsValid); c != nil {
		t.Errorf("SettingsValid = %+v once the annotation is valid, want none", c)
	}

	// Conflicts, as func meets them: each deploy rolls a new image out and, once
	// Knative reports the Service ready, syncs the Function (after what func does in
	// between: git, credentials, clients, the registry Secret: here a delay), while
	// the operator writes what it observed of that Service and its new image. An
	// Update conflicts when an operator write lands between func's List and Update:
	// on loopback, a millisecond apart; on a real cluster, a round trip, while the
	// operator reads the new image from a remote registry.
	const deploys = 20
	revision := 1
	for _, sc := range []struct {
		name         string
		fd           *funcDeployer
		delay        time.Duration
		registryWait time.Duration
	}{
		{name: "as soon as its Service is ready, on loopback", fd: fd},
		{name: "50ms after its Service is ready, on loopback", fd: fd, delay: 50 * time.Millisecond},
		{name: "as soon as its Service is ready, 20ms away from the API server, the registry answering in 100ms",
			fd: newFuncDeployer(t, withLatency(userCfg, 20*time.Millisecond), ns, "hello"), registryWait: 100 * time.Millisecond},
	} {
		conflicts, start := 0, time.Now()
		for i := 1; i <= deploys; i++ {
			revision++
			image := reg.Push(t, fmt.Sprintf("fns/hello-%d", revision), middleware)
			reg.Delay(sc.registryWait)
			deployImage(image, revision)
			time.Sleep(sc.delay)
			_, err := sc.fd.deploy(ctx, url, "main", "functions/hello")
			switch {
			case apierrors.IsConflict(err):
				conflicts++
			case err != nil:
				t.Fatalf("func deploy %d: %v", i, err)
			}
			eventually(t, 20*time.Second, func() string {
				fn := getFunction(t, ns, "hello")
				if fn.Status.Deployment == nil || fn.Status.Deployment.Image != image {
					return fmt.Sprintf("status.deployment = %+v, want image %s", fn.Status.Deployment, image)
				}
				return served(ns, "main", onMain)()
			})
			reg.Delay(0)
		}
		t.Logf("func deploy syncing %s: %d of %d Updates failed with a conflict (func does not retry; %s)",
			sc.name, conflicts, deploys, time.Since(start).Round(time.Millisecond))
	}

	// Back to back, moving the function each time: the operator writes the status of
	// each generation while the next deploy lists and updates.
	conflicts, start := 0, time.Now()
	last := ""
	for i := 1; i <= deploys; i++ {
		branch, path := "main", "functions/hello"
		if i%2 == 1 {
			branch, path = "release", "fns/hello"
		}
		_, err := fd.deploy(ctx, url, branch, path)
		switch {
		case apierrors.IsConflict(err):
			conflicts++
		case err != nil:
			t.Fatalf("func deploy %d: %v", i, err)
		default:
			last = branch
		}
	}
	t.Logf("func deploy back to back: %d of %d Updates failed with a conflict (%s)", conflicts, deploys, time.Since(start).Round(time.Millisecond))
	want := map[string]string{"main": onMain, "release": onRelease}
	eventually(t, 30*time.Second, served(ns, last, want[last]))

	watch.check(t)
	if c := fd.clashes(); len(c) > 0 {
		msgs := make([]string, 0, len(c))
		for msg, n := range c {
			msgs = append(msgs, fmt.Sprintf("%dx %s", n, msg))
		}
		sort.Strings(msgs)
		t.Errorf("func v0.50.1 decodes the Functions it reads into the upstream operator's types, and that failed "+
			"(a failed List: that func deploy does not write its Function; a failed Update or Create: it reports a failure):\n  %s",
			strings.Join(msgs, "\n  "))
	}
}

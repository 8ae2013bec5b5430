package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"knative.dev/pkg/apis"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/operator"
	"github.com/fnops/func-operator/test/envtest"
	"github.com/fnops/func-operator/test/gitserver"
	"github.com/fnops/func-operator/test/knative"
	"github.com/fnops/func-operator/test/tekton"
)

// oldMiddleware is the func-go version the outdated functions' images run.
const oldMiddleware = "v0.1.0"

// fleet is one namespace of functions, onboarded, each deployed from its own path of
// one private git repository, with its image in the private registry and its
// Knative Service: healthy ones run the newest middleware, outdated ones an old one.
// Its raw functions run the newest middleware too, deployed by func's raw deployer (a
// Deployment and a core Service: raw_test.go).
type fleet struct {
	ns                string
	healthy, outdated []string
	raw               []string
	// hold keeps this fleet's simulated PipelineRuns running while it is set.
	hold atomic.Bool
}

// key is the namespace/name of a function of the fleet.
func (f *fleet) key(name string) string { return f.ns + "/" + name }

// all returns the fleet's function names.
func (f *fleet) all() []string { return append(f.knative(), f.raw...) }

// knative returns the names of the fleet's functions deployed as Knative Services.
func (f *fleet) knative() []string { return append(append([]string(nil), f.healthy...), f.outdated...) }

// newFleet creates a fleet and its objects: its Functions last.
func (s *suite) newFleet(t *testing.T, prefix string, healthy, outdated int, hold bool) *fleet {
	t.Helper()
	f := s.newNamespace(t, prefix, healthy, outdated, hold)
	s.populate(t, f)
	return f
}

// newNamespace names a fleet, in a new onboarded namespace, without creating anything in it.
func (s *suite) newNamespace(t *testing.T, prefix string, healthy, outdated int, hold bool) *fleet {
	t.Helper()
	f := &fleet{ns: envtest.NewNamespace(t, s.env.Config, "faults-"+prefix+"-", true)}
	f.hold.Store(hold)
	for i := 0; i < healthy; i++ {
		f.healthy = append(f.healthy, fmt.Sprintf("ok-%d", i))
	}
	for i := 0; i < outdated; i++ {
		f.outdated = append(f.outdated, fmt.Sprintf("old-%d", i))
	}
	return f
}

// populate creates the fleet's Secrets, repository, images, Knative Services (when
// the cluster serves them), raw functions' Deployments and Services, Tekton
// simulation, and last its Functions.
func (s *suite) populate(t *testing.T, f *fleet) {
	t.Helper()
	s.createSecrets(t, f.ns)
	// Every function comes from a private repository: the operator reads it, and its
	// builds clone it, with the token.
	files := map[string]string{}
	for _, name := range f.all() {
		files["fns/"+name+"/func.yaml"] = fmt.Sprintf("specVersion: 0.36.0\nname: %s\nruntime: go\nregistry: %s/%s\nbuild:\n  builder: pack\n", name, s.reg.Host, f.ns)
		if contains(f.raw, name) {
			files["fns/"+name+"/func.yaml"] += rawFuncYAML
		}
		files["fns/"+name+"/handle.go"] = "package function\n"
	}
	if len(files) > 0 {
		gitserver.CreateRepo(t, s.gitRoot, s.repo(f)).Commit(t, "main", files, "the fleet")
	}
	s.git.RequireToken(s.repo(f), gitToken)
	if s.knative {
		s.createServices(t, f)
	}
	s.createRawFunctions(t, f)
	if s.tekton {
		s.simulateTekton(t, f)
	}
	s.createFunctions(t, f)
}

// repo names the fleet's private repository.
func (s *suite) repo(f *fleet) string { return f.ns + "-private" }

// leader is the holder of the operator's leader election Lease, "" when not read.
func (s *suite) leader() string {
	lease := &coordinationv1.Lease{}
	if err := s.admin.Get(context.Background(), types.NamespacedName{Namespace: s.dep.systemNamespace, Name: operator.LeaderElectionID}, lease); err != nil || lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

func (s *suite) createSecrets(t *testing.T, ns string) {
	t.Helper()
	// The "default" ServiceAccount that kube-controller-manager's serviceaccount
	// controller (not run here) makes in every namespace: a rebuild adds the registry
	// Secret to it.
	if err := s.admin.Create(context.Background(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}}); err != nil {
		t.Fatal(err)
	}
	for _, sec := range []*corev1.Secret{{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "git"},
		Data:       map[string][]byte{"token": []byte(gitToken)},
	}, {
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "registry"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: s.reg.DockerConfigJSON()},
	}} {
		if err := s.admin.Create(context.Background(), sec); err != nil {
			t.Fatal(err)
		}
	}
}

// createServices creates the Knative Services func deployed the fleet's functions as.
func (s *suite) createServices(t *testing.T, f *fleet) {
	t.Helper()
	for _, name := range f.knative() {
		version := oldMiddleware
		if !contains(f.outdated, name) {
			version = s.middleware
		}
		s.createService(t, f.ns, name, s.reg.Push(t, f.ns+"/"+name, version))
	}
}

func (s *suite) createFunctions(t *testing.T, f *fleet) {
	t.Helper()
	for _, name := range f.all() {
		s.createFunction(t, f.ns, name, s.git.URL(s.repo(f)), "fns/"+name, "git")
	}
}

// createService creates the Knative Service func deployed function name of ns as,
// running image.
func (s *suite) createService(t *testing.T, ns, name, image string) {
	t.Helper()
	svc := &servingv1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"function.knative.dev/name": name}},
		Spec: servingv1.ServiceSpec{ConfigurationSpec: servingv1.ConfigurationSpec{Template: servingv1.RevisionTemplateSpec{
			Spec: servingv1.RevisionSpec{PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Image: image}}}},
		}}},
	}
	if err := s.admin.Create(context.Background(), svc); err != nil {
		t.Fatal(err)
	}
}

// createFunction creates a Function of ns, from path of the repository at url (read
// with Secret gitSecret when not empty), its image read with Secret "registry".
func (s *suite) createFunction(t *testing.T, ns, name, url, path, gitSecret string) {
	t.Helper()
	fn := &v1alpha1.Function{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.FunctionSpec{
			Repository: v1alpha1.Repository{URL: url, Branch: "main", Path: path},
			Registry:   v1alpha1.Registry{AuthSecretRef: &corev1.LocalObjectReference{Name: "registry"}},
		},
	}
	if gitSecret != "" {
		fn.Spec.Repository.AuthSecretRef = &corev1.LocalObjectReference{Name: gitSecret}
	}
	if err := s.admin.Create(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

// simulateTekton plays the kubelet for the real Tekton controller (startTekton) in
// the fleet's namespace: every run succeeds with the newest middleware once the
// fleet's hold is off.
func (s *suite) simulateTekton(t *testing.T, f *fleet) {
	tekton.StartKubelet(t, s.env.Config, tekton.Options{
		Namespaces: []string{f.ns}, Registry: s.reg, Interval: 100 * time.Millisecond,
		Decide: func(*pipelinev1.PipelineRun) tekton.Outcome {
			return tekton.Outcome{MiddlewareVersion: s.middleware}
		},
		Hold: func(*pipelinev1.PipelineRun) bool { return !f.hold.Load() },
	})
}

// setUpWithBuilds is setUp on a cluster that serves Knative Serving and Tekton: the
// real Tekton and Knative Serving controllers run (startKnative), and the observer
// follows the builds.
func setUpWithBuilds(t *testing.T, values map[string]string, env []string) *suite {
	t.Helper()
	s := setUp(t, values, env)
	if err := s.env.InstallCRDs(append(knative.CRDs, envtest.TektonCRDs)...); err != nil {
		t.Fatal(err)
	}
	s.startTekton()
	s.startKnative(t)
	s.obs.watchBuilds(t)
	return s
}

// startTekton starts the real Tekton controller, once Tekton's CRDs are installed,
// for the rest of the suite.
func (s *suite) startTekton() {
	tekton.StartControllerT(s.top, s.env.Config)
	s.tekton = true
}

// startKnative starts the real Knative Serving controller, once Knative's CRDs
// (knative.CRDs) are installed, for the rest of the suite, with its webhook and its
// autoscaler and networking simulations (test/knative). Its Revisions' Deployments
// run on the suite's workload controllers and kubelet simulation (startWorkloads,
// started here when not yet), so that a function's pods and its rollouts go as a
// raw function's do.
func (s *suite) startKnative(t *testing.T) {
	t.Helper()
	if s.workloads == nil {
		s.startWorkloads(t)
	}
	began := time.Now()
	knative.StartT(s.top, s.env, knative.Options{OwnWorkloads: true, Logf: s.knativeLogf})
	s.knative = true
	t.Logf("the Knative Serving controller started in %s", time.Since(began).Round(time.Millisecond))
}

// knativeLogf logs, for the rest of the suite, what the Knative stack's simulations
// could not do, but while the API server is stopped on purpose: then each of them
// fails every second for every Revision, and it only counts.
func (s *suite) knativeLogf(format string, args ...any) {
	if s.apiDown.Load() {
		s.missed.Add(1)
		return
	}
	s.top.Logf(format, args...)
}

// function reads a Function, nil while the API server does not answer.
func (s *suite) function(ns, name string) *v1alpha1.Function {
	fn := &v1alpha1.Function{}
	if err := s.admin.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, fn); err != nil {
		return nil
	}
	return fn
}

// rebuilt says why the function is not rebuilt yet, "" once it is: its build
// succeeded, the newest middleware is seen serving, and it is Ready.
func (s *suite) rebuilt(ns, name string) string {
	fn := s.function(ns, name)
	if fn == nil {
		return "not read"
	}
	mw := fn.Status.GetCondition(v1alpha1.FunctionConditionMiddlewareUpToDate)
	if b := fn.Status.Build; b == nil || b.Phase != v1alpha1.BuildPhaseSucceeded || mw == nil || !mw.IsTrue() || !fn.Status.IsReady() {
		return fmt.Sprintf("%s/%s: build %+v, MiddlewareUpToDate %+v, conditions %+v", ns, name, fn.Status.Build, mw, fn.Status.Conditions)
	}
	return ""
}

// ready says why the function is not Ready, "" once it is.
func (s *suite) ready(ns, name string) string {
	fn := s.function(ns, name)
	if fn == nil {
		return "not read"
	}
	if !fn.Status.IsReady() {
		return fmt.Sprintf("%s/%s: Ready %+v", ns, name, fn.Status.GetCondition(apis.ConditionReady))
	}
	return ""
}

// servedBy says why the Knative function name of ns is not served by its Revision
// revision as the real Serving controller serves it, "" once it is: the Service
// Ready with all its traffic on revision, which runs the Service's image on a
// Deployment with a ready pod, and the Function naming revision as its latest ready
// one. The simulation it replaced wrote no Revision: the control that Knative
// Serving's controller, not the fixture, made the function Ready.
func (s *suite) servedBy(ns, name, revision string) string {
	ctx := context.Background()
	svc, rev := &servingv1.Service{}, &servingv1.Revision{}
	if err := s.admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, svc); err != nil {
		return err.Error()
	}
	if !svc.IsReady() || svc.Status.LatestReadyRevisionName != revision || len(svc.Status.Traffic) != 1 || svc.Status.Traffic[0].RevisionName != revision {
		return fmt.Sprintf("%s/%s: Knative Service ready %t, latest ready Revision %q, traffic %+v; want all on %s",
			ns, name, svc.IsReady(), svc.Status.LatestReadyRevisionName, svc.Status.Traffic, revision)
	}
	if err := s.admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: revision}, rev); err != nil {
		return err.Error()
	}
	if got, want := rev.Spec.Containers[0].Image, svc.Spec.Template.Spec.Containers[0].Image; got != want {
		return fmt.Sprintf("%s/%s: Revision %s runs %s, the Service names %s", ns, name, revision, got, want)
	}
	if d := s.deployment(ns, revision+"-deployment"); d == nil || d.Status.ReadyReplicas == 0 {
		return fmt.Sprintf("%s/%s: no ready pod of Revision %s's Deployment", ns, name, revision)
	}
	if fn := s.function(ns, name); fn == nil || fn.Status.Service == nil || fn.Status.Service.LatestReadyRevision != revision {
		return fmt.Sprintf("%s/%s: the Function does not name Revision %s as its latest ready one", ns, name, revision)
	}
	return ""
}

// buildRunning says why the function's build is not Running, "" once it is.
func (s *suite) buildRunning(ns, name string) string {
	fn := s.function(ns, name)
	if fn == nil {
		return "not read"
	}
	if b := fn.Status.Build; b == nil || b.Phase != v1alpha1.BuildPhaseRunning {
		return fmt.Sprintf("%s/%s: build %+v, want Running", ns, name, fn.Status.Build)
	}
	return ""
}

// until polls check every 100ms until it returns "" and returns how long that took,
// or fails the test with what check last said once bound has passed.
func until(t *testing.T, bound time.Duration, what string, check func() string) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		msg := check()
		if msg == "" {
			return time.Since(start)
		}
		if time.Since(start) > bound {
			t.Fatalf("%s: not within %s: %s", what, bound, msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// every returns a check that is "" when check is "" for each function of the fleets.
func every(fleets []*fleet, check func(ns, name string) string) func() string {
	return func() string {
		for _, f := range fleets {
			for _, name := range f.all() {
				if msg := check(f.ns, name); msg != "" {
					return msg
				}
			}
		}
		return ""
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// What func's raw deployer (knative.dev/func pkg/k8s, v0.50.1) writes, spelled out
// here as func spells it, not taken from the operator: the fixture must not agree
// with the operator by construction.
const (
	// rawFuncYAML is what a raw function's func.yaml adds: the deployer asked for.
	rawFuncYAML = "deployer: raw\n"
	// rawDeployer is the deployer annotation's value, and status.deployment.deployer's.
	rawDeployer = "raw"
)

// workloads drives raw functions' Deployments, and Knative Revisions', as a cluster
// would: the real deployment, replicaset and garbage collector controllers of
// kube-controller-manager, and a kubelet simulation for their pods, which holds the
// pods of a function marked unavailable Running but not ready (a failing readiness
// probe).
type workloads struct {
	pods *envtest.Kubelet

	mu          sync.Mutex
	unavailable map[string]bool // namespace/name of functions whose pods are held not ready
	// held counts the answers that held a pod not ready: the control that the fault
	// took.
	held atomic.Int64
}

// startWorkloads starts the workload controllers and the kubelet simulation for the
// rest of the suite (stopped, kube-controller-manager by its pid, when it ends).
func (s *suite) startWorkloads(t *testing.T) {
	t.Helper()
	began := time.Now()
	s.env.StartControllersT(s.top, envtest.WorkloadControllers()...)
	w := &workloads{unavailable: map[string]bool{}}
	w.pods = envtest.SimulateKubeletT(s.top, s.env.Config, envtest.KubeletOptions{NotReady: w.notReady})
	s.workloads = w
	t.Logf("workload controllers and kubelet simulation started in %s", time.Since(began).Round(time.Millisecond))
}

// notReady is the kubelet simulation's knob: a pod of a function marked unavailable.
func (w *workloads) notReady(p *corev1.Pod) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.unavailable[p.Namespace+"/"+p.Labels["function.knative.dev/name"]] {
		return false
	}
	w.held.Add(1)
	return true
}

// setUnavailable holds the pods of the function key not ready (on), or lets them go,
// at once.
func (w *workloads) setUnavailable(key string, on bool) {
	w.mu.Lock()
	w.unavailable[key] = on
	w.mu.Unlock()
	w.pods.Resync()
}

// createRawFunctions pushes each raw function's image, running the newest
// middleware, and deploys it as func's raw deployer does.
func (s *suite) createRawFunctions(t *testing.T, f *fleet) {
	t.Helper()
	for _, name := range f.raw {
		s.createRaw(t, f.ns, name, s.reg.Push(t, f.ns+"/"+name, s.middleware))
	}
}

// createRaw creates what func's raw deployer deploys for function name of ns running
// image (by digest, as func deploys a build's image): a Deployment of one replica and
// a ClusterIP Service the Deployment owns, both labelled with the function's name
// and annotated with the deployer (envtest.FuncWorkload).
func (s *suite) createRaw(t *testing.T, ns, name, image string) {
	t.Helper()
	if err := envtest.NewFuncWorkload(ns, name, image, rawDeployer).Create(context.Background(), s.admin); err != nil {
		t.Fatal(err)
	}
}

// deployment reads a Deployment, nil while the API server does not answer.
func (s *suite) deployment(ns, name string) *appsv1.Deployment {
	d := &appsv1.Deployment{}
	if err := s.admin.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, d); err != nil {
		return nil
	}
	return d
}

// rawReady says why the raw function is not Ready, bound to its Deployment as func's
// raw deployer's, "" once it is: the positive control that the operator took the raw
// path (not a Knative Service's).
func (s *suite) rawReady(ns, name string) string {
	if msg := s.ready(ns, name); msg != "" {
		return msg
	}
	fn, d := s.function(ns, name), s.deployment(ns, name)
	if fn == nil || d == nil {
		return "not read"
	}
	if dep, svc := fn.Status.Deployment, fn.Status.Service; dep == nil || dep.Deployer != rawDeployer || svc == nil || svc.UID != d.UID ||
		dep.Image != d.Spec.Template.Spec.Containers[0].Image {
		return fmt.Sprintf("%s/%s: status.deployment %+v, status.service %+v; want func's raw deployer's Deployment %s (UID %s, image %s)",
			ns, name, dep, svc, d.Name, d.UID, d.Spec.Template.Spec.Containers[0].Image)
	}
	return ""
}

// buildOperator builds cmd/func-operator (cached by go build).
func buildOperator(t *testing.T, root shippedRoot) string {
	t.Helper()
	bin := root.path("func-operator")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/func-operator")
	cmd.Dir = envtest.RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the operator: %v\n%s", err, out)
	}
	return bin
}

// writeKubeconfig writes a kubeconfig that reaches the API server through server,
// with no credentials of its own (the front adds the operator's).
func writeKubeconfig(t *testing.T, root shippedRoot, server string) string {
	t.Helper()
	path := root.path("kubeconfig")
	content := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, server)
	// Readable by the operator's user; it holds no credentials.
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// freeAddr is a loopback address for one of the operator's listeners. Its port is
// below the kernel's ephemeral range (32768-60999 here), so that no listener on port 0
// and no outgoing connection of the tests running beside can take it between the
// choice and the operator's bind: that once crashed a start ("address already in
// use"), which a pod, in a network namespace of its own, never sees. No port is handed
// out twice in a process.
func freeAddr(t *testing.T) string {
	t.Helper()
	freePorts.Lock()
	defer freePorts.Unlock()
	for range 100 {
		port := 20000 + rand.IntN(12000)
		if freePorts.given[port] {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // taken: another one
		}
		_ = l.Close()
		freePorts.given[port] = true
		return l.Addr().String()
	}
	t.Fatal("no free port below the ephemeral range in 100 tries")
	return ""
}

// freePorts are the ports freeAddr handed out.
var freePorts = struct {
	sync.Mutex
	given map[int]bool
}{given: map[int]bool{}}

// deleteObject deletes obj, as a user would.
func (s *suite) deleteObject(t *testing.T, obj client.Object) {
	t.Helper()
	if err := s.admin.Delete(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
}

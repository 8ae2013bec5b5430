package faults

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/operator"
	"github.com/fnops/func-operator/test/envtest"
	"github.com/fnops/func-operator/test/gitserver"
	"github.com/fnops/func-operator/test/knative"
	"github.com/fnops/func-operator/test/registrytest"
)

// The suite's Secret values: none may show in the operator's output, an Event or a status.
const (
	gitToken         = "ghp-faults-5b1e8c0d7a-token"
	registryUser     = "robot"
	registryPassword = "pw-faults-91c2d4e6-secret"
)

// suite is one operator binary, run as config/ deploys it, and what it talks to.
type suite struct {
	env     *envtest.Environment
	admin   client.Client
	gitRoot string
	git     *gitserver.HTTPServer
	reg     *registrytest.Registry
	front   *apiFront
	kubelet *kubeletSim
	// workloads drives raw functions' Deployments and Knative Revisions' (startWorkloads).
	workloads *workloads
	dep       deployment
	obs       *observer
	// middleware is the newest func-go version the linked func library builds.
	middleware string
	// knative and tekton: the cluster serves Knative Serving / Tekton.
	knative, tekton bool
	// apiDown is set while apiServerRestart has the API server stopped; what the
	// Knative stack's simulations fail to do meanwhile is counted in missed, not
	// logged (knativeLogf).
	apiDown atomic.Bool
	missed  atomic.Int64
	fleets  []*fleet
	rows    []row
	// cursor is where the counters stood at the last row.
	cursor counted
	// top is the suite's test, for what outlives one fault.
	top *testing.T
	// root holds what the operator runs with as shipped.
	root shippedRoot
}

// row is one fault: what was injected, what a user saw, how long recovery took, and
// the counters that must be zero.
type row struct {
	fault, sees             string
	recovery                time.Duration
	flaps, duplicates, lost int
}

// counted is how many Ready flaps and duplicate builds the observer has counted.
type counted struct{ flaps, duplicates int }

// config are the ConfigMap values of the suite: the shipped keys, with intervals a
// test can wait for.
var suiteConfig = map[string]string{
	config.KeyCheckInterval:       "10s",
	config.KeyGitTimeout:          "2s",
	config.KeyRegistryTimeout:     "2s",
	config.KeyBuildBackoff:        "2s",
	config.KeyBuildBackoffMax:     "10s",
	config.KeyBuildTimeout:        "5m",
	config.KeyOutageGrace:         "1h",
	config.KeyMaxConcurrentBuilds: "2",
	// A fleet is a namespace, whose builds the faults run two at a time.
	config.KeyMaxConcurrentBuildsPerNamespace: "100%",
	config.KeyBuilderImagePrefix + "pack.go":  "registry.example/knative/builder-jammy-tiny:pinned",
}

// TestFaults injects each fault of a fleet operator's worst day into the operator
// binary, run with the arguments, environment, identity and RBAC config/ gives it,
// and fails when a counter that must be zero is not: Ready flaps of healthy
// functions, duplicate builds, lost builds, Secret values shown. Each fault is a
// step on the same running fleet, so every later fault also tests that the
// functions of the earlier ones stay as they were: Knative ones, and a raw one
// (func's raw deployer: a Deployment and a core Service, driven by the real workload
// controllers and a kubelet simulation) from the first step on.
//
// Knative functions are served by the real Knative Serving controller, from the
// step that installs it on: their Revisions' Deployments run on the same workload
// controllers and kubelet simulation (test/knative). The raw function is healthy:
// the build faults (kills mid-build, a PipelineRun deleted, a queued function's
// Knative Service deleted) rebuild Knative functions (the Tekton simulation deploys
// to Knative Services, and Serving rolls each new image out as a new Revision), and
// the raw one must sit through them without a flap. Its own fault is its Deployment
// becoming unavailable.
func TestFaults(t *testing.T) {
	s := setUp(t, nil, nil)
	s.startWorkloads(t)
	t.Run("Knative Serving and Tekton installed after the operator", s.lateAPIs)
	t.Run("SIGKILL mid-build", s.killMidBuild)
	for _, k := range killPoints {
		t.Run("SIGKILL mid-status-write: "+k.name, func(t *testing.T) { s.killAt(t, k) })
	}
	t.Run("API server stopped and restarted mid-build", s.apiServerRestart)
	for _, r := range registryFaults {
		t.Run("registry "+r.name+" across a restart", func(t *testing.T) { s.registryFault(t, r) })
	}
	for _, g := range gitFaults {
		t.Run("git host "+g.name, func(t *testing.T) { s.gitFault(t, g) })
	}
	t.Run("PipelineRun deleted mid-build", s.pipelineRunDeleted)
	t.Run("Knative Service deleted while queued", s.serviceDeletedWhileQueued)
	t.Run("raw function's Deployment unavailable", s.rawUnavailable)
	s.finish(t)
}

// setUp starts the control plane, the servers and the operator binary, with the
// suite's ConfigMap values and values (overriding them), and env added to the
// Deployment's (what a pod would get from elsewhere, such as mounted CAs).
func setUp(t *testing.T, values map[string]string, env []string) *suite {
	ctrl.SetLogger(logr.Discard()) // the suite's own clients; the operator logs to its output
	s := &suite{top: t}
	pin, err := funclib.AvailableMiddleware("go", "http")
	if err != nil {
		t.Fatal(err)
	}
	s.middleware = pin.Version
	// A control plane of the suite's own, without Knative or Tekton: the first fault.
	s.env = envtest.StartT(t)
	if _, err := envtest.Apply(context.Background(), s.env.Config, append(append(envtest.RBACFiles, envtest.PolicyFiles...), "config/400-config.yaml")...); err != nil {
		t.Fatal(err)
	}
	scheme, err := operator.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	if s.admin, err = client.New(s.env.Config, client.Options{Scheme: scheme}); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{}
	if err := s.admin.Get(context.Background(), types.NamespacedName{Namespace: "func-operator", Name: config.ConfigMapName}, cm); err != nil {
		t.Fatal(err)
	}
	for k, v := range suiteConfig {
		cm.Data[k] = v
	}
	for k, v := range values {
		cm.Data[k] = v
	}
	if err := s.admin.Update(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	s.gitRoot = gitserver.NewRepoRoot(t)
	s.git = gitserver.StartHTTP(t, s.gitRoot)
	s.reg = registrytest.StartPrivate(t, registryUser, registryPassword)

	// The operator's identity is its ServiceAccount's, bound by config/ only. The
	// front adds its credentials; the binary reaches the API server only through it.
	user, err := s.env.AddUser(ctrlenvtest.User{Name: envtest.OperatorUser,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:func-operator", "system:authenticated"}})
	if err != nil {
		t.Fatal(err)
	}
	checkGrants(t, user.Config())
	s.front = startAPIFront(t, user.Config())
	root := newShippedRoot(t)
	s.dep = readDeployment(t, root, writeKubeconfig(t, root, s.front.URL))
	if s.dep.systemNamespace != "func-operator" {
		t.Fatalf("the Deployment runs in %s, want func-operator (where config/ puts the ConfigMap)", s.dep.systemNamespace)
	}
	s.root = root
	s.dep.env = append(s.dep.env, env...)
	s.kubelet = startKubeletSim(t, buildOperator(t, root), s.dep)
	s.obs = startObserver(t, s.env.Config, s.secrets())
	until(t, time.Minute, "the operator's readiness", func() string {
		resp, err := http.Get("http://" + s.dep.probes + "/readyz")
		if err != nil {
			return err.Error()
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return resp.Status
		}
		return ""
	})
	// The Go runtime's soft memory limit follows the container's (80% of it), read
	// the way the Deployment hands it over.
	if want := fmt.Sprintf(`"goMemoryLimit":%d,"from":"container"`, int64(float64(s.dep.memoryLimit)*0.8)); s.dep.memoryLimit == 0 ||
		!strings.Contains(s.kubelet.Logs.String(), want) {
		t.Errorf("the operator's start-up log does not say %s (the Deployment's memory limit: %d bytes)", want, s.dep.memoryLimit)
	}
	return s
}

// record adds a row with what the counters counted since the last row, and moves
// the cursor: every count lands in exactly one row (or, after the last, in finish).
func (s *suite) record(t *testing.T, fault, sees string, recovery time.Duration, lost int) {
	flaps, dups := s.obs.counts()
	s.rows = append(s.rows, row{fault: fault, sees: sees, recovery: recovery,
		flaps: len(flaps) - s.cursor.flaps, duplicates: len(dups) - s.cursor.duplicates, lost: lost})
	for _, f := range flaps[s.cursor.flaps:] {
		t.Errorf("Ready flap: %s", f)
	}
	for _, d := range dups[s.cursor.duplicates:] {
		t.Errorf("duplicate build: %s", d)
	}
	s.cursor = counted{flaps: len(flaps), duplicates: len(dups)}
}

// secrets are the suite's Secret values, as they could show: raw and base64.
func (s *suite) secrets() []string {
	return []string{gitToken, registryPassword,
		base64.StdEncoding.EncodeToString([]byte(gitToken)),
		base64.StdEncoding.EncodeToString([]byte(registryUser + ":" + registryPassword))}
}

// killOperator kills the running operator process (waiting for one to run), and
// waits for the kubelet simulation to start the next.
func (s *suite) killOperator(t *testing.T) {
	t.Helper()
	until(t, time.Minute, "an operator process to kill", func() string {
		if !s.kubelet.running() {
			return "none runs"
		}
		return ""
	})
	starts := s.kubelet.Starts()
	if s.kubelet.kill() == 0 {
		t.Fatal("no operator process to kill")
	}
	until(t, time.Minute, "the next operator process", func() string {
		if s.kubelet.Starts() == starts {
			return "not started yet"
		}
		return ""
	})
}

// lostBuilds waits up to bound for every outdated function of the fleets (but
// those in except) to be rebuilt, and returns how many were not, failing for each.
func (s *suite) lostBuilds(t *testing.T, bound time.Duration, fleets []*fleet, except ...string) (lost int) {
	t.Helper()
	start := time.Now()
	for _, f := range fleets {
		for _, name := range f.outdated {
			if contains(except, f.key(name)) {
				continue
			}
			var msg string
			for {
				if msg = s.rebuilt(f.ns, name); msg == "" || time.Since(start) > bound {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if msg != "" {
				lost++
				t.Errorf("lost build: %s not rebuilt within %s: %s", f.key(name), bound, msg)
			}
		}
	}
	return lost
}

// lateAPIs: the operator starts on a cluster without Knative Serving and Tekton;
// both are installed, and their controllers start; without a restart, the functions
// are described and an outdated one is rebuilt through Tekton and rolled out by
// Knative Serving. A raw function, which needs neither, is Ready before and stays so.
func (s *suite) lateAPIs(t *testing.T) {
	f := s.newNamespace(t, "late", 1, 1, false)
	f.raw = []string{"raw-0"}
	s.populate(t, f)
	s.fleets = append(s.fleets, f)
	until(t, time.Minute, "KnativeServingNotInstalled", func() string {
		for _, name := range f.knative() {
			fn := s.function(f.ns, name)
			if fn == nil {
				return "not read"
			}
			if c := fn.Status.GetCondition(v1alpha1.FunctionConditionDeployed); c == nil || c.Reason != v1alpha1.ReasonKnativeServingNotInstalled {
				return fmt.Sprintf("%s: Deployed %+v", name, c)
			}
		}
		return ""
	})
	until(t, 2*time.Minute, "the raw function Ready without Knative Serving", func() string { return s.rawReady(f.ns, f.raw[0]) })
	installed := time.Now()
	if err := s.env.InstallCRDs(append(knative.CRDs, envtest.TektonCRDs)...); err != nil {
		t.Fatal(err)
	}
	s.startTekton()
	s.startKnative(t) // for the rest of the suite
	s.obs.watchBuilds(t)
	s.createServices(t, f)
	s.simulateTekton(t, f)
	until(t, 2*time.Minute, "the healthy function Ready", func() string { return s.ready(f.ns, f.healthy[0]) })
	described := time.Since(installed)
	lost := s.lostBuilds(t, 2*time.Minute, []*fleet{f})
	if msg := s.rawReady(f.ns, f.raw[0]); msg != "" {
		t.Errorf("after Knative Serving and Tekton came: %s", msg)
	}
	// Served as Knative serves: the healthy function by its first Revision, the
	// rebuilt one by the second, which the deploy step's new image made.
	if msg := s.servedBy(f.ns, f.healthy[0], f.healthy[0]+"-00001"); msg != "" {
		t.Error(msg)
	}
	if msg := s.servedBy(f.ns, f.outdated[0], f.outdated[0]+"-00002"); msg != "" {
		t.Error(msg)
	}
	s.record(t, "Knative Serving and Tekton installed after the operator",
		"Deployed `KnativeServingNotInstalled` until then (the raw function Ready all along); picked up without a restart, the outdated function rebuilt through Tekton and served by its new Revision", described, lost)
}

// killMidBuild: SIGKILL while two builds run; the new process adopts them.
func (s *suite) killMidBuild(t *testing.T) {
	f := s.newFleet(t, "kill-build", 1, 2, true)
	s.fleets = append(s.fleets, f)
	until(t, 2*time.Minute, "both builds running", func() string {
		for _, name := range f.outdated {
			if msg := s.buildRunning(f.ns, name); msg != "" {
				return msg
			}
		}
		return ""
	})
	leader := s.leader()
	killed := time.Now()
	if s.kubelet.kill() == 0 {
		t.Fatal("no operator process to kill")
	}
	// The builds finish only once the next process leads, so that it adopts them running.
	s.nextLeader(t, leader)
	f.hold.Store(false)
	lost := s.lostBuilds(t, 2*time.Minute, []*fleet{f})
	for _, name := range f.outdated {
		if n := s.obs.runsOf(f.key(name)); n != 1 {
			t.Errorf("%s: %d PipelineRuns, want the 1 adopted across the kill", f.key(name), n)
		}
	}
	s.record(t, "operator SIGKILLed mid-build (2 builds running)",
		"the running PipelineRuns adopted by the next process (`BuildAdopted`), not started again", time.Since(killed), lost)
}

// nextLeader waits for a process other than leader to lead, and for it to have
// looked at every Function (it reconciles them all at start): whatever it would do
// wrong after the fault, it has begun to.
func (s *suite) nextLeader(t *testing.T, leader string) {
	t.Helper()
	until(t, time.Minute, "the next process leading", func() string {
		if l := s.leader(); l == "" || l == leader {
			return "the Lease is still " + leader
		}
		return ""
	})
	time.Sleep(5 * time.Second)
}

// killPoint is a moment of a build at which the operator dies, with a write to the
// API server half done.
type killPoint struct {
	name string
	// landed: the API server took the write before the kill.
	landed bool
	match  func(f *fleet, method, path string, body []byte) bool
}

func statusWrite(phase string) func(f *fleet, method, path string, body []byte) bool {
	return func(f *fleet, method, path string, body []byte) bool {
		return (method == http.MethodPatch || method == http.MethodPut) &&
			strings.HasPrefix(path, "/apis/functions.dev/v1alpha1/namespaces/"+f.ns+"/functions/") && strings.HasSuffix(path, "/status") &&
			strings.Contains(string(body), `"phase":"`+phase+`"`)
	}
}

var killPoints = []killPoint{{
	name: "build Starting written, answer lost", landed: true, match: statusWrite(v1alpha1.BuildPhaseStarting),
}, {
	name: "PipelineRun created, answer lost", landed: true,
	match: func(f *fleet, method, path string, _ []byte) bool {
		return method == http.MethodPost && strings.HasPrefix(path, "/apis/tekton.dev/") && strings.HasSuffix(path, "/namespaces/"+f.ns+"/pipelineruns")
	},
}, {
	name: "build Running never written", landed: false, match: statusWrite(v1alpha1.BuildPhaseRunning),
}, {
	name: "build Succeeded written, answer lost", landed: true, match: statusWrite(v1alpha1.BuildPhaseSucceeded),
}}

// killAt kills the operator at k while it rebuilds one function.
func (s *suite) killAt(t *testing.T, k killPoint) {
	f := s.newNamespace(t, "kill-write", 0, 1, false)
	s.fleets = append(s.fleets, f)
	leader := s.leader()
	fired := s.front.setTrap(k.landed, s.kubelet.kill, func(method, path string, body []byte) bool {
		return k.match(f, method, path, body)
	})
	s.populate(t, f)
	var killed time.Time
	select {
	case what := <-fired:
		killed = time.Now()
		t.Logf("killed at %s", what)
	case <-time.After(2 * time.Minute):
		t.Fatalf("the operator never made the write %q", k.name)
	}
	lost := s.lostBuilds(t, 3*time.Minute, []*fleet{f})
	recovered := time.Since(killed)
	s.nextLeader(t, leader)
	if n := s.obs.runsOf(f.key(f.outdated[0])); n != 1 {
		t.Errorf("%d PipelineRuns, want 1", n)
	}
	s.record(t, "operator SIGKILLed mid-status-write: "+k.name, "the build goes on in the next process; one PipelineRun", recovered, lost)
}

// apiServerRestart stops kube-apiserver past the leader election's renew deadline
// while a build runs, and starts it again.
func (s *suite) apiServerRestart(t *testing.T) {
	f := s.newFleet(t, "apiserver", 0, 1, true)
	s.fleets = append(s.fleets, f)
	until(t, 2*time.Minute, "the build running", func() string { return s.buildRunning(f.ns, f.outdated[0]) })
	healthy := s.obs.readyNow()
	s.apiDown.Store(true)
	if err := s.env.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Second)
	if err := s.env.StartAPIServer(); err != nil {
		t.Fatal(err)
	}
	s.apiDown.Store(false)
	t.Logf("the Knative stack's simulations missed %d reads or writes while the API server was stopped", s.missed.Swap(0))
	back := time.Now()
	f.hold.Store(false)
	lost := s.lostBuilds(t, 3*time.Minute, []*fleet{f})
	recovered := time.Since(back)
	time.Sleep(5 * time.Second) // for a duplicate, if one were coming
	if n := s.obs.runsOf(f.key(f.outdated[0])); n != 1 {
		t.Errorf("%d PipelineRuns, want 1", n)
	}
	for _, key := range healthy {
		ns, name, _ := strings.Cut(key, "/")
		if msg := s.ready(ns, name); msg != "" {
			t.Errorf("after the API server came back: %s", msg)
		}
	}
	s.record(t, "API server stopped for 20s and restarted, mid-build",
		fmt.Sprintf("nothing while it is down (the operator exits when its leader Lease cannot be renewed, and is restarted); %d Ready functions stay Ready; the build finishes once", len(healthy)),
		recovered, lost)
}

// registryFault is an outage of the registry while the operator must read every image
// again (it was restarted).
type registryFault struct {
	name, reason string
	start, end   func(r *registrytest.Registry)
}

var registryFaults = []registryFault{{
	name: "answers 503", reason: v1alpha1.ReasonRegistryUnreachable,
	start: func(r *registrytest.Registry) { r.FailWith(http.StatusServiceUnavailable) },
	end:   func(r *registrytest.Registry) { r.FailWith(0) },
}, {
	name: "refuses the credentials (401)", reason: v1alpha1.ReasonRegistryAuthFailed,
	start: func(r *registrytest.Registry) { r.FailWith(http.StatusUnauthorized) },
	end:   func(r *registrytest.Registry) { r.FailWith(0) },
}, {
	name: "answers after 30s (registryTimeout 2s)", reason: v1alpha1.ReasonRegistryTimedOut,
	start: func(r *registrytest.Registry) { r.Delay(30 * time.Second) },
	end:   func(r *registrytest.Registry) { r.Delay(0) },
}}

func (s *suite) registryFault(t *testing.T, r registryFault) {
	r.start(s.reg)
	defer r.end(s.reg)
	s.killOperator(t)
	reachable := func(want bool, reason string) func(ns, name string) string {
		return func(ns, name string) string {
			fn := s.function(ns, name)
			if fn == nil {
				return "not read"
			}
			c := fn.Status.GetCondition(v1alpha1.FunctionConditionRegistryReachable)
			if c == nil || c.IsTrue() != want || (!want && c.Reason != reason) {
				return fmt.Sprintf("%s/%s: RegistryReachable %+v", ns, name, c)
			}
			return s.ready(ns, name)
		}
	}
	seen := until(t, 2*time.Minute, "every function showing the outage", every(s.fleets, reachable(false, r.reason)))
	t.Logf("every function showed %s %s after the kill", r.reason, seen)
	r.end(s.reg)
	ended := time.Now()
	until(t, 2*time.Minute, "every function seeing the registry again", every(s.fleets, reachable(true, "")))
	recovered := time.Since(ended)
	s.record(t, "registry "+r.name+" while the operator reads every image again (after a SIGKILL)",
		fmt.Sprintf("Ready stays True; `RegistryReachable` False (`%s`, severity Warning) on every function within %s", r.reason, seen.Round(time.Second)),
		recovered, s.lostBuilds(t, 30*time.Second, s.fleets))
}

// gitFault is an outage of the git host.
type gitFault struct {
	name string
	code int
	// reason is SourceReachable's during the outage.
	reason string
}

var gitFaults = []gitFault{
	{name: "answers 503", code: http.StatusServiceUnavailable, reason: v1alpha1.ReasonBranchListFailed},
	{name: "resets connections", code: gitserver.Reset, reason: v1alpha1.ReasonBranchListFailed},
	{name: "hangs past gitTimeout", code: gitserver.Hang, reason: v1alpha1.ReasonGitTimedOut},
}

func (s *suite) gitFault(t *testing.T, g gitFault) {
	s.git.FailWith(g.code)
	defer s.git.FailWith(0)
	reachable := func(want bool) func(ns, name string) string {
		return func(ns, name string) string {
			fn := s.function(ns, name)
			if fn == nil {
				return "not read"
			}
			c := fn.Status.GetCondition(v1alpha1.FunctionConditionSourceReachable)
			if c == nil || c.IsTrue() != want || (!want && c.Reason != g.reason) {
				return fmt.Sprintf("%s/%s: SourceReachable %+v", ns, name, c)
			}
			return s.ready(ns, name)
		}
	}
	seen := until(t, time.Minute, "every function showing the outage", every(s.fleets, reachable(false)))
	s.git.FailWith(0)
	ended := time.Now()
	until(t, time.Minute, "every function seeing the git host again", every(s.fleets, reachable(true)))
	recovered := time.Since(ended)
	s.record(t, "git host "+g.name,
		fmt.Sprintf("Ready stays True; `SourceReachable` False (`%s`, severity Warning) on every function within %s (the next check)", g.reason, seen.Round(time.Second)),
		recovered, s.lostBuilds(t, 30*time.Second, s.fleets))
}

// pipelineRunDeleted deletes a running build's PipelineRun.
func (s *suite) pipelineRunDeleted(t *testing.T) {
	f := s.newFleet(t, "run-deleted", 0, 1, true)
	s.fleets = append(s.fleets, f)
	name := f.outdated[0]
	until(t, 2*time.Minute, "the build running", func() string { return s.buildRunning(f.ns, name) })
	run := s.function(f.ns, name).Status.Build.PipelineRun
	f.hold.Store(false)
	s.deleteObject(t, &pipelinev1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: run}})
	deleted := time.Now()
	lost := s.lostBuilds(t, 2*time.Minute, []*fleet{f})
	if n := s.obs.runsOf(f.key(name)); n != 2 {
		t.Errorf("%d PipelineRuns, want 2: the deleted one and its retry", n)
	}
	s.record(t, "a running build's PipelineRun deleted",
		"`BuildFailed` (\"was deleted before it finished\"), retried after `buildBackoff`", time.Since(deleted), lost)
}

// serviceDeletedWhileQueued deletes the Knative Service of a function that waits
// for a build slot.
func (s *suite) serviceDeletedWhileQueued(t *testing.T) {
	f := s.newFleet(t, "queued", 0, 3, true)
	s.fleets = append(s.fleets, f)
	var queued string
	until(t, 2*time.Minute, "two builds running, one queued", func() string {
		running, waiting := 0, ""
		for _, name := range f.outdated {
			fn := s.function(f.ns, name)
			if fn == nil || fn.Status.Build == nil {
				return "not yet"
			}
			switch fn.Status.Build.Phase {
			case v1alpha1.BuildPhaseRunning:
				running++
			case v1alpha1.BuildPhaseQueued:
				waiting = name
			}
		}
		if running != 2 || waiting == "" {
			return fmt.Sprintf("%d running, queued %q", running, waiting)
		}
		queued = waiting
		return ""
	})
	s.deleteObject(t, &servingv1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: queued}})
	gaveUp := until(t, time.Minute, "the queued function giving its place up", func() string {
		fn := s.function(f.ns, queued)
		if fn == nil {
			return "not read"
		}
		d := fn.Status.GetCondition(v1alpha1.FunctionConditionDeployed)
		if b := fn.Status.Build; (b != nil && b.Phase == v1alpha1.BuildPhaseQueued) || d == nil || !d.IsFalse() {
			return fmt.Sprintf("build %+v, Deployed %+v", fn.Status.Build, d)
		}
		return ""
	})
	f.hold.Store(false)
	lost := s.lostBuilds(t, 2*time.Minute, []*fleet{f}, f.key(queued))
	if n := s.obs.runsOf(f.key(queued)); n != 0 {
		t.Errorf("%d PipelineRuns for the function whose Service was deleted, want 0", n)
	}
	d := s.function(f.ns, queued).Status.GetCondition(v1alpha1.FunctionConditionDeployed)
	s.record(t, "a queued function's Knative Service deleted",
		fmt.Sprintf("Deployed False (`%s`); its queue place freed, the others build", d.Reason), gaveUp, lost)
}

// rawUnavailable is the raw functions' own fault, their counterpart of a Knative
// Service that stops being Ready: the kubelet holds the pod of a raw function not
// ready, as a failing readiness probe would, so that its Deployment is unavailable.
// The Function says so in the Deployment's words (ServiceReady, and Ready, False with
// the reason of its Available condition) while it lasts, and is Ready again once the
// pod is. It is the one fault of the suite that makes a function unhealthy: the
// observer counts its Ready going down apart, not as a flap.
func (s *suite) rawUnavailable(t *testing.T) {
	f := s.newNamespace(t, "unavailable", 0, 0, false)
	f.raw = []string{"raw-0"}
	s.populate(t, f)
	s.fleets = append(s.fleets, f)
	name, key := f.raw[0], f.key(f.raw[0])
	until(t, 2*time.Minute, "the raw function Ready", func() string { return s.rawReady(f.ns, name) })
	s.obs.expectUnhealthy(key, true)
	held := s.workloads.held.Load()
	s.workloads.setUnavailable(key, true)
	defer s.workloads.setUnavailable(key, false) // at once below; this when the test fails first
	var reason string
	seen := until(t, time.Minute, "ServiceReady False in the Deployment's words", func() string {
		d := s.deployment(f.ns, name)
		if d == nil {
			return "Deployment not read"
		}
		var available *appsv1.DeploymentCondition
		for i := range d.Status.Conditions {
			if d.Status.Conditions[i].Type == appsv1.DeploymentAvailable {
				available = &d.Status.Conditions[i]
			}
		}
		if available == nil || available.Status != corev1.ConditionFalse {
			return fmt.Sprintf("Deployment %s: Available %+v, status %+v", name, available, d.Status)
		}
		fn := s.function(f.ns, name)
		if fn == nil {
			return "not read"
		}
		c, ready := fn.Status.GetCondition(v1alpha1.FunctionConditionServiceReady), fn.Status.GetCondition(v1alpha1.FunctionConditionReady)
		if c == nil || !c.IsFalse() || c.Reason != available.Reason || ready == nil || !ready.IsFalse() {
			return fmt.Sprintf("ServiceReady %+v, Ready %+v; want both False, reason %s, as the Deployment's status says: %+v", c, ready, available.Reason, d.Status)
		}
		reason = c.Reason
		return ""
	})
	if n := s.workloads.held.Load() - held; n == 0 {
		t.Error("the kubelet simulation held no pod of the raw function not ready: the fault did not take")
	}
	s.workloads.setUnavailable(key, false)
	ended := time.Now()
	until(t, time.Minute, "the raw function Ready again", func() string { return s.rawReady(f.ns, name) })
	recovered := time.Since(ended)
	until(t, 30*time.Second, "the observer seeing it go down once and come back", func() string {
		if downs, ready := s.obs.readyDowns(key); downs != 1 || !ready {
			return fmt.Sprintf("Ready went down %d times, Ready now %v; want once, and Ready", downs, ready)
		}
		return ""
	})
	s.obs.expectUnhealthy(key, false)
	s.record(t, "a raw function's Deployment unavailable (the kubelet holds its pod not ready)",
		fmt.Sprintf("ServiceReady and Ready False (`%s`, the Deployment's Available reason) within %s; Ready again once the pod is", reason, seen.Round(100*time.Millisecond)),
		recovered, 0)
}

// finish checks what holds across the whole suite and prints the table.
func (s *suite) finish(t *testing.T) {
	leaks := s.checkCounters(t)
	// The control of the kills: every SIGKILL (5 mid-build or mid-write, 3 across
	// registry faults) and the API server outage made the kubelet start it again.
	if n := s.kubelet.Starts(); n < 1+5+3+1 {
		t.Errorf("the operator was started %d times, want at least 10: a fault did not take", n)
	}
	// Every raw function came through every fault (and its own) Ready, as func's raw
	// deployer's.
	raw, functions := 0, 0
	for _, f := range s.fleets {
		functions += len(f.all())
		for _, name := range f.raw {
			raw++
			if msg := s.rawReady(f.ns, name); msg != "" {
				t.Errorf("at the end: %s", msg)
			}
		}
	}
	if raw == 0 {
		t.Error("no raw function in the suite")
	}
	// What SIGKILLs left in the emptyDir went when the next process started.
	if left, err := filepath.Glob(filepath.Join(s.dep.workDir, "func-library-*")); err != nil || len(left) != 1 {
		t.Errorf("func library directories in the work dir after %d starts: %v, %v; want the running process' one", s.kubelet.Starts(), left, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| Fault | What the user sees | Recovery | Ready flaps | Duplicate builds | Lost builds |\n|---|---|---|---|---|---|\n")
	for _, r := range s.rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %d | %d |\n", r.fault, r.sees, r.recovery.Round(time.Second), r.flaps, r.duplicates, r.lost)
	}
	fmt.Fprintf(&b, "\nSecret values shown: %d. Operator starts: %d. Functions: %d (%d raw) in %d namespaces.\n", leaks, s.kubelet.Starts(), functions, raw, len(s.fleets))
	t.Logf("fault suite:\n%s", b.String())
	if path := os.Getenv("FUNC_OPERATOR_FAULTS_TABLE"); path != "" {
		if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
			t.Error(err)
		}
	}
}

// checkCounters fails the test for what the observer counted after the last row
// (Ready flaps, duplicate builds) and for any Secret value shown in the operator's
// output, an Event or a status, and returns how many were shown.
func (s *suite) checkCounters(t *testing.T) int {
	// Whatever the counters counted after the last row.
	time.Sleep(2 * time.Second)
	flaps, dups := s.obs.counts()
	for _, f := range flaps[s.cursor.flaps:] {
		t.Errorf("Ready flap after the last fault: %s", f)
	}
	s.obs.mu.Lock()
	t.Logf("Ready Unknown while Knative rolled out a function's own rebuild (an older Revision serving; not a flap): %d times", s.obs.rollouts)
	s.obs.mu.Unlock()
	for _, d := range dups[s.cursor.duplicates:] {
		t.Errorf("duplicate build after the last fault: %s", d)
	}
	leaks, err := secretLeaks(context.Background(), s.admin, s.kubelet.Logs.String(), s.secrets())
	if err != nil {
		t.Fatal(err)
	}
	leaks = append(leaks, s.obs.statusLeaks()...)
	for _, l := range leaks {
		t.Errorf("Secret value shown: %s", l)
	}
	return len(leaks)
}

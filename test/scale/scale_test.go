//go:build scale

package scale

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"
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
	"github.com/fnops/func-operator/test/registrytest"
)

// The benchmark's parameters, from the environment (make bench-scale sets them from N, R,
// INTERVAL, WINDOW and CONCURRENCY).
const (
	envN           = "FUNC_OPERATOR_SCALE_N"           // Functions (default 1000)
	envR           = "FUNC_OPERATOR_SCALE_R"           // repositories, the Functions spread evenly (default 50)
	envInterval    = "FUNC_OPERATOR_SCALE_INTERVAL"    // ConfigMap checkInterval (default 10s, at least 10s)
	envWindow      = "FUNC_OPERATOR_SCALE_WINDOW"      // intervals measured in steady state (default 2)
	envConcurrency = "FUNC_OPERATOR_SCALE_CONCURRENCY" // operator --concurrency (default: as the Deployment ships)
	envTable       = "FUNC_OPERATOR_SCALE_TABLE"       // a file the markdown rows are added to
	envEnforce     = "FUNC_OPERATOR_SCALE_ENFORCE"     // "1": a missed goal fails the test
	envPlain       = "FUNC_OPERATOR_SCALE_PLAIN"       // "1": run the binary as a user by hand, not as the Deployment does (plainRun)
	envProfile     = "FUNC_OPERATOR_SCALE_PROFILE"     // a file the operator's CPU profile of the steady state is written to
	envArgs        = "FUNC_OPERATOR_SCALE_ARGS"        // more flags for the operator, space-separated (e.g. --kube-api-qps=100)
	envRaw         = "FUNC_OPERATOR_SCALE_RAW"         // share of the Functions func's raw deployer deployed (default 0)
	envKeda        = "FUNC_OPERATOR_SCALE_KEDA"        // share of the Functions func's keda deployer deployed (default 0)
	// "1": each Knative Service gets what Knative Serving derives of it that carries
	// func's labels (fleet_test.go), as the operator's caches hold them in a cluster.
	envKnativeObjects = "FUNC_OPERATOR_SCALE_KNATIVE_OBJECTS"
)

// serviceCIDR is the range of the fleet's ClusterIPs (65,536).
const serviceCIDR = "10.128.0.0/16"

// Credentials of the benchmark's git repositories and registry.
const (
	gitToken         = "scale-git-token"
	registryUser     = "robot"
	registryPassword = "scale-registry-password"
)

const (
	// clients is how many goroutines of the test create objects at once.
	clients = 16
	// pollEvery is how often the test lists the Functions while waiting for Ready.
	pollEvery = 2 * time.Second
	// scrapeEvery is how often the steady state scrapes the operator's metrics: as a
	// Prometheus would.
	scrapeEvery = 15 * time.Second
	// stallAfter fails the wait for Ready when no Function became Ready for this long.
	stallAfter = 5 * time.Minute
	// readyBound fails the wait for Ready after this long.
	readyBound = 60 * time.Minute
)

type params struct {
	n, r, window int
	interval     time.Duration
	// concurrency is the operator's --concurrency; 0: the Deployment's (the binary's default).
	concurrency int
	table       string
	enforce     bool
	// raw and keda are the shares of the function directories func's raw and keda
	// deployers deployed (fleet_test.go); the rest func's knative deployer did.
	raw, keda float64
	// knativeObjects: simulate Knative Serving's Revision Deployment and Services.
	knativeObjects bool
	// plain runs the binary without the Deployment's flags and environment (plainRun).
	plain bool
	// profile, when set, is where the CPU profile of the steady state goes.
	profile string
	// args are more flags for the operator.
	args []string
}

func readParams(t *testing.T) params {
	t.Helper()
	p := params{n: 1000, r: 50, window: 2, interval: 10 * time.Second,
		table: os.Getenv(envTable), enforce: os.Getenv(envEnforce) == "1", knativeObjects: os.Getenv(envKnativeObjects) == "1",
		plain: os.Getenv(envPlain) == "1", profile: os.Getenv(envProfile), args: strings.Fields(os.Getenv(envArgs))}
	ints := []struct {
		env string
		to  *int
		min int
	}{{envN, &p.n, 1}, {envR, &p.r, 1}, {envWindow, &p.window, 1}, {envConcurrency, &p.concurrency, 1}}
	for _, i := range ints {
		v := os.Getenv(i.env)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < i.min {
			t.Fatalf("%s=%q: want a whole number of at least %d", i.env, v, i.min)
		}
		*i.to = n
	}
	if v := os.Getenv(envInterval); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 10*time.Second {
			t.Fatalf("%s=%q: want a duration of at least 10s (the operator's minimum checkInterval)", envInterval, v)
		}
		p.interval = d
	}
	shares := []struct {
		env string
		to  *float64
	}{{envRaw, &p.raw}, {envKeda, &p.keda}}
	for _, s := range shares {
		v := os.Getenv(s.env)
		if v == "" {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f > 1 {
			t.Fatalf("%s=%q: want a share between 0 and 1", s.env, v)
		}
		*s.to = f
	}
	if p.raw+p.keda > 1 {
		t.Fatalf("%s=%g and %s=%g: want shares adding up to at most 1", envRaw, p.raw, envKeda, p.keda)
	}
	if p.r > p.n {
		t.Fatalf("%d repositories for %d Functions: want at most one repository per Function", p.r, p.n)
	}
	return p
}

// bench is the running benchmark: a control plane, a git server, a registry and
// the operator binary, and the fleet.
type bench struct {
	p       params
	env     *envtest.Environment
	admin   client.Client
	apiHTTP *http.Client
	git     *gitserver.HTTPServer
	gitRoot string
	// template is the repository every repository is a copy of; a push goes through it.
	template *gitserver.Repo
	reg      *registrytest.Registry
	// disk samples the operator's work directory (disk_test.go).
	disk *diskSampler
	// scraper scrapes the operator's metrics as Prometheus does (scraper_test.go).
	scraper *http.Client
	image   string
	dep     deployment
	op      *operatorProcess
	// repos are the repositories, one namespace each (of the same name), and how many
	// Functions each holds.
	repos []repo
}

type repo struct {
	name string
	fns  int
}

// TestScale runs N Functions on R repositories against the operator binary as
// config/ ships it, and reports listings and clones per interval, writes, API reads
// per reconcile, reconciles, CPU per reconcile, memory (and per Function, over the
// idle operator) and the time until all are Ready. The fleet mixes functions of
// func's knative, raw and keda deployers (RAW, KEDA: fleet_test.go). Run it with
// `make bench-scale`; see docs/scale.md.
func TestScale(t *testing.T) {
	p := readParams(t)
	ctrl.SetLogger(logr.Discard())
	t.Logf("N=%d Functions (shares: raw %g, keda %g, the rest knative, Knative Serving's objects simulated: %t) on R=%d repositories, checkInterval %s, measuring %d intervals, concurrency %s",
		p.n, p.raw, p.keda, p.knativeObjects, p.r, p.interval, p.window, concurrencyString(p.concurrency)+runString(p))
	b := setUp(t, p)
	// The operator with empty caches: what a Function costs is measured from here.
	idle := b.take(t)
	b.populate(t)

	before := b.take(t)
	b.disk.take()
	created := b.createFunctions(t)
	toReady := b.waitReady(t, before.at)
	ready := b.take(t)
	rampDisk := b.disk.take()

	// One interval (and its jitter) for every Function to have had its first periodic
	// check after the initial wave: what follows is the steady state.
	settle := p.interval + p.interval/10 + pollEvery
	t.Logf("all %d Ready after %s; settling for %s before measuring %d intervals", p.n, toReady.Round(time.Millisecond), settle, p.window)
	b.sleep(t, settle)
	start := b.take(t)
	profiled := b.profile(t, time.Duration(p.window)*p.interval)
	maxRSS, checkAgeMax, liveHeap := b.sampleRSS(t, time.Duration(p.window)*p.interval)
	end := b.take(t)
	if err := <-profiled; err != nil {
		t.Errorf("the CPU profile of the steady state: %v", err)
	}
	if msg := b.notReady(t); msg != "" {
		t.Errorf("after the steady state: %s", msg)
	}
	b.checkBound(t)

	scrapeCPU, scrapeSeries := b.scrapeCost(t, (end.cpu-start.cpu).Seconds()/end.at.Sub(start.at).Seconds())
	pushed := b.push(t)
	res := b.result(t, idle, before, ready, start, end)
	res.liveHeap = liveHeap
	res.scrapeCPU, res.scrapeSeries = scrapeCPU, scrapeSeries
	res.rampDisk = rampDisk
	// VmHWM lags behind VmRSS by what the kernel has not accounted yet.
	res.created, res.toReady, res.maxRSS, res.hwm = created, toReady, maxRSS, max(res.hwm, maxRSS)
	res.checkAgeMax = time.Duration(checkAgeMax * float64(time.Second))
	res.log(t, p)
	pushed.log(t, p)
	res.goals(t, p)
	pushed.goals(t, p, goalChecker(t, p))
	if p.table != "" {
		if err := res.appendMarkdown(p, pushed); err != nil {
			t.Errorf("writing %s: %v", p.table, err)
		}
	}
}

// gogc is the operator's GOGC, as its Deployment sets it (Go's default 100 when not).
func (b *bench) gogc() float64 {
	for _, e := range b.dep.env {
		if v, ok := strings.CutPrefix(e, "GOGC="); ok {
			if g, err := strconv.ParseFloat(v, 64); err == nil && g > 0 {
				return g
			}
		}
	}
	return 100
}

// runString says, of a plain run, that the binary ran without the Deployment's flags
// and environment.
func runString(p params) string {
	s := ""
	if p.plain {
		s = " (plain run)"
	}
	if len(p.args) > 0 {
		s += " " + strings.Join(p.args, " ")
	}
	return s
}

func concurrencyString(c int) string {
	if c == 0 {
		return "as shipped"
	}
	return strconv.Itoa(c)
}

// setUp starts the control plane with Knative Serving's CRDs, config/'s RBAC,
// policies and ConfigMap (checkInterval set), the git server, the registry and the
// operator binary as the Deployment runs it, as its ServiceAccount.
func setUp(t *testing.T, p params) *bench {
	b := &bench{p: p}
	// The cluster serves the KEDA HTTP add-on's HTTPScaledObjects whatever the fleet, so
	// that the operator caches the same kinds in every run.
	b.env = envtest.StartT(t, envtest.KnativeServingCRDs, envtest.KEDAHTTPCRDs)
	ctx := context.Background()
	if _, err := envtest.Apply(ctx, b.env.Config, append(append(envtest.RBACFiles, envtest.PolicyFiles...), "config/400-config.yaml")...); err != nil {
		t.Fatal(err)
	}
	scheme, err := operator.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(b.env.Config)
	cfg.QPS, cfg.Burst = 1000, 2000
	if b.admin, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		t.Fatal(err)
	}
	if b.apiHTTP, err = rest.HTTPClientFor(b.env.Config); err != nil {
		t.Fatal(err)
	}
	// envtest's Service range, a /24, holds no fleet's ClusterIPs: another range, as
	// a cluster's admin adds one (Ready without a controller to say so).
	if err := b.admin.Create(ctx, &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "scale"},
		Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{serviceCIDR}}}); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{}
	if err := b.admin.Get(ctx, types.NamespacedName{Namespace: "func-operator", Name: config.ConfigMapName}, cm); err != nil {
		t.Fatal(err)
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[config.KeyCheckInterval] = p.interval.String()
	if err := b.admin.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}

	b.gitRoot = gitserver.NewRepoRoot(t)
	b.git = gitserver.StartHTTP(t, b.gitRoot)
	b.reg = registrytest.StartPrivate(t, registryUser, registryPassword)
	// One image for every Service, with the middleware the linked func library would
	// build: up to date, so no Function wants a rebuild.
	pin, err := funclib.AvailableMiddleware("go", "http")
	if err != nil {
		t.Fatal(err)
	}
	b.image = b.reg.Push(t, "scale/fn", pin.Version)

	user, err := b.env.AddUser(ctrlenvtest.User{Name: envtest.OperatorUser,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:func-operator", "system:authenticated"}})
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	root := newShippedRoot(t)
	if p.plain {
		b.dep = plainRun(t, root, root.writeKubeconfig(t, kubeconfig))
	} else {
		b.dep = readDeployment(t, root, root.writeKubeconfig(t, kubeconfig))
	}
	if p.profile != "" {
		b.dep = b.dep.withPprof(t)
	}
	b.dep.args = append(b.dep.args, p.args...)
	b.scraper = b.newScraper(t)
	if p.concurrency > 0 {
		b.dep.args = append(b.dep.args, "--concurrency="+strconv.Itoa(p.concurrency))
	}
	b.op = startOperator(t, root, buildOperator(t, root), b.dep)
	b.disk = sampleDisk(t, b.dep.workDir)
	b.until(t, 2*time.Minute, "the operator's readiness", func() string {
		resp, err := http.Get("http://" + b.dep.probes + "/readyz")
		if err != nil {
			return err.Error()
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return resp.Status
		}
		return ""
	})
	b.until(t, 2*time.Minute, "the operator's metrics, scraped as Prometheus does", func() string {
		if _, err := scrape(b.scraper, b.metricsURL()); err != nil {
			return err.Error()
		}
		return ""
	})
	t.Logf("operator pid %d: %s", b.op.pid(), strings.Join(b.dep.args, " "))
	return b
}

// populate creates the R repositories (copies of one commit holding every path), a
// namespace for each, onboarded, with its Secrets, and what func deployed of each
// function (a Knative Service, or a raw or keda Deployment and Service: fleet_test.go),
// serving.
func (b *bench) populate(t *testing.T) {
	start := time.Now()
	most := b.p.mostPerRepo()
	files := make(map[string]string, 2*most)
	deployers := make(map[string]string, most)
	for i := 0; i < most; i++ {
		name := fnName(i)
		deployers[name] = b.p.deployerOf(i, most)
		files["fns/"+name+"/func.yaml"] = b.funcYAML(name, deployers[name])
		files["fns/"+name+"/handle.go"] = "package function\n"
	}
	b.template = gitserver.CreateRepo(t, b.gitRoot, "template")
	b.template.Commit(t, "main", files, "the fleet")
	ctx := context.Background()
	for i := 0; i < b.p.r; i++ {
		r := repo{name: fmt.Sprintf("scale-%04d", i), fns: b.p.n / b.p.r}
		if i < b.p.n%b.p.r {
			r.fns++
		}
		cmd := exec.Command("git", "clone", "--bare", "--quiet", b.template.Dir, filepath.Join(b.gitRoot, r.name+".git"))
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("copying the repository: %v\n%s", err, out)
		}
		b.git.RequireToken(r.name, gitToken)
		if err := b.admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.name}}); err != nil {
			t.Fatal(err)
		}
		if err := envtest.Onboard(ctx, b.env.Config, r.name); err != nil {
			t.Fatal(err)
		}
		for _, sec := range []*corev1.Secret{{
			ObjectMeta: metav1.ObjectMeta{Namespace: r.name, Name: "git"},
			Data:       map[string][]byte{"token": []byte(gitToken)},
		}, {
			ObjectMeta: metav1.ObjectMeta{Namespace: r.name, Name: "registry"},
			Type:       corev1.SecretTypeDockerConfigJson,
			Data:       map[string][]byte{corev1.DockerConfigJsonKey: b.reg.DockerConfigJSON()},
		}} {
			if err := b.admin.Create(ctx, sec); err != nil {
				t.Fatal(err)
			}
		}
		b.repos = append(b.repos, r)
	}
	b.parallel(t, "deploying the functions", func(ns, name string) error { return b.deploy(ctx, ns, name, deployers[name]) })
	t.Logf("%d repositories, namespaces and %d functions deployed (%s), serving, in %s", b.p.r, b.p.n, formatFleet(b.fleet()), time.Since(start).Round(time.Millisecond))
}

func fnName(i int) string { return fmt.Sprintf("fn-%05d", i) }

// createService creates the Knative Service func v0.50.1's knative deployer deploys a
// function of the default settings as (its labels and deployer annotation on the
// Service and its template, func's container: fleet_test.go), and marks it Ready as
// Knative Serving's controller would (a simulation: nothing runs it).
func (b *bench) createService(ctx context.Context, ns, name string) error {
	annotations := map[string]string{funclib.DeployerAnnotation: funclib.DeployerKnative}
	svc := &servingv1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: funcLabels(name), Annotations: annotations},
		Spec: servingv1.ServiceSpec{ConfigurationSpec: servingv1.ConfigurationSpec{Template: servingv1.RevisionTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: funcLabels(name), Annotations: annotations},
			Spec:       servingv1.RevisionSpec{PodSpec: corev1.PodSpec{Containers: []corev1.Container{funcContainer(b.image, false)}}},
		}}},
	}
	if err := b.admin.Create(ctx, svc); err != nil {
		return err
	}
	svc.Status.ObservedGeneration = svc.Generation
	svc.Status.Conditions = duckv1.Conditions{{Type: apis.ConditionReady, Status: corev1.ConditionTrue}}
	return b.admin.Status().Update(ctx, svc)
}

// createFunctions creates the N Functions, in parallel, and returns how long that took.
func (b *bench) createFunctions(t *testing.T) time.Duration {
	start := time.Now()
	ctx := context.Background()
	b.parallel(t, "creating Functions", func(ns, name string) error {
		return b.admin.Create(ctx, &v1alpha1.Function{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.FunctionSpec{
				Repository: v1alpha1.Repository{URL: b.git.URL(ns), Branch: "main", Path: "fns/" + name,
					AuthSecretRef: &corev1.LocalObjectReference{Name: "git"}},
				Registry: v1alpha1.Registry{AuthSecretRef: &corev1.LocalObjectReference{Name: "registry"}},
			},
		})
	})
	d := time.Since(start)
	t.Logf("%d Functions created in %s", b.p.n, d.Round(time.Millisecond))
	return d
}

// parallel runs do for every Function of the fleet (namespace = repository), on
// clients goroutines, and fails the test with the first error.
func (b *bench) parallel(t *testing.T, what string, do func(ns, name string) error) {
	t.Helper()
	type job struct{ ns, name string }
	jobs := make(chan job)
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				if err := do(j.ns, j.name); err != nil {
					once.Do(func() { first = fmt.Errorf("%s/%s: %w", j.ns, j.name, err) })
				}
			}
		}()
	}
	// Round robin over the repositories, as a fleet grows.
	for i := 0; i < (b.p.n+b.p.r-1)/b.p.r; i++ {
		for _, r := range b.repos {
			if i < r.fns {
				jobs <- job{r.name, fnName(i)}
			}
		}
	}
	close(jobs)
	wg.Wait()
	if first != nil {
		t.Fatalf("%s: %v", what, first)
	}
}

// eachFunction lists the Functions, in pages of 500, and calls do for each.
func (b *bench) eachFunction(ctx context.Context, do func(*v1alpha1.Function)) error {
	list := &v1alpha1.FunctionList{}
	opts := []client.ListOption{client.Limit(500)}
	for {
		if err := b.admin.List(ctx, list, opts...); err != nil {
			return err
		}
		for i := range list.Items {
			do(&list.Items[i])
		}
		if list.Continue == "" {
			return nil
		}
		opts = []client.ListOption{client.Limit(500), client.Continue(list.Continue)}
	}
}

// readyCount lists the Functions and counts the Ready ones.
func (b *bench) readyCount(ctx context.Context) (ready, total int, notReady string, err error) {
	err = b.eachFunction(ctx, func(fn *v1alpha1.Function) {
		total++
		if fn.Status.IsReady() {
			ready++
		} else if notReady == "" {
			notReady = fmt.Sprintf("%s/%s: %+v", fn.Namespace, fn.Name, fn.Status.Conditions)
		}
	})
	if err != nil {
		return 0, 0, "", err
	}
	return ready, total, notReady, nil
}

// waitReady lists the Functions every pollEvery until all N are Ready, and returns
// how long after since that was.
func (b *bench) waitReady(t *testing.T, since time.Time) time.Duration {
	t.Helper()
	ctx := context.Background()
	best, progressed, logged := -1, time.Now(), time.Now()
	for {
		if msg := b.op.alive(); msg != "" {
			t.Fatal(msg)
		}
		ready, total, notReady, err := b.readyCount(ctx)
		now := time.Now()
		switch {
		case err != nil:
			t.Logf("listing Functions: %v", err)
		case ready == b.p.n && total == b.p.n:
			return now.Sub(since)
		case ready > best:
			best, progressed = ready, now
		}
		if now.Sub(logged) >= 30*time.Second {
			logged = now
			rss, _, _ := memory(b.op.pid())
			t.Logf("%s: %d/%d Ready, operator RSS %d MiB", now.Sub(since).Round(time.Second), ready, b.p.n, rss>>20)
		}
		if now.Sub(progressed) > stallAfter || now.Sub(since) > readyBound {
			t.Fatalf("%d/%d Functions Ready after %s, none more for %s; one not Ready: %s",
				ready, b.p.n, now.Sub(since).Round(time.Second), now.Sub(progressed).Round(time.Second), notReady)
		}
		time.Sleep(pollEvery)
	}
}

// notReady says how many Functions are not Ready, "" when all are.
func (b *bench) notReady(t *testing.T) string {
	ready, total, one, err := b.readyCount(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ready == b.p.n && total == b.p.n {
		return ""
	}
	return fmt.Sprintf("%d of %d Functions Ready; one not: %s", ready, total, one)
}

// profile takes the operator's CPU profile for d, in the background, into
// params.profile (when set: nil at once otherwise), and sends the outcome.
func (b *bench) profile(t *testing.T, d time.Duration) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	if b.p.profile == "" {
		done <- nil
		return done
	}
	go func() {
		url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", b.dep.pprof, int(d.Seconds()))
		resp, err := (&http.Client{Timeout: d + time.Minute}).Get(url)
		if err != nil {
			done <- err
			return
		}
		defer func() { _ = resp.Body.Close() }()
		if resp.StatusCode != http.StatusOK {
			done <- fmt.Errorf("%s: %s", url, resp.Status)
			return
		}
		f, err := os.Create(b.p.profile)
		if err == nil {
			_, err = io.Copy(f, resp.Body)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		done <- err
	}()
	return done
}

// sleep waits d, failing the test if the operator exits meanwhile.
func (b *bench) sleep(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case <-time.After(d):
	case <-b.op.exited:
		t.Fatal(b.op.alive())
	}
}

// sampleRSS samples, for d, the operator's RSS (every poll) and the age of its least
// recently checked Function (func_operator_check_age_max_seconds, every scrapeEvery, as
// Prometheus would: a scrape of 10,000 Functions' condition series costs CPU of its
// own), and returns the largest of each, and the mean of the live heap estimated at
// each scrape (liveHeap).
func (b *bench) sampleRSS(t *testing.T, d time.Duration) (int64, float64, float64) {
	t.Helper()
	var (
		most     int64
		oldest   float64
		scraped  time.Time
		heapSum  float64
		heapSeen int
	)
	end := time.Now().Add(d)
	for {
		if rss, _, err := memory(b.op.pid()); err == nil && rss > most {
			most = rss
		}
		if time.Since(scraped) >= scrapeEvery || time.Until(end) <= 0 {
			scraped = time.Now()
			if f, err := scrape(b.scraper, b.metricsURL()); err == nil {
				oldest = max(oldest, f.sum(checkAge))
				if h := liveHeap(f, b.gogc()); h > 0 {
					heapSum += h
					heapSeen++
				}
			}
		}
		left := time.Until(end)
		if left <= 0 {
			if heapSeen > 0 {
				heapSum /= float64(heapSeen)
			}
			return most, oldest, heapSum
		}
		b.sleep(t, min(left, pollEvery))
	}
}

func (b *bench) until(t *testing.T, bound time.Duration, what string, check func() string) {
	t.Helper()
	start := time.Now()
	for {
		if msg := b.op.alive(); msg != "" {
			t.Fatalf("%s: %s", what, msg)
		}
		msg := check()
		if msg == "" {
			return
		}
		if time.Since(start) > bound {
			t.Fatalf("%s: not within %s: %s", what, bound, msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// snapshot is every counter at one moment.
type snapshot struct {
	at                time.Time
	listings, clones  int
	registryRequests  int64
	operator, apiserv families
	cpu               time.Duration
	// machine is every core's busy time (machineBusy).
	machine  time.Duration
	rss, hwm int64
}

// take reads the git server's and registry's counters, the operator's and the API
// server's metrics, and the operator process' CPU time and memory.
func (b *bench) take(t *testing.T) snapshot {
	t.Helper()
	s := snapshot{at: time.Now(), registryRequests: b.reg.Requests()}
	for _, r := range b.repos {
		s.listings += b.git.RefAdvertisements(r.name)
		s.clones += b.git.UploadPacks(r.name)
	}
	var err error
	if s.operator, err = scrape(b.scraper, b.metricsURL()); err != nil {
		t.Fatalf("the operator's metrics: %v", err)
	}
	if s.apiserv, err = scrape(b.apiHTTP, strings.TrimSuffix(b.env.Config.Host, "/")+"/metrics"); err != nil {
		t.Fatalf("the API server's metrics: %v", err)
	}
	if s.cpu, err = cpuTime(b.op.pid()); err != nil {
		t.Fatal(err)
	}
	if s.machine, err = machineBusy(); err != nil {
		t.Fatal(err)
	}
	if s.rss, s.hwm, err = memory(b.op.pid()); err != nil {
		t.Fatal(err)
	}
	return s
}

// Metric names and label values the benchmark reads.
const (
	restRequests   = "rest_client_requests_total"
	reconcileTotal = "controller_runtime_reconcile_total"
	reconcileTime  = "controller_runtime_reconcile_time_seconds"
	queueDuration  = "workqueue_queue_duration_seconds"
	workers        = "controller_runtime_max_concurrent_reconciles"
	gitFetch       = "func_operator_git_fetch_duration_seconds"
	checkAge       = "func_operator_check_age_max_seconds"
	apiRequests    = "apiserver_request_total"
	controllerName = "function"
	writeMethods   = "POST|PUT|PATCH|DELETE"
	writeVerbs     = "POST|PUT|PATCH|DELETE|APPLY|DELETECOLLECTION"
	readVerbs      = "GET|LIST"
)

// result is what the benchmark reports.
type result struct {
	created, toReady time.Duration
	// The initial wave, from the first Function created to all Ready.
	rampListings, rampClones int
	rampCPU                  time.Duration
	// rampMachine is every core's busy time meanwhile: the operator's, the API
	// server's, etcd's, the git server's and the benchmark's.
	rampMachine    time.Duration
	rampReconciles float64
	// rampWrites are the operator's (client side, every method but GET);
	// rampWritesByResource the API server's, every client (the benchmark's creates of
	// the N Functions among them).
	rampWrites           float64
	rampWritesByResource map[string]float64
	// rampDisk is the most the operator's work directory held meanwhile (sampled).
	rampDisk int64
	// The steady state, over window intervals.
	wall                             time.Duration
	intervals                        float64
	listings, clones                 int
	operatorListings, operatorClones float64
	registryRequests                 int64
	writes                           float64            // the operator's, every method but GET
	writesKnown                      bool               // the operator exposes rest_client_requests_total
	writesByResource                 map[string]float64 // API server side, every client
	readsByResource                  map[string]float64 // API server side (GET, LIST), every client
	reconciles                       float64
	reconcilesByResult               map[string]float64
	reconcileMean                    time.Duration
	// utilization is the share of the workers' time spent reconciling.
	utilization      float64
	workers          float64
	queueKnown       bool    // the operator exposes workqueue_queue_duration_seconds
	queueWaitMax     float64 // seconds, a bucket bound
	queueWaitMean    time.Duration
	cpu              time.Duration
	rss, maxRSS, hwm int64
	// checkAgeMax is the largest age of the least recently checked Function sampled.
	checkAgeMax time.Duration
	// fleet counts the Functions by the deployer that deployed them.
	fleet map[string]int
	// The operator's memory with empty caches (before anything was created), and its
	// live heap then and in the steady state (the mean of the scrapes), estimated from
	// the heap goal (liveHeap).
	idleRSS            int64
	idleHeap, liveHeap float64
	// storeBytes, storeCommits and storeEvictions are the git commit store's at the
	// end of the steady state.
	storeBytes, storeCommits, storeEvictions float64
	// scrapeCPU is the operator's CPU per scrape of its metrics as Prometheus does it
	// (scraper_test.go), of scrapeSeries series.
	scrapeCPU    time.Duration
	scrapeSeries int
	// operatorReads are the operator's GETs in the steady state (rest_client_requests_total:
	// reads, and the start of a watch or a Lease renewal's read).
	operatorReads float64
}

func (b *bench) result(t *testing.T, idle, before, ready, start, end snapshot) result {
	t.Helper()
	ctrlMatch := []string{"controller", controllerName}
	r := result{
		rampListings:   ready.listings - before.listings,
		rampClones:     ready.clones - before.clones,
		rampCPU:        ready.cpu - before.cpu,
		rampMachine:    ready.machine - before.machine,
		rampReconciles: ready.operator.sum(reconcileTotal, ctrlMatch...) - before.operator.sum(reconcileTotal, ctrlMatch...),
		rampWrites:     ready.operator.sum(restRequests, "method", writeMethods) - before.operator.sum(restRequests, "method", writeMethods),
		rampWritesByResource: diff(before.apiserv.byLabel(apiRequests, "resource", "verb", writeVerbs),
			ready.apiserv.byLabel(apiRequests, "resource", "verb", writeVerbs)),

		wall:             end.at.Sub(start.at),
		listings:         end.listings - start.listings,
		clones:           end.clones - start.clones,
		operatorListings: end.operator.sum(gitFetch, "operation", "ls-remote") - start.operator.sum(gitFetch, "operation", "ls-remote"),
		operatorClones:   end.operator.sum(gitFetch, "operation", "clone") - start.operator.sum(gitFetch, "operation", "clone"),
		registryRequests: end.registryRequests - start.registryRequests,
		writesKnown:      end.operator[restRequests] != nil && len(end.operator[restRequests].GetMetric()) > 0,
		writes:           end.operator.sum(restRequests, "method", writeMethods) - start.operator.sum(restRequests, "method", writeMethods),
		reconciles:       end.operator.sum(reconcileTotal, ctrlMatch...) - start.operator.sum(reconcileTotal, ctrlMatch...),
		cpu:              end.cpu - start.cpu,
		rss:              end.rss,
		maxRSS:           end.rss,
		hwm:              end.hwm,
		fleet:            b.fleet(),
		idleRSS:          idle.rss,
		idleHeap:         liveHeap(idle.operator, b.gogc()),
		operatorReads:    end.operator.sum(restRequests, "method", "GET") - start.operator.sum(restRequests, "method", "GET"),
		storeBytes:       end.operator.sum("func_operator_git_commit_store_bytes"),
		storeCommits:     end.operator.sum("func_operator_git_commit_store_commits"),
		storeEvictions:   end.operator.sum("func_operator_git_commit_store_evictions_total"),
	}
	r.intervals = r.wall.Seconds() / b.p.interval.Seconds()
	if !r.writesKnown {
		t.Logf("the operator's metrics have no %s: its writes are counted on the API server only", restRequests)
	}
	r.writesByResource = diff(start.apiserv.byLabel(apiRequests, "resource", "verb", writeVerbs),
		end.apiserv.byLabel(apiRequests, "resource", "verb", writeVerbs))
	r.readsByResource = diff(start.apiserv.byLabel(apiRequests, "resource", "verb", readVerbs),
		end.apiserv.byLabel(apiRequests, "resource", "verb", readVerbs))
	r.reconcilesByResult = diff(start.operator.byLabel(reconcileTotal, "result", ctrlMatch...),
		end.operator.byLabel(reconcileTotal, "result", ctrlMatch...))
	if n := r.reconciles; n > 0 {
		sum := end.operator.histogramSum(reconcileTime, ctrlMatch...) - start.operator.histogramSum(reconcileTime, ctrlMatch...)
		r.reconcileMean = time.Duration(sum / n * float64(time.Second))
		if r.workers = end.operator.sum(workers, ctrlMatch...); r.workers > 0 {
			r.utilization = sum / (r.workers * r.wall.Seconds())
		}
	}
	qMatch := []string{"name", controllerName}
	r.queueKnown = end.operator[queueDuration] != nil && len(end.operator[queueDuration].GetMetric()) > 0
	if !r.queueKnown {
		t.Logf("the operator's metrics have no %s: how long a due Function waits for a worker is not known", queueDuration)
	}
	if n := end.operator.sum(queueDuration, qMatch...) - start.operator.sum(queueDuration, qMatch...); n > 0 {
		sum := end.operator.histogramSum(queueDuration, qMatch...) - start.operator.histogramSum(queueDuration, qMatch...)
		r.queueWaitMean = time.Duration(sum / n * float64(time.Second))
	}
	r.queueWaitMax = maxBound(start.operator.buckets(queueDuration, qMatch...), end.operator.buckets(queueDuration, qMatch...))
	return r
}

func diff(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// notObjectWrites are the resources whose "writes" store nothing but Leases (the
// operator's leader election renewals, the API server's own heartbeat): the reviews
// with which the operator authenticates and authorizes a scrape of its metrics
// (controller-runtime's filter asks again when its cache of the answer expires).
var notObjectWrites = map[string]bool{"leases": true, "tokenreviews": true, "subjectaccessreviews": true}

// nonLeaseWrites are the writes the API server took in the steady state but of
// notObjectWrites: in the steady state nothing but the operator writes.
func (r result) nonLeaseWrites() float64 {
	var n float64
	for res, v := range r.writesByResource {
		if !notObjectWrites[res] {
			n += v
		}
	}
	return n
}

// apiServerOwnReads are the resources the API server reads itself, whoever else runs:
// Leases (its identity heartbeat; the operator's leader election reads its Lease too)
// and the endpoints of the kubernetes Service (its endpoint reconciler, every 10s).
var apiServerOwnReads = map[string]bool{"leases": true, "endpoints": true, "endpointslices": true}

// functionReads are the reads (GET, LIST) the API server took in the steady state but
// of apiServerOwnReads: in the steady state nothing else reads, so these are the
// operator's, and it should read everything from its caches.
func (r result) functionReads() float64 {
	var n float64
	for res, v := range r.readsByResource {
		if !apiServerOwnReads[res] {
			n += v
		}
	}
	return n
}

// perReconcile divides v by the steady state's reconciles.
func (r result) perReconcile(v float64) float64 {
	if r.reconciles == 0 {
		return 0
	}
	return v / r.reconciles
}

// heapPerFunction is what the live heap grew by from the idle operator to the steady
// state, per Function; rssPerFunction the same of the RSS at the end.
func (r result) heapPerFunction(n int) float64 { return (r.liveHeap - r.idleHeap) / float64(n) }

func (r result) rssPerFunction(n int) float64 { return float64(r.rss-r.idleRSS) / float64(n) }

// formatFleet says how many Functions each deployer deployed.
func formatFleet(fleet map[string]int) string {
	parts := []string{}
	for _, d := range funclib.Deployers() {
		if fleet[d] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", fleet[d], d))
		}
	}
	return strings.Join(parts, ", ")
}

// fleetShort names the fleet in a table row: "knative", "raw", "keda", or the shares
// of a mixed one ("50% raw, 50% knative").
func fleetShort(fleet map[string]int, n int) string {
	parts := []string{}
	for _, d := range funclib.Deployers() {
		switch {
		case fleet[d] == n:
			return "all " + d
		case fleet[d] > 0:
			parts = append(parts, fmt.Sprintf("%.0f%% %s", 100*float64(fleet[d])/float64(n), d))
		}
	}
	return strings.Join(parts, ", ")
}

// servingNote says, of a fleet with Knative functions, when Knative Serving's
// labelled objects were simulated.
func servingNote(p params, fleet map[string]int) string {
	if p.knativeObjects && fleet[funclib.DeployerKnative] > 0 {
		return " (+ Serving's objects)"
	}
	return ""
}

func kib(b float64) string { return fmt.Sprintf("%.1f KiB", b/1024) }

func (r result) perInterval(v float64) float64 { return v / r.intervals }

func (r result) cpuPerReconcile() time.Duration {
	if r.reconciles == 0 {
		return 0
	}
	return time.Duration(float64(r.cpu) / r.reconciles)
}

func mib(b int64) string { return fmt.Sprintf("%d MiB", b>>20) }

func formatMap(m map[string]float64) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %g", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func formatBound(s float64) string {
	switch {
	case s == 0:
		return "none queued"
	case math.IsInf(s, 1):
		return "> last bucket"
	}
	return "≤ " + (time.Duration(s * float64(time.Second))).String()
}

func (r result) log(t *testing.T, p params) {
	n := float64(p.n)
	var sb strings.Builder
	row := func(name, format string, args ...any) {
		fmt.Fprintf(&sb, "  %-44s %s\n", name, fmt.Sprintf(format, args...))
	}
	fmt.Fprintf(&sb, "\nN=%d Functions (%s), R=%d repositories, checkInterval %s, concurrency %s\n", p.n, formatFleet(r.fleet)+servingNote(p, r.fleet), p.r, p.interval, concurrencyString(p.concurrency)+runString(p))
	row("Functions created in", "%s", r.created.Round(time.Millisecond))
	row("all Ready after (from the first created)", "%s", r.toReady.Round(time.Millisecond))
	row("  listings / clones until then", "%d / %d", r.rampListings, r.rampClones)
	row("  reconciles until then", "%g", r.rampReconciles)
	row("  operator CPU until then", "%s (%.2f cores; the machine's %d cores %.2f busy in all)", r.rampCPU,
		r.rampCPU.Seconds()/r.toReady.Seconds(), runtime.NumCPU(), r.rampMachine.Seconds()/r.toReady.Seconds())
	row("  the operator's writes until then", "%g (%.2f per Function)", r.rampWrites, r.rampWrites/n)
	row("  work directory, most sampled until then", "%s", kib(float64(r.rampDisk)))
	row("  API server writes by resource until then", "%s (the benchmark's %d Function creates among them)", formatMap(r.rampWritesByResource), p.n)
	fmt.Fprintf(&sb, "steady state: %.2f intervals (%s)\n", r.intervals, r.wall.Round(time.Millisecond))
	row("listings per interval (git server)", "%.1f (%.2f per repository, %.3f per Function)", r.perInterval(float64(r.listings)),
		r.perInterval(float64(r.listings))/float64(p.r), r.perInterval(float64(r.listings))/n)
	row("  ls-remote per interval (operator metric)", "%.1f", r.perInterval(r.operatorListings))
	row("clones (git server upload-packs)", "%d (operator metric: %g)", r.clones, r.operatorClones)
	if r.writesKnown {
		row("writes by the operator (POST/PUT/PATCH/DELETE)", "%g (%.1f per interval)", r.writes, r.perInterval(r.writes))
	} else {
		row("writes by the operator", "not exposed (%s missing)", restRequests)
	}
	row("  API server writes by resource", "%s", formatMap(r.writesByResource))
	row("  writes but Leases, reviews", "%g", r.nonLeaseWrites())
	row("API reads (GET, LIST) by resource", "%s", formatMap(r.readsByResource))
	row("  API reads but Leases, endpoints per reconcile", "%.4f (%g reads, %g reconciles)", r.perReconcile(r.functionReads()), r.functionReads(), r.reconciles)
	if r.writesKnown {
		row("  the operator's GETs (client side) per reconcile", "%.4f (%g: Lease reads and watch starts included)", r.perReconcile(r.operatorReads), r.operatorReads)
	}
	row("registry requests per interval", "%.1f", r.perInterval(float64(r.registryRequests)))
	row("git commit store (end)", "%s in %g commits (%.1f KiB each), %g evictions", kib(r.storeBytes), r.storeCommits, r.storeBytes/max(r.storeCommits, 1)/1024, r.storeEvictions)
	row("reconciles per interval", "%.1f (%s)", r.perInterval(r.reconciles), formatMap(r.reconcilesByResult))
	row("reconciles per Function per interval", "%.3f", r.perInterval(r.reconciles)/n)
	row("mean reconcile time", "%s", r.reconcileMean)
	row("worker utilization", "%.3f of %g workers", r.utilization, r.workers)
	if r.queueKnown {
		row("queue wait: mean / max (bucket bound)", "%s / %s", r.queueWaitMean, formatBound(r.queueWaitMax))
	} else {
		row("queue wait", "not exposed (%s missing)", queueDuration)
	}
	row("CPU per reconcile", "%s", r.cpuPerReconcile())
	row("CPU (cores, average)", "%.3f", r.cpu.Seconds()/r.wall.Seconds())
	row("CPU per scrape of the metrics (HTTPS, token)", "%s", r.scrapeString())
	row("oldest check (max sampled)", "%s", r.checkAgeMax.Round(10*time.Millisecond))
	row("RSS: end / max sampled / peak (VmHWM)", "%s / %s / %s", mib(r.rss), mib(r.maxRSS), mib(r.hwm))
	row("idle operator (empty caches): RSS / live heap", "%s / %s", mib(r.idleRSS), mib(int64(r.idleHeap)))
	row("live heap, steady (from the heap goal)", "%s", mib(int64(r.liveHeap)))
	row("per Function over idle: live heap / RSS", "%s / %s", kib(r.heapPerFunction(p.n)), kib(r.rssPerFunction(p.n)))
	t.Log(sb.String())
}

// goalChecker logs a goal met, and a goal missed; that fails the test when
// FUNC_OPERATOR_SCALE_ENFORCE=1.
func goalChecker(t *testing.T, p params) func(ok bool, goal, format string, args ...any) {
	miss := t.Logf
	if p.enforce {
		miss = t.Errorf
	}
	return func(ok bool, goal, format string, args ...any) {
		t.Helper()
		if ok {
			t.Logf("goal met:    %s (%s)", goal, fmt.Sprintf(format, args...))
		} else {
			miss("goal missed: %s (%s)", goal, fmt.Sprintf(format, args...))
		}
	}
}

// goals checks the goals; a missed one is logged, and fails the test when
// FUNC_OPERATOR_SCALE_ENFORCE=1.
func (r result) goals(t *testing.T, p params) {
	check := goalChecker(t, p)
	listings := r.perInterval(float64(r.listings))
	check(listings <= 1.5*float64(p.r), "listings per interval ≈ repositories (≤ 1.5 R)", "%.1f for R=%d", listings, p.r)
	check(r.clones == 0, "0 clones in steady state", "%d", r.clones)
	check(r.nonLeaseWrites() == 0, "0 writes in steady state (Lease renewals and the metrics scrapes' reviews aside)", "%g: %s", r.nonLeaseWrites(), formatMap(r.writesByResource))
	check(r.functionReads() == 0, "0 API reads per reconcile in steady state (all from the caches; Leases and the API server's own endpoints aside)", "%g: %s", r.functionReads(), formatMap(r.readsByResource))
	// The operator's own signal: the age of its least recently checked Function, sampled
	// every poll, within the interval (and a poll's slack); with the reconciles per
	// Function and the workers to spare.
	perFn := r.perInterval(r.reconciles) / float64(p.n)
	check(r.checkAgeMax > 0 && r.checkAgeMax <= p.interval+pollEvery && perFn >= 0.9 && r.utilization < 0.9,
		"every Function checked within its interval (func_operator_check_age_max_seconds ≤ interval, ≥ 0.9 reconciles per Function per interval, workers < 90% busy)",
		"oldest check %s, %.3f per Function, workers %.0f%% busy", r.checkAgeMax.Round(10*time.Millisecond), perFn, 100*r.utilization)
	// A reconcile runs on one worker: its mean time bounds the CPU it takes. The
	// process's CPU per reconcile adds what runs whatever the reconciles (scrapes of
	// every Function's condition series, garbage collection, watches, the Lease): at a
	// few dozen reconciles a second, that is most of it.
	check(r.reconcileMean > 0 && r.reconcileMean <= time.Millisecond, "CPU per no-op reconcile ≤ 1 ms (bounded by the mean reconcile time)",
		"mean reconcile time %s; the process's CPU per reconcile, background included: %s", r.reconcileMean.Round(time.Microsecond), r.cpuPerReconcile())
	if p.n <= 5000 {
		check(r.hwm <= 300<<20, "RSS ≤ 300 MB at N ≤ 5,000 (peak VmHWM)", "%s", mib(r.hwm))
	}
}

const markdownHeader = "| N | fleet | R | interval | concurrency | all Ready after | clones until Ready | listings / interval | clones | writes (not Lease) | " +
	"API reads (not Lease, endpoints) / reconcile | operator GETs / reconcile | reconciles / Function / interval | oldest check | worker utilization | mean reconcile | CPU / reconcile | CPU (cores) | RSS | peak RSS | " +
	"live heap / Function | RSS / Function | writes / Function until Ready | push: to all observed | push: transfers / repository |\n" +
	"|--:|:--|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n"

// appendMarkdown adds the result as a row to the table file (with the header when
// the file is new or empty).
func (r result) appendMarkdown(p params, pushed pushResult) error {
	f, err := os.OpenFile(p.table, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err == nil && fi.Size() == 0 {
		_, err = f.WriteString(markdownHeader)
	}
	if err == nil {
		_, err = fmt.Fprintf(f, "| %d | %s | %d | %s | %s | %s | %d | %.1f | %d | %g | %g | %.4f | %.3f | %s | %.0f%% | %s | %s | %.3f | %s | %s | %s | %s | %.2f | %s | %.2f |\n",
			p.n, fleetShort(r.fleet, p.n)+servingNote(p, r.fleet), p.r, p.interval, concurrencyString(p.concurrency)+runString(p), r.toReady.Round(time.Second), r.rampClones,
			r.perInterval(float64(r.listings)), r.clones, r.nonLeaseWrites(), r.perReconcile(r.functionReads()), r.perReconcile(r.operatorReads), r.perInterval(r.reconciles)/float64(p.n),
			r.checkAgeMax.Round(100*time.Millisecond), 100*r.utilization, r.reconcileMean.Round(time.Microsecond), r.cpuPerReconcile().Round(time.Microsecond),
			r.cpu.Seconds()/r.wall.Seconds(), mib(r.rss), mib(r.hwm), kib(r.heapPerFunction(p.n)), kib(r.rssPerFunction(p.n)),
			r.rampWrites/float64(p.n), pushed.toObserved.Round(100*time.Millisecond), float64(pushed.clones)/float64(p.r))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

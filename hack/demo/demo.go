package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"knative.dev/pkg/apis"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/hack/internal/devenv"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/operator"
	fotenv "github.com/fnops/func-operator/test/envtest"
	"github.com/fnops/func-operator/test/knative"
	"github.com/fnops/func-operator/test/registrytest"
	"github.com/fnops/func-operator/test/tekton"
)

// The demo's names.
const (
	namespace       = "demo"
	systemNamespace = "func-operator"
	function        = "hello"
	// oldMiddleware is the func-go version the deployed image was built with: older
	// than any the linked func library brings.
	oldMiddleware = "v0.1.0"
)

// options configure a run of the demo.
type options struct {
	// Out receives the narration.
	Out io.Writer
	// Verbose copies the operator's logs (debug level) to Logs too.
	Verbose bool
	Logs    io.Writer
	// Exit ends the demo once it has shown the loop, instead of waiting for ctx.
	Exit bool
	// Timeout bounds each wait for the operator, Tekton, Knative Serving or a simulation.
	Timeout time.Duration
	// CaptureStderr sends what this process writes to os.Stderr (func's library
	// prints its pipelines' progress there) to the operator's log, for a quiet
	// screen; restored at the end.
	CaptureStderr bool
	// Dir holds the demo's files (the logs, the repository, the kubeconfig), left in
	// place; when empty, a new temporary directory of which only the logs stay.
	Dir string
}

// outcome is what the demo found at its end, read from the cluster and the registry.
type outcome struct {
	OldImage, NewImage   string
	RegistryHost         string
	PipelineRun          string
	PipelineRunSucceeded bool
	// NewImageMiddleware is the middleware-version label of the Service's new image,
	// read from the registry.
	NewImageMiddleware string
	// Available is the middleware a rebuild with the linked func library brings.
	Available string
	// StatusMiddleware is the Function's status.middleware.current.
	StatusMiddleware string
	FunctionReady    bool
	// Revision and URL are the Knative Service's latest ready Revision and URL.
	Revision, URL string
}

// stack runs functions in the reverse order of their pushing: the demo's teardown.
type stack []func()

func (s *stack) push(f func()) { *s = append(*s, f) }

func (s *stack) run() {
	for i := len(*s) - 1; i >= 0; i-- {
		(*s)[i]()
	}
	*s = nil
}

// demo is a run of the demo: what its steps set up, for the next ones.
type demo struct {
	o          options
	n          *narrator
	teardown   stack
	root, dir  string
	logPath    string
	kubeconfig string
	logs       io.Writer
	env        *fotenv.Environment
	cfg        *rest.Config
	c          client.Client
	reg        *registrytest.Registry
	repo       *devenv.Repo
	// w narrates what the operator, Tekton and Knative Serving write.
	w *watcher
	// available is the middleware a rebuild brings; oldImage the image deployed.
	available, oldImage   string
	tektonLog, servingLog string
}

// run runs the demo: see docs/demo.md.
func run(ctx context.Context, o options) (*outcome, error) {
	if o.Timeout == 0 {
		o.Timeout = 3 * time.Minute
	}
	d := &demo{o: o, n: newNarrator(o.Out, 9)}
	defer d.teardown.run()
	for _, step := range []func(context.Context) error{
		d.setup, d.controlPlane, d.source, d.image, d.knativeService, d.tekton, d.operator,
	} {
		if err := step(ctx); err != nil {
			return nil, err
		}
	}
	out, err := d.loop(ctx)
	if err != nil {
		return nil, err
	}
	summarize(d.n, out, d.kubeconfig, d.env.Assets(), logs{operator: d.logPath, tekton: d.tektonLog, serving: d.servingLog}, o.Exit)
	if o.Exit {
		return out, nil
	}
	<-ctx.Done()
	d.n.Plain("\nStopping: the operator, the simulations, the Tekton and Knative Serving controllers, kube-controller-manager,\n" +
		"the git and registry servers, the control plane.\n")
	return out, nil
}

// setup makes the demo's directory and log, and sends every log of this process there.
func (d *demo) setup(context.Context) error {
	root, err := devenv.RepoRoot()
	if err != nil {
		return err
	}
	d.root = root
	d.dir = d.o.Dir
	if d.dir == "" {
		if d.dir, err = os.MkdirTemp("", "func-operator-demo-"); err != nil {
			return err
		}
		dir := d.dir
		// All but the logs go.
		d.teardown.push(func() {
			for _, f := range []string{"git", "work", "kubeconfig"} {
				_ = os.RemoveAll(filepath.Join(dir, f))
			}
		})
	}
	d.logPath = filepath.Join(d.dir, "operator.log")
	logFile, err := os.Create(d.logPath)
	if err != nil {
		return err
	}
	d.teardown.push(func() { _ = logFile.Close() })
	d.logs = logFile
	if d.o.CaptureStderr {
		stderr := os.Stderr
		os.Stderr = logFile
		d.teardown.push(func() { os.Stderr = stderr })
	}
	if d.o.Verbose && d.o.Logs != nil {
		d.logs = io.MultiWriter(logFile, d.o.Logs)
	}
	// Everything logged in this process (envtest, the operator, client-go) goes to
	// the log file, at debug level; stdout is the narration's.
	logger := devenv.Logger(d.logs, true)
	ctrl.SetLogger(logger)
	klog.SetLogger(logger)
	d.n.Plain("func-operator demo: a Knative Function deployed with old middleware, found outdated by the operator\n" +
		"and rebuilt through Tekton, on a control plane started here. The Tekton and Knative Serving controllers\n" +
		"are real; no node and no Knative data plane run here: what the kubelet, Knative's autoscaler and its\n" +
		"networking layer would do is simulated, and each line of a simulated actor is marked " + SimulationMarker + ".\n")
	return nil
}

// logf writes a line to the log.
func (d *demo) logf(format string, args ...any) { _, _ = fmt.Fprintf(d.logs, format+"\n", args...) }

// controlPlane starts the control plane, writes its kubeconfig, applies config/'s
// RBAC and onboards the demo's namespace.
func (d *demo) controlPlane(ctx context.Context) error {
	d.n.Step("An embedded control plane",
		"etcd and kube-apiserver, as the operator's tests run them, with the Function CRD and the CRDs of Knative "+
			"Serving, its networking and caching, and Tekton (third_party/). No node and no kubelet run.")
	env, err := devenv.StartControlPlane(d.root, &sayWriter{n: d.n}, knative.CRDs...)
	if err != nil {
		return err
	}
	d.env, d.cfg = env, env.Config
	d.teardown.push(func() {
		if err := env.Stop(); err != nil {
			d.logf("stopping the control plane: %v", err)
		}
	})
	d.kubeconfig = filepath.Join(d.dir, "kubeconfig")
	if err := devenv.WriteKubeconfig(env, d.kubeconfig); err != nil {
		return err
	}
	if _, err := fotenv.Apply(ctx, d.cfg, fotenv.RBACFiles...); err != nil {
		return fmt.Errorf("applying config/'s RBAC: %w", err)
	}
	if err := devenv.EnsureNamespace(ctx, d.cfg, namespace); err != nil {
		return err
	}
	if err := fotenv.Onboard(ctx, d.cfg, namespace); err != nil {
		return fmt.Errorf("onboarding namespace %s: %w", namespace, err)
	}
	d.n.Say("API server at %s (kubeconfig: %s)", d.cfg.Host, d.kubeconfig)
	d.n.Say("config/'s RBAC applied; namespace %s onboarded (config/namespace/onboard.yaml: the ServiceAccount builds run as)", namespace)
	if d.c, err = newClient(d.cfg); err != nil {
		return err
	}
	d.w = &watcher{n: d.n, c: d.c}
	// The registry now: func.yaml names it.
	d.reg = registrytest.New()
	d.teardown.push(d.reg.Close)
	pin, err := funclib.AvailableMiddleware("go", "http")
	if err != nil {
		return fmt.Errorf("the middleware a rebuild brings: %w", err)
	}
	d.available = pin.Version
	return nil
}

// source serves the function's repository.
func (d *demo) source(context.Context) error {
	d.n.Step("The function's source in a git repository",
		"A Go function, hello, as `func create -l go` writes it, committed to a repository served on loopback by git http-backend.")
	files := map[string]string{
		function + "/func.yaml": fmt.Sprintf("specVersion: 0.36.0\nname: %s\nruntime: go\ninvoke: http\nregistry: %s/fns\nbuild:\n  builder: pack\n",
			function, d.reg.Host),
		function + "/go.mod": "module function\n\ngo 1.23\n",
		function + "/handle.go": "package function\n\nimport \"net/http\"\n\n// Handle answers every request.\n" +
			"func Handle(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(\"hello\\n\")) }\n",
	}
	repo, err := devenv.ServeRepo(filepath.Join(d.dir, "git"), files, d.logs)
	if err != nil {
		return err
	}
	d.repo = repo
	d.teardown.push(repo.Close)
	d.n.Say("%s, branch main, commit %s", repo.URL, repo.Commit[:12])
	d.n.Say("%s/func.yaml: runtime go, builder pack, registry %s/fns", function, d.reg.Host)
	return nil
}

// image pushes the image func deployed, with old middleware.
func (d *demo) image(context.Context) error {
	d.n.Step("The image func deployed, with old middleware, in an OCI registry",
		"An in-process registry on loopback holds the image `func deploy` built from that commit: labelled, as func labels "+
			"it, with the middleware it was built with ("+oldMiddleware+") and the commit.")
	var err error
	d.oldImage, err = d.reg.PushImage(d.reg.Host+"/fns/"+function+":latest", map[string]string{
		registrytest.MiddlewareLabel: oldMiddleware, registrytest.RevisionLabel: d.repo.Commit,
	})
	if err != nil {
		return err
	}
	d.n.Say("pushed %s", d.oldImage)
	d.n.Say("middleware-version %s; a rebuild with the operator's func library would bring %s", oldMiddleware, d.available)
	return nil
}

// knativeService starts the real Knative Serving controller and what it needs
// around it, and deploys the function's Knative Service.
func (d *demo) knativeService(ctx context.Context) error {
	d.n.Step("Knative Serving, and the function deployed as a Knative Service",
		"The real Knative Serving controller (the version func pins), as its release runs it, with Knative's "+
			"defaults and validation (its webhook's code, served here) and kube-controller-manager's deployment, "+
			"replicaset and garbage-collector controllers. No node runs the Revisions' Pods and no Knative data "+
			"plane runs: simulations play the kubelet (the Pods running and ready), Knative's autoscaler (one Pod "+
			"per Revision) and its networking layer (the KIngress served). Then the Service func deploy writes, on "+
			"that image.")
	bin, err := controllerBinary(d.root, d.n, knative.ControllerEnv, "knative-serving-controller.sh", "Knative Serving")
	if err != nil {
		return err
	}
	if err := os.Setenv(knative.ControllerEnv, bin); err != nil {
		return err
	}
	serving, err := knative.Start(d.env, knative.Options{
		LogDir:  d.dir,
		Logf:    d.logf,
		Observe: func(msg string) { d.n.Simulated("Knative", msg) },
	})
	if err != nil {
		return err
	}
	d.servingLog = serving.Controller.LogFile
	d.teardown.push(func() {
		if err := serving.Stop(); err != nil {
			d.logf("%v", err)
		}
	})
	d.n.Say("Knative Serving controller running (pid %d, binary %s); its logs: %s", serving.Controller.Pid(), bin, d.servingLog)
	d.n.Say("Knative's defaults and validation: its webhook's code, served in this process")
	d.n.Say("kube-controller-manager running its deployment, replicaset and garbage-collector controllers")
	d.n.Say("simulations watching: the kubelet (the Revisions' Pods), Knative's autoscaler (PodAutoscalers), " +
		"its networking layer (KIngresses)")
	svc := &servingv1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: function, Labels: map[string]string{"function.knative.dev/name": function}},
		Spec: servingv1.ServiceSpec{ConfigurationSpec: servingv1.ConfigurationSpec{Template: servingv1.RevisionTemplateSpec{
			Spec: servingv1.RevisionSpec{PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Image: d.oldImage}}}},
		}}},
	}
	if err := d.c.Create(ctx, svc); err != nil {
		return fmt.Errorf("creating Knative Service %s/%s: %w", namespace, function, err)
	}
	d.n.Say("created Knative Service %s/%s running %s", namespace, function, d.oldImage)
	return until(ctx, d.o.Timeout, "the Knative Service to be ready", func() (bool, error) {
		s, err := d.w.pollService(ctx)
		return err == nil && s.ready, err
	})
}

// tekton starts the Tekton controller and the kubelet simulation.
func (d *demo) tekton(ctx context.Context) error {
	d.n.Step("The Tekton Pipelines controller, and a simulated kubelet",
		"The real Tekton controller (the version go.mod pins), as its release runs it. No node runs its Pods: a kubelet "+
			"simulation reports them running and ended, and plays what the two steps that matter do: the build pushes "+
			"the image to the registry, func-deploy points the Knative Service at it.")
	bin, err := controllerBinary(d.root, d.n, tekton.ControllerEnv, "tekton-controller.sh", "Tekton")
	if err != nil {
		return err
	}
	if err := os.Setenv(tekton.ControllerEnv, bin); err != nil {
		return err
	}
	tc, err := tekton.StartController(d.cfg, d.dir)
	if err != nil {
		return err
	}
	d.tektonLog = tc.LogFile
	d.teardown.push(func() {
		if err := tc.Stop(); err != nil {
			d.logf("%v", err)
		}
	})
	d.n.Say("Tekton controller running (pid %d, binary %s); its logs: %s", tc.Pid(), bin, tc.LogFile)
	kubelet, err := tekton.RunKubelet(ctx, d.cfg, tekton.Options{
		Namespaces: []string{namespace},
		Registry:   d.reg,
		Decide:     func(*pipelinev1.PipelineRun) tekton.Outcome { return tekton.Outcome{MiddlewareVersion: d.available} },
		Interval:   200 * time.Millisecond,
		Logf:       d.logf,
		Observe:    func(msg string) { d.n.Simulated("kubelet", msg) },
	})
	if err != nil {
		return err
	}
	d.teardown.push(kubelet.Stop)
	d.n.Say("kubelet simulation watching the TaskRuns' Pods of namespace %s", namespace)
	return nil
}

// operator starts the operator and creates the Function.
func (d *demo) operator(ctx context.Context) error {
	d.n.Step("func-operator, from source, and the Function",
		"The operator as cmd/func-operator wires it, watching namespace "+namespace+", then the Function that asks it "+
			"to keep hello current: its repository, branch and path.")
	store := config.NewStore()
	store.Set(config.Defaults())
	mgr, err := operator.New(ctx, d.cfg, operator.Options{
		WatchNamespaces: []string{namespace}, SystemNamespace: systemNamespace,
		MetricsAddr: "0", ProbeAddr: "0", WorkDir: filepath.Join(d.dir, "work"), Config: store,
		SkipControllerNameValidation: true, // the test runs the demo in its process
		AllowLoopback:                true, // the demo's repository and registry are on loopback
	})
	if err != nil {
		return err
	}
	opCtx, stopOperator := context.WithCancel(ctx)
	opDone := make(chan error, 1)
	go func() { opDone <- mgr.Start(opCtx) }()
	d.teardown.push(func() {
		stopOperator()
		if err := <-opDone; err != nil {
			d.logf("the operator: %v", err)
		}
	})
	fn := &v1alpha1.Function{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: function},
		Spec: v1alpha1.FunctionSpec{
			Repository: v1alpha1.Repository{URL: d.repo.URL, Branch: "main", Path: function},
		},
	}
	if err := d.c.Create(ctx, fn); err != nil {
		return fmt.Errorf("creating Function %s/%s: %w", namespace, function, err)
	}
	where := "; -v shows them"
	if d.o.Verbose {
		where = ", and stderr (-v)"
	}
	d.n.Say("operator started (its logs: %s%s)", d.logPath, where)
	d.n.Say("created Function %s/%s: repository %s, branch main, path %s", namespace, function, d.repo.URL, function)
	return nil
}

// loop follows the operator's loop, narrating it, to the Function Ready on the rebuilt
// image, and returns what it left.
func (d *demo) loop(ctx context.Context) (*outcome, error) {
	w := d.w
	d.n.Step("The operator finds the middleware outdated",
		"It reads func.yaml at the branch's commit, finds the Knative Service func deployed, reads the middleware "+
			"version of the image it runs from the registry, and compares it with what its func library would build.")
	if err := w.until(ctx, d.o.Timeout, "the operator to find the middleware outdated", func(s *snapshot) bool {
		c := s.fn.Status.GetCondition(v1alpha1.FunctionConditionMiddlewareUpToDate)
		return c != nil && c.IsFalse()
	}); err != nil {
		return nil, err
	}

	d.n.Step("It rebuilds the function through Tekton",
		"func's own pipeline for the function (pack, from the commit it read), run by the real Tekton controller; "+
			"the simulated kubelet plays its Pods.")
	if err := w.until(ctx, d.o.Timeout, "the rebuild to succeed", func(s *snapshot) bool {
		b := s.fn.Status.Build
		return b != nil && b.Phase == v1alpha1.BuildPhaseSucceeded
	}); err != nil {
		return nil, err
	}

	d.n.Step("The new revision serves",
		"The Knative Service runs the rebuilt image by digest: Knative Serving makes a new Revision of it and, once "+
			"its Pod is ready, sends it all the traffic; the operator reads its middleware again and reports the Function Ready.")
	if err := w.until(ctx, d.o.Timeout, "the Function to be Ready on the rebuilt image", func(s *snapshot) bool {
		return s.svc.image != "" && s.svc.image != d.oldImage && s.svc.ready && s.fn.Status.Middleware != nil &&
			s.fn.Status.Middleware.Current == d.available && s.fn.Status.GetCondition(v1alpha1.FunctionConditionReady).IsTrue()
	}); err != nil {
		return nil, err
	}
	out, err := verify(ctx, d.c, d.reg, d.oldImage, d.available)
	if err != nil {
		return nil, err
	}
	d.n.Say("Knative Service %s/%s: latest ready Revision %s, running %s, at %s", namespace, function, out.Revision, out.NewImage, out.URL)
	d.n.Say("the registry: %s is labelled middleware-version %s", out.NewImage, out.NewImageMiddleware)
	d.n.Say("Function %s/%s: Ready=%t, status.middleware.current %s (available %s)", namespace, function, out.FunctionReady,
		out.StatusMiddleware, out.Available)
	d.n.End()
	return out, nil
}

// verify reads what the rebuild left: the PipelineRun, the Service's image and its
// middleware in the registry, the Function.
func verify(ctx context.Context, c client.Client, reg *registrytest.Registry, oldImage, available string) (*outcome, error) {
	out := &outcome{OldImage: oldImage, RegistryHost: reg.Host, Available: available}
	fn := &v1alpha1.Function{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: function}, fn); err != nil {
		return nil, fmt.Errorf("reading Function %s/%s: %w", namespace, function, err)
	}
	out.FunctionReady = fn.Status.GetCondition(v1alpha1.FunctionConditionReady).IsTrue()
	if fn.Status.Middleware != nil {
		out.StatusMiddleware = fn.Status.Middleware.Current
	}
	if fn.Status.Build != nil {
		out.PipelineRun = fn.Status.Build.PipelineRun
	}
	pr := &pipelinev1.PipelineRun{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: out.PipelineRun}, pr); err != nil {
		return nil, fmt.Errorf("reading PipelineRun %s/%s: %w", namespace, out.PipelineRun, err)
	}
	out.PipelineRunSucceeded = pr.Status.GetCondition(apis.ConditionSucceeded).IsTrue()
	svc, err := service(ctx, c)
	if err != nil {
		return nil, err
	}
	out.NewImage = svc.Spec.Template.Spec.Containers[0].Image
	out.Revision = svc.Status.LatestReadyRevisionName
	if svc.Status.URL != nil {
		out.URL = svc.Status.URL.String()
	}
	ref, err := name.ParseReference(out.NewImage)
	if err != nil {
		return nil, fmt.Errorf("the Service's image: %w", err)
	}
	img, err := remote.Image(ref, remote.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("reading %s from the registry: %w", ref, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the config of %s: %w", ref, err)
	}
	out.NewImageMiddleware = cf.Config.Labels[registrytest.MiddlewareLabel]
	return out, nil
}

// logs are the log files the demo keeps.
type logs struct{ operator, tekton, serving string }

// summarize prints the times of the steps, what changed, and how to look around.
func summarize(n *narrator, out *outcome, kubeconfig, assets string, l logs, exit bool) {
	phases, total := n.Phases()
	n.Plain("\n==> Done: the function was rebuilt with current middleware in %s\n", total.Round(100*time.Millisecond))
	for i, p := range phases {
		n.Plain("    %d. %-70s %7s\n", i+1, p.title, p.took.Round(100*time.Millisecond))
	}
	status := "Succeeded"
	if !out.PipelineRunSucceeded {
		status = "not succeeded"
	}
	n.Plain("\n    before: %s (middleware-version %s)\n", out.OldImage, oldMiddleware)
	n.Plain("    after:  %s (middleware-version %s)\n", out.NewImage, out.NewImageMiddleware)
	n.Plain("    PipelineRun %s/%s %s; Function %s/%s Ready=%t, status.middleware.current %s\n",
		namespace, out.PipelineRun, status, namespace, function, out.FunctionReady, out.StatusMiddleware)
	n.Plain("\n    Logs (kept): the operator %s\n", l.operator)
	n.Plain("                 the Tekton controller %s\n", l.tekton)
	n.Plain("                 the Knative Serving controller %s\n", l.serving)
	if exit {
		n.Plain("\n-exit: stopping everything now.\n")
		return
	}
	kubectl := "kubectl"
	if _, err := exec.LookPath("kubectl"); err != nil {
		kubectl = filepath.Join(assets, "kubectl")
	}
	n.Plain("\nEverything keeps running until Ctrl-C. Look around:\n\n    export KUBECONFIG=%s\n", kubeconfig)
	for _, args := range []string{
		"get functions -n " + namespace,
		"describe function " + function + " -n " + namespace,
		"get pipelineruns,taskruns,pods -n " + namespace,
		"get ksvc,revisions -n " + namespace,
		"get deployments,replicasets -n " + namespace,
		"get events -n " + namespace + " --sort-by=.lastTimestamp",
	} {
		n.Plain("    %s %s\n", kubectl, args)
	}
	n.Plain("\n")
}

// controllerBinary returns a controller's binary (what names it, e.g. "Tekton"):
// $env, else that of hack/<script>, which builds it the first time.
func controllerBinary(root string, n *narrator, env, script, what string) (string, error) {
	if bin := os.Getenv(env); bin != "" {
		return bin, nil
	}
	n.Say("hack/%s: the %s controller binary, built once from the module go.mod pins, then cached "+
		"(a first build takes a few minutes)", script, what)
	cmd := exec.Command(filepath.Join(root, "hack", script))
	cmd.Dir = root
	cmd.Stderr = &sayWriter{n: n}
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("building the %s controller: %w", what, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// service reads the function's Knative Service.
func service(ctx context.Context, c client.Client) (*servingv1.Service, error) {
	svc := &servingv1.Service{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: function}, svc); err != nil {
		return nil, fmt.Errorf("reading Knative Service %s/%s: %w", namespace, function, err)
	}
	return svc, nil
}

// until polls cond every 100ms until it holds, ctx ends or timeout passes.
func until(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waiting %s for %s: %w", timeout, what, errors.Join(errors.New("timed out"), last))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// sayWriter narrates each line written to it.
type sayWriter struct{ n *narrator }

func (s *sayWriter) Write(b []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		s.n.Say("%s", line)
	}
	return len(b), nil
}

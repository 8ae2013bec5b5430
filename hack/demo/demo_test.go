package main

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	fotenv "github.com/fnops/func-operator/test/envtest"
	"github.com/fnops/func-operator/test/knative"
	"github.com/fnops/func-operator/test/syncbuffer"
	"github.com/fnops/func-operator/test/tekton"
)

// requireEnv skips the test when one of the variables is not set, unless
// FUNC_OPERATOR_REQUIRE_ALL is (make test, CI), when it fails.
func requireEnv(t *testing.T, names ...string) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs a control plane and the Tekton and Knative Serving controllers: not in the quick tier (-short)")
	}
	for _, name := range names {
		if os.Getenv(name) != "" {
			continue
		}
		if os.Getenv("FUNC_OPERATOR_REQUIRE_ALL") != "" {
			t.Fatalf("%s is not set, and FUNC_OPERATOR_REQUIRE_ALL is: every test must run", name)
		}
		t.Skipf("%s is not set (make test sets it)", name)
	}
}

// simulatedActor matches a line that a simulated actor says, marked or not: the
// kubelets, Knative's autoscaler and networking layer ("Knative: ..."; the real
// controller's lines are "Knative Serving: ...").
var simulatedActor = regexp.MustCompile(`^\s+(\[simulation\] )?(kubelet|Knative): `)

// TestDemo runs make demo -exit end to end: the real operator, Tekton and Knative
// Serving controllers, the simulated kubelets, autoscaler and networking.
func TestDemo(t *testing.T) {
	requireEnv(t, fotenv.AssetsEnv, tekton.ControllerEnv, knative.ControllerEnv)
	out := &syncbuffer.Buffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	got, err := run(ctx, options{Out: out, Exit: true, CaptureStderr: true, Dir: t.TempDir(), Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatalf("the demo: %v\n%s", err, out)
	}
	t.Logf("the demo took %s", time.Since(start).Round(100*time.Millisecond))
	text := out.String()

	// The story's steps and its landmarks, in order; the lines of the real Knative
	// Serving controller are the demo's reading of the Service's status.
	url := "http://hello.demo.svc.cluster.local"
	inOrder(t, text,
		"==> 1/9 An embedded control plane",
		"==> 2/9 The function's source in a git repository",
		"==> 3/9 The image func deployed, with old middleware, in an OCI registry",
		"middleware-version "+oldMiddleware,
		"==> 4/9 Knative Serving, and the function deployed as a Knative Service",
		"Knative Serving controller running (pid ",
		"created Knative Service demo/hello",
		"Knative Serving: Service demo/hello Ready=True; latest ready Revision hello-00001; traffic 100% to hello-00001; at "+url+"\n",
		"==> 5/9 The Tekton Pipelines controller, and a simulated kubelet",
		"Tekton controller running (pid ",
		"==> 6/9 func-operator, from source, and the Function",
		"created Function demo/hello",
		"==> 7/9 The operator finds the middleware outdated",
		"operator: Function hello MiddlewareUpToDate=False",
		"==> 8/9 It rebuilds the function through Tekton",
		"[simulation] kubelet: step create pushed "+got.RegistryHost+"/fns/hello:latest@sha256:",
		"[simulation] kubelet: step func-deploy deployed "+got.RegistryHost+"/fns/hello@sha256:",
		"Tekton: PipelineRun "+got.PipelineRun+" Succeeded=True",
		"==> 9/9 The new revision serves",
		"Function demo/hello: Ready=true, status.middleware.current "+got.Available,
		"==> Done",
		"-exit: stopping everything now.",
	)
	// Knative's rollout, from the new image: its Revision ready (the autoscaler
	// simulation scaled it to one ready Pod), then all the traffic to it.
	inOrder(t, text,
		"==> 4/9 ",
		"[simulation] Knative: Revision demo/hello-00001: active, one pod ready (autoscaler simulation)",
		"==> 5/9 ",
		"[simulation] kubelet: step func-deploy deployed ",
		"[simulation] Knative: Revision demo/hello-00002: active, one pod ready (autoscaler simulation)",
		"Knative Serving: Service demo/hello Ready=True; latest ready Revision hello-00002; traffic 100% to hello-00002; at "+url+"\n",
		"Knative Service demo/hello: latest ready Revision hello-00002",
		"==> Done",
	)
	for _, want := range []string{
		"[simulation] Knative: KIngress demo/hello generation 1: network configured",
		"[simulation] Knative: KIngress demo/hello generation 2: network configured",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in the output:\n%s", want, text)
		}
	}
	if got.Revision != "hello-00002" || got.URL != url {
		t.Errorf("the Service's latest ready Revision %q at %q, want hello-00002 at %s", got.Revision, got.URL, url)
	}

	// What the rebuild left, read from the cluster and the registry.
	if !got.PipelineRunSucceeded || got.PipelineRun == "" {
		t.Errorf("PipelineRun %q succeeded = %t, want true", got.PipelineRun, got.PipelineRunSucceeded)
	}
	if got.NewImage == got.OldImage || !strings.HasPrefix(got.NewImage, got.RegistryHost+"/fns/hello@sha256:") {
		t.Errorf("the Service runs %s (before: %s), want a new digest in the local registry %s", got.NewImage, got.OldImage, got.RegistryHost)
	}
	if diff := cmp.Diff(
		map[string]string{"image": got.Available, "status": got.Available},
		map[string]string{"image": got.NewImageMiddleware, "status": got.StatusMiddleware},
	); diff != "" || got.Available == oldMiddleware {
		t.Errorf("middleware of the new image and status.middleware.current (-want +got):\n%s (old %s)", diff, oldMiddleware)
	}
	if !got.FunctionReady {
		t.Error("the Function is not Ready")
	}

	// Quiet: no log line; every simulated actor's line marked.
	if strings.Contains(text, "DEBUG") {
		t.Errorf("the narration holds DEBUG lines:\n%s", text)
	}
	actors := 0
	for _, line := range strings.Split(text, "\n") {
		m := simulatedActor.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		actors++
		if m[1] == "" {
			t.Errorf("a simulated actor's line without %s: %q", SimulationMarker, line)
		}
	}
	if actors < 5 {
		t.Errorf("%d lines of simulated actors, want the kubelet's and Knative's:\n%s", actors, text)
	}
}

// inOrder fails the test unless text holds each of landmarks, in order.
func inOrder(t *testing.T, text string, landmarks ...string) {
	t.Helper()
	rest := text
	for _, want := range landmarks {
		i := strings.Index(rest, want)
		if i < 0 {
			t.Fatalf("no %q after the previous landmark; the output:\n%s", want, text)
		}
		rest = rest[i+len(want):]
	}
}

func TestWrap(t *testing.T) {
	for _, tc := range []struct {
		text  string
		width int
		want  []string
	}{
		{"", 10, nil},
		{"one", 10, []string{"one"}},
		{"one two three", 7, []string{"one two", "three"}},
		{"a  b\n c", 80, []string{"a b c"}},
		{"averyveryverylongword x", 5, []string{"averyveryverylongword", "x"}},
	} {
		if diff := cmp.Diff(tc.want, wrap(tc.text, tc.width)); diff != "" {
			t.Errorf("wrap(%q, %d) (-want +got):\n%s", tc.text, tc.width, diff)
		}
	}
}

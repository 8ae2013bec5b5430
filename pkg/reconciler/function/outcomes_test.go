package function

import (
	"context"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/netguard"
	"github.com/fnops/func-operator/pkg/outcomes"
	"github.com/fnops/func-operator/pkg/outcomes/outcomestest"
)

// TestReconciler_recordEvents_Outcomes: what the status patch records of a
// Function's builds and deploys reaches a real CloudEvents receiver, each
// transition once: the first image seen (nothing), a build started, its run
// succeeded (nothing yet), its image seen serving (succeeded, and a deploy seen), a
// requeue (nothing again), another build of a cause the operator had not known
// started and failed.
func TestReconciler_recordEvents_Outcomes(t *testing.T) {
	onFakeClient(t)
	rcv := outcomestest.Start(t)
	policy, err := netguard.NewPolicy(nil, nil, nil) // loopback let through, as --host-allow-loopback
	if err != nil {
		t.Fatal(err)
	}
	r, _ := newTestReconciler(t, 100)
	r.Config.Set(func() config.Config {
		c := config.Defaults()
		c.Events.Sink = config.EventSink{URL: rcv.URL}
		return c
	}())
	sender, err := outcomes.New(outcomes.Options{Config: func() config.Events { return r.Config.Load().Events },
		Transport: netguard.New(policy).Transport(0), Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	r.Outcomes = sender
	r.wire()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = sender.Start(ctx) }()

	const (
		imageA, imageB = "registry.example.com/fns/hello@sha256:aaaa", "registry.example.com/fns/hello@sha256:bbbb"
		commit         = "0123456789abcdef0123456789abcdef01234567"
	)
	t1, t2 := metav1.NewTime(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)), metav1.NewTime(time.Date(2026, 11, 29, 12, 5, 0, 0, time.UTC))
	unseen := &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "fn", UID: "uid-1"}}
	unseen.Status.Name = "hello"
	running := unseen.DeepCopy()
	running.Status.Deployment = &v1alpha1.DeploymentStatus{Image: imageA, Deployer: "knative", Revision: "0123456"}
	running.Status.Middleware = &v1alpha1.MiddlewareStatus{Current: "v0.21.3", Available: "v0.22.0"}
	next := func(prev *v1alpha1.Function, change func(fn *v1alpha1.Function)) *v1alpha1.Function {
		fn := prev.DeepCopy()
		change(fn)
		return fn
	}
	started := next(running, func(fn *v1alpha1.Function) {
		fn.Status.Build = &v1alpha1.BuildStatus{ID: "b1", Phase: v1alpha1.BuildPhaseStarting, Cause: v1alpha1.BuildCauseMiddleware, Commit: commit,
			FromImage: imageA, FromMiddleware: "v0.21.3", ToMiddleware: "v0.22.0", StartTime: &t1}
	})
	runs := next(started, func(fn *v1alpha1.Function) {
		fn.Status.Build.Phase, fn.Status.Build.PipelineRun = v1alpha1.BuildPhaseRunning, "pr-b1"
	})
	runSucceeded := next(runs, func(fn *v1alpha1.Function) {
		fn.Status.Build.Phase, fn.Status.Build.CompletionTime = v1alpha1.BuildPhaseSucceeded, &t2
	})
	rebuilt := next(runSucceeded, func(fn *v1alpha1.Function) {
		fn.Status.Middleware.LastRebuild, fn.Status.Middleware.Current = t2.DeepCopy(), "v0.22.0"
		fn.Status.Deployment.Image, fn.Status.Deployment.Revision = imageB, commit
	})
	again := next(rebuilt, func(fn *v1alpha1.Function) {
		fn.Status.Build = &v1alpha1.BuildStatus{ID: "b2", Phase: v1alpha1.BuildPhaseStarting, Cause: "Source", Commit: commit,
			FromImage: imageB, FromMiddleware: "v0.22.0", ToMiddleware: "v0.22.0", StartTime: &t2}
	})
	failed := next(again, func(fn *v1alpha1.Function) {
		b := fn.Status.Build
		b.Phase, b.CompletionTime, b.FailedTask, b.FailedStep, b.Message, b.Failures = v1alpha1.BuildPhaseFailed, &t2, "build", "build", "exit status 1", 1
	})
	for _, step := range [][2]*v1alpha1.Function{
		{unseen, running}, // the first image seen: no deploy seen
		{running, started}, {started, runs}, {runs, runSucceeded}, {runSucceeded, rebuilt},
		{rebuilt, rebuilt}, // a requeue: recorded already
		{rebuilt, again}, {again, failed}, {failed, failed},
	} {
		r.recordEvents(step[0], step[1])
	}

	type event struct {
		Type, Subject, Source, Namespace string
		Data                             outcomes.Data
	}
	base := outcomes.Data{Namespace: "team-a", Name: "fn", UID: types.UID("uid-1"), Function: "hello"}
	with := func(change func(d *outcomes.Data)) outcomes.Data { d := base; change(&d); return d }
	source := "/apis/functions.dev/v1alpha1/namespaces/team-a/functions/fn"
	want := []event{{
		Type: outcomes.TypeBuildStarted, Subject: "b1", Source: source, Namespace: "team-a",
		Data: with(func(d *outcomes.Data) {
			d.BuildID, d.Cause, d.Commit = "b1", "Middleware", commit
			d.Image, d.Middleware = outcomes.Change{Before: imageA}, outcomes.Change{Before: "v0.21.3", After: "v0.22.0"}
		}),
	}, {
		Type: outcomes.TypeBuildSucceeded, Subject: "b1", Source: source, Namespace: "team-a",
		Data: with(func(d *outcomes.Data) {
			d.BuildID, d.Cause, d.Commit, d.PipelineRun = "b1", "Middleware", commit, "pr-b1"
			d.Image, d.Middleware = outcomes.Change{Before: imageA, After: imageB}, outcomes.Change{Before: "v0.21.3", After: "v0.22.0"}
		}),
	}, {
		Type: outcomes.TypeDeploySeen, Subject: imageB, Source: source, Namespace: "team-a",
		Data: with(func(d *outcomes.Data) {
			d.Commit, d.Deployer = commit, "knative"
			d.Image, d.Middleware = outcomes.Change{Before: imageA, After: imageB}, outcomes.Change{Before: "v0.21.3", After: "v0.22.0"}
		}),
	}, {
		Type: outcomes.TypeBuildStarted, Subject: "b2", Source: source, Namespace: "team-a",
		Data: with(func(d *outcomes.Data) {
			d.BuildID, d.Cause, d.Commit = "b2", "Source", commit
			d.Image, d.Middleware = outcomes.Change{Before: imageB}, outcomes.Change{Before: "v0.22.0", After: "v0.22.0"}
		}),
	}, {
		Type: outcomes.TypeBuildFailed, Subject: "b2", Source: source, Namespace: "team-a",
		Data: with(func(d *outcomes.Data) {
			d.BuildID, d.Cause, d.Commit = "b2", "Source", commit
			d.Image, d.Middleware = outcomes.Change{Before: imageB, After: imageB}, outcomes.Change{Before: "v0.22.0", After: "v0.22.0"}
			d.Reason, d.Message, d.FailedTask, d.FailedStep, d.Failures = v1alpha1.ReasonBuildFailed, "exit status 1", "build", "build", 1
		}),
	}}
	rcv.Wait(t, len(want), 10*time.Second)
	time.Sleep(100 * time.Millisecond) // room for one sent twice to arrive
	got := rcv.Events()
	gotEvents := make([]event, 0, len(got))
	for _, e := range got {
		ge := event{Type: e.Type(), Subject: e.Subject(), Source: e.Source()}
		ge.Namespace, _ = e.Extensions()[outcomes.ExtensionNamespace].(string)
		if err := e.DataAs(&ge.Data); err != nil {
			t.Fatal(err)
		}
		if e.DataContentType() != cloudevents.ApplicationJSON {
			t.Errorf("%s: datacontenttype %q", e.Type(), e.DataContentType())
		}
		gotEvents = append(gotEvents, ge)
	}
	if diff := cmp.Diff(want, gotEvents); diff != "" {
		t.Errorf("CloudEvents received (-want +got):\n%s", diff)
	}
	if c := sender.Counts(); c.Sent != uint64(len(want)) || c.Failed != 0 {
		t.Errorf("counts: %+v, want %d sent", c, len(want))
	}
}

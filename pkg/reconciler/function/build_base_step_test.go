package function

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/git"
	"github.com/fnops/func-operator/pkg/rebuild"
	"github.com/fnops/func-operator/pkg/reconciler/function/build"
	"github.com/fnops/func-operator/pkg/rerror"
)

// fakeRebaser records the rebases asked of it and answers with image (or err).
type fakeRebaser struct {
	mu    sync.Mutex
	asked []string // "<image> onto <run image> as <name>"
	image string
	err   error
}

func (f *fakeRebaser) Rebase(_ context.Context, _ *v1alpha1.Function, _ build.Target, image string, b build.Base) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, image+" onto "+b.RunImage+" as "+b.RunImageName)
	return f.image, f.err
}

func (f *fakeRebaser) rebases() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.asked...)
}

// TestReconciler_reconcileRebuild_Base: the rebuild step for a base that moved on:
// a buildpacks image rebased in-process (no pipeline), an s2i one rebuilt through
// it, middleware first, the maintenance window holding middleware rebuilds when
// asked, and a rebase's preconditions; then the rebase followed to its end.
func TestReconciler_reconcileRebuild_Base(t *testing.T) {
	onFakeClient(t)
	const (
		image    = "127.0.0.1:5000/fns/hello@sha256:0123"
		rebased  = "127.0.0.1:5000/fns/hello@sha256:4567"
		runImage = "127.0.0.1:5000/paketo/run@sha256:89ab"
	)
	meta := funclib.Metadata{Name: "hello", Runtime: "go", Registry: "127.0.0.1:5000/fns"}
	followed := rebuildFrom{commit: "0123456789abcdef", source: v1alpha1.RebuildFromFollowed}
	baseDue := build.Base{Due: true, Rebase: true, Image: "127.0.0.1:5000/paketo/run:latest", RunImage: runImage, RunImageName: "127.0.0.1:5000/paketo/run:latest",
		Current: "127.0.0.1:5000/paketo/run@sha256:0000", Available: runImage}
	s2iDue := baseDue
	s2iDue.Rebase = false
	for _, tt := range []struct {
		name      string
		base      build.Base
		mwDue     bool
		noRebaser bool
		bare      bool
		window    string // maintenanceWindow, with Middleware among its causes; "" none
		// windowMiddlewareOnly: the window holds middleware rebuilds only.
		windowMiddlewareOnly bool
		noTekton             bool
		wantBase             string // BaseUpToDate's status/reason/severity after the step; "" not checked
		wantCond             string // MiddlewareUpToDate's status/reason/
		wantKind             string // the error's kind
		wantCause            string
		wantMethod           string
		// wantRebase: a rebase is launched after the patch; wantPipeline: a pipeline build.
		wantRebase, wantPipeline bool
		wantSoon                 time.Duration
	}{{
		name:     "buildpacks base moved, Rebase: a rebase is launched after the patch, no pipeline",
		base:     baseDue,
		wantCond: "False/Rebuilding/", wantCause: v1alpha1.BuildCauseBase, wantMethod: v1alpha1.BuildMethodRebase, wantRebase: true,
		wantSoon: rebuild.PollWhileWaiting,
	}, {
		name:     "s2i base moved, RebaseAndRebuild: rebuilt through func's pipeline, of the deployed commit",
		base:     s2iDue,
		wantCond: "False/Rebuilding/", wantCause: v1alpha1.BuildCauseBase, wantPipeline: true, wantSoon: rebuild.PollWhileWaiting,
	}, {
		name: "middleware outdated too: the middleware rebuild goes first (it builds on the current base)",
		base: baseDue, mwDue: true,
		wantCond: "False/Rebuilding/", wantCause: v1alpha1.BuildCauseMiddleware, wantPipeline: true, wantSoon: rebuild.PollWhileWaiting,
	}, {
		name: "middleware outdated, the window holds middleware and is shut: nothing starts, back when it opens",
		base: build.Base{}, mwDue: true, window: time.Now().UTC().Add(72*time.Hour).Format("Mon") + " 02:00-02:01", // never today
		wantCond: "False/MiddlewareOutdated/",
	}, {
		name: "no rebaser: the rebase cannot start, BaseUpToDate says so (Warning), Ready not gated",
		base: baseDue, noRebaser: true,
		wantCond: "Unknown//", wantBase: "False/RebuildNotPossible/Warning",
	}, {
		name: "namespace not onboarded: no rebase, BaseUpToDate says so (Warning), Ready not gated",
		base: baseDue, bare: true,
		wantCond: "Unknown//", wantBase: "False/NamespaceNotOnboarded/Warning",
	}, {
		name: "middleware outdated but its rebuild cannot start (no Tekton): the rebase goes on",
		base: baseDue, mwDue: true, noTekton: true,
		wantCond: "False/Rebuilding/", wantCause: v1alpha1.BuildCauseBase, wantMethod: v1alpha1.BuildMethodRebase, wantRebase: true,
		wantSoon: rebuild.PollWhileWaiting,
	}, {
		name: "middleware held by the shut window, the base not: the rebase goes now",
		base: baseDue, mwDue: true, window: time.Now().UTC().Add(72*time.Hour).Format("Mon") + " 02:00-02:01", windowMiddlewareOnly: true,
		wantCond: "False/Rebuilding/", wantCause: v1alpha1.BuildCauseBase, wantMethod: v1alpha1.BuildMethodRebase, wantRebase: true,
		wantSoon: rebuild.PollWhileWaiting,
	}} {
		t.Run(tt.name, func(t *testing.T) {
			ns := newNamespace(t)
			if tt.bare {
				ns = newBareNamespace(t)
			}
			r, rec := newBuildReconciler(t)
			cfg := r.Config.Load()
			cfg.MaxConcurrentBuilds = 2
			if tt.window != "" {
				cfg.Base.Window, _ = config.ParseWindow(tt.window)
				cfg.Base.WindowCauses = []string{v1alpha1.BuildCauseBase, v1alpha1.BuildCauseMiddleware}
				if tt.windowMiddlewareOnly {
					cfg.Base.WindowCauses = []string{v1alpha1.BuildCauseMiddleware}
				}
			}
			r.Builds.Tekton = !tt.noTekton
			r.Config.Set(cfg)
			fr := &fakeRebaser{image: rebased}
			if !tt.noRebaser {
				r.build.Rebaser = fr
			}
			key := types.NamespacedName{Namespace: ns, Name: "fn"}
			fn := &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fn", UID: "uid-1"}}
			fn.Spec.Repository.URL = "http://127.0.0.1:1/fn.git"
			fn.Status.InitializeConditions()
			fn.Status.Middleware = &v1alpha1.MiddlewareStatus{}
			fn.Status.Deployment = &v1alpha1.DeploymentStatus{Image: image, Revision: "0123456789abcdef"}
			fn.Status.Base = &v1alpha1.BaseStatus{Kind: v1alpha1.BaseKindRunImage}
			mw := middlewareVerdict{current: "v0.21.3", available: "v0.21.3", from: followed}
			if tt.mwDue {
				mw = middlewareVerdict{current: "v0.1.0", available: "v0.21.3", rebuildDue: true, from: followed}
			}
			md := meta
			obs := &observation{
				source:     sourceArtifact{head: git.Head{Branch: "main", Commit: "0123456789abcdef"}, name: "hello", runtime: "go", metadata: &md},
				deployment: deployment{image: image, found: testTarget("knative")},
				middleware: mw,
				base:       tt.base,
			}
			res, err := r.build.Rebuild(context.Background(), fn, obs.forBuild())
			got := outcomeOf(err, fn, v1alpha1.FunctionConditionMiddlewareUpToDate)
			if diff := cmp.Diff(outcome{Kind: tt.wantKind, Reason: got.Reason, Condition: tt.wantCond}, got); diff != "" {
				t.Fatalf("outcome (-want +got):\n%s\nerror: %v\n%+v", diff, err, fn.Status.GetCondition(v1alpha1.FunctionConditionMiddlewareUpToDate))
			}
			if tt.wantBase != "" {
				c := fn.Status.GetCondition(v1alpha1.FunctionConditionBaseUpToDate)
				if c == nil || string(c.Status)+"/"+c.Reason+"/"+string(c.Severity) != tt.wantBase {
					t.Errorf("BaseUpToDate = %+v, want %s", c, tt.wantBase)
				}
			}
			if tt.window != "" && !tt.wantRebase && (res.RequeueAfter <= 0 || res.RequeueAfter > 7*24*time.Hour) {
				t.Errorf("RequeueAfter = %s, want when the window opens", res.RequeueAfter)
			}
			if tt.wantSoon > 0 && (res.RequeueAfter <= 0 || res.RequeueAfter > tt.wantSoon) {
				t.Errorf("RequeueAfter = %s, want at most %s", res.RequeueAfter, tt.wantSoon)
			}
			if !tt.wantRebase && !tt.wantPipeline {
				if fn.Status.Build != nil || res.AfterPatch != nil || r.Builds.Queue.IsRunning(key) {
					t.Errorf("a build started: status.build %+v, AfterPatch set %t", fn.Status.Build, res.AfterPatch != nil)
				}
				return
			}
			b := fn.Status.Build
			if b == nil || b.Phase != v1alpha1.BuildPhaseStarting || b.Cause != tt.wantCause || b.Method != tt.wantMethod || b.FromImage != image {
				t.Fatalf("status.build = %+v, want Starting, cause %s, method %q, from %s", b, tt.wantCause, tt.wantMethod, image)
			}
			if !r.Builds.Queue.IsRunning(key) {
				t.Error("the admitted build holds no slot")
			}
			// Nothing runs before the status that records it is written.
			r.Builds.Launcher.Wait()
			if n, m := len(rec.requests()), len(fr.rebases()); n+m != 0 {
				t.Fatalf("%d pipelines, %d rebases launched before AfterPatch, want none", n, m)
			}
			res.AfterPatch(true)
			r.Builds.Launcher.Wait()
			if tt.wantPipeline {
				if n, m := len(rec.requests()), len(fr.rebases()); n != 1 || m != 0 {
					t.Fatalf("launched %d pipelines and %d rebases, want one pipeline", n, m)
				}
				return
			}
			if diff := cmp.Diff([]string{image + " onto " + runImage + " as 127.0.0.1:5000/paketo/run:latest"}, fr.rebases()); diff != "" || len(rec.requests()) != 0 {
				t.Fatalf("rebases (-want +got):\n%s\npipelines: %d, want none", diff, len(rec.requests()))
			}
			// The rebase's end is its launch's: Succeeded with the image it deployed.
			unwritten := fn.DeepCopy()
			if _, err := r.build.Observe(context.Background(), fn); err != nil {
				t.Fatal(err)
			}
			// A status write that failed: the next reconcile reads the build Starting
			// again, and still learns its end (the launch has no other record).
			if _, err := r.build.Observe(context.Background(), unwritten); err != nil || unwritten.Status.Build.Phase != v1alpha1.BuildPhaseSucceeded ||
				unwritten.Status.Build.ToImage != rebased {
				t.Fatalf("after a lost status write: status.build %+v, %v; want Succeeded to %s", unwritten.Status.Build, err, rebased)
			}
			b = fn.Status.Build
			if b.Phase != v1alpha1.BuildPhaseSucceeded || b.ToImage != rebased || r.Builds.Queue.IsRunning(key) {
				t.Fatalf("after the rebase returned: status.build %+v, holds a slot %t; want Succeeded to %s, slot freed", b, r.Builds.Queue.IsRunning(key), rebased)
			}
			// Verified once the function serves the rebased image, not before.
			obs.deployment.image = image
			if res, _ := r.build.Rebuild(context.Background(), fn, obs.forBuild()); res.RequeueAfter == 0 || fn.Status.Base.LastUpdate != nil {
				t.Errorf("the old image still serves: want a wait, no base update recorded; got %+v, lastUpdate %v", res, fn.Status.Base.LastUpdate)
			}
			obs.deployment.image, obs.base = rebased, build.Base{}
			if _, err := r.build.Rebuild(context.Background(), fn, obs.forBuild()); err != nil && !rerror.IsStalling(err) {
				t.Fatal(err) // a stall: the middleware rebuild, due still, cannot start
			}
			if fn.Status.Base.LastUpdate == nil || fn.Status.Middleware.LastRebuild == nil {
				t.Errorf("served: want status.base.lastUpdate and middleware.lastRebuild set, got %+v", fn.Status.Base)
			}
		})
	}

	t.Run("a failed rebase: Failed with its error, backoff, the slot freed", func(t *testing.T) {
		ns := newNamespace(t)
		r, _ := newBuildReconciler(t)
		fr := &fakeRebaser{err: errors.New("pushing the rebased image: HTTP 403 Forbidden (DENIED)")}
		r.build.Rebaser = fr
		key := types.NamespacedName{Namespace: ns, Name: "fn"}
		fn := &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fn", UID: "uid-1"}}
		fn.Status.InitializeConditions()
		fn.Status.Middleware = &v1alpha1.MiddlewareStatus{}
		fn.Status.Deployment = &v1alpha1.DeploymentStatus{Image: image}
		obs := &observation{deployment: deployment{image: image, found: testTarget("raw")},
			middleware: middlewareVerdict{current: "v1", available: "v1"}, base: baseDue}
		res, err := r.build.Rebuild(context.Background(), fn, obs.forBuild())
		if err != nil || res.AfterPatch == nil {
			t.Fatalf("Rebuild = %+v, %v; want a launch after the patch", res, err)
		}
		res.AfterPatch(true)
		r.Builds.Launcher.Wait()
		if _, err := r.build.Observe(context.Background(), fn); err != nil {
			t.Fatal(err)
		}
		b := fn.Status.Build
		if b.Phase != v1alpha1.BuildPhaseFailed || b.RetryAfter == nil || b.Failures != 1 || r.Builds.Queue.IsRunning(key) {
			t.Fatalf("status.build = %+v; want Failed once, with a retry time, no slot", b)
		}
		if want := "the rebase failed: pushing the rebased image: HTTP 403 Forbidden (DENIED)"; b.Message != want {
			t.Errorf("message %q, want %q", b.Message, want)
		}
		if c := fn.Status.GetCondition(v1alpha1.FunctionConditionMiddlewareUpToDate); c == nil || c.Reason != v1alpha1.ReasonBuildFailed {
			t.Errorf("MiddlewareUpToDate = %+v, want BuildFailed", c)
		}
	})
}

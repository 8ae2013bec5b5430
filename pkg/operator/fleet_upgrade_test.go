package operator

import (
	"fmt"
	"testing"
	"time"

	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"

	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/test/tekton"
)

// funcGoOfV044 is the knative.dev/func-go that func v0.44.0's Go scaffolding built
// into every Go function, with no middleware-version label on the image.
const funcGoOfV044 = "v0.21.3"

// TestOperator_FleetBuiltByOlderFuncIsRebuilt is the upgrade the operator exists
// for: a fleet of Go functions built by func v0.44.0 (real executables requiring
// func-go v0.21.3, read from their build info: no label) is outdated against what
// the linked func builds, is rebuilt under the budget on the real Tekton controller,
// and each rebuilt image is verified by its labels: the middleware version the
// linked func builds, and the commit the operator observed as its revision.
func TestOperator_FleetBuiltByOlderFuncIsRebuilt(t *testing.T) {
	const budget = 2
	names := []string{"g1", "g2", "g3", "g4"}
	ns := newNamespace(t)
	f := newRebuildFixture(t, ns, names...)
	for _, n := range names {
		f.oldImage[n] = f.reg.PushFuncGoELF(t, "fns/"+n, funcGoOfV044)
		setServiceImage(t, ns, n, f.oldImage[n])
	}
	// The fleet runs its old images (the real Knative Serving controller rolled them
	// out) before the operator looks at it.
	for _, n := range names {
		eventually(t, 60*time.Second, knativeServes(t, ns, n))
	}
	firstSeen := map[string]time.Time{} // the simulation's goroutine alone uses it
	sim := tekton.StartKubelet(t, restConfig, tekton.Options{
		Namespaces: []string{ns}, Registry: f.reg, Decide: succeed(t),
		// Each build runs for at least 500ms, so that the budget is what holds the others.
		Hold: func(pr *pipelinev1.PipelineRun) bool {
			if _, ok := firstSeen[pr.Name]; !ok {
				firstSeen[pr.Name] = time.Now()
			}
			return time.Since(firstSeen[pr.Name]) > 500*time.Millisecond
		},
	})
	startOperatorWith(t, rebuildConfig(budget), ns)
	for _, n := range names {
		f.createFunction(t, n, nil)
	}
	for _, n := range names {
		eventually(t, 120*time.Second, rebuilt(t, ns, n))
	}

	available := availableGoMiddleware(t)
	if available == funcGoOfV044 {
		t.Fatalf("the linked func %s builds func-go %s, what v0.44.0 built: nothing to upgrade", funclib.Version(), available)
	}
	for _, n := range names {
		fn := getFunction(t, ns, n)
		b := fn.Status.Build
		if b.FromImage != f.oldImage[n] || b.FromMiddleware != funcGoOfV044 || b.ToMiddleware != available || b.Commit != f.commit {
			t.Errorf("%s: status.build = %+v, want from %s (func-go %s, read from the executable) to %s at %s",
				n, b, f.oldImage[n], funcGoOfV044, available, f.commit)
		}
		if mw := fn.Status.Middleware; mw.Current != available || mw.FuncVersion != funclib.Version() {
			t.Errorf("%s: status.middleware = %+v, want current %s of func %s", n, mw, available, funclib.Version())
		}
		// The image the Service runs now, read from the registry: labelled by the
		// build as func's builds label it.
		mwLabel := imageLabel(t, fn.Status.Deployment.Image, funclib.MiddlewareVersionLabel)
		revLabel := imageLabel(t, fn.Status.Deployment.Image, funclib.RevisionLabel)
		if mwLabel != available || revLabel != f.commit {
			t.Errorf("%s: the rebuilt image's labels %s=%q, %s=%q; want %s and %s", n,
				funclib.MiddlewareVersionLabel, mwLabel, funclib.RevisionLabel, revLabel, available, f.commit)
		}
	}
	if got := sim.MaxRunning(); got > budget || got == 0 {
		t.Errorf("at most %d builds ran at once, want 1 to %d (the budget)", got, budget)
	}
	if got := len(sim.Started()); got != len(names) {
		t.Errorf("%d builds started, want one per Function (%d)", got, len(names))
	}
	if got := fmt.Sprint(len(pipelineRuns(t, ns))); got != fmt.Sprint(len(names)) {
		t.Errorf("%s PipelineRuns, want %d", got, len(names))
	}
}

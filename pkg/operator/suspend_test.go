package operator

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/reconciler/function/resources"
	"github.com/fnops/func-operator/test/tekton"
)

// TestOperator_Suspend: a suspended Function is neither checked nor rebuilt, its
// queued rebuild gives its place up, and it says so; resumed, it is checked at once
// and rebuilt.
func TestOperator_Suspend(t *testing.T) {
	ns := newNamespace(t)
	f := newRebuildFixture(t, ns, "fn")
	tekton.StartKubelet(t, restConfig, tekton.Options{Namespaces: []string{ns}, Registry: f.reg, Decide: succeed(t)})
	cfg := rebuildConfig(0) // no budget: the rebuild waits in the queue
	cfg.CheckInterval = time.Second
	_, store, _ := startOperatorWith(t, cfg, ns)
	f.createFunction(t, "fn", nil)
	eventually(t, 30*time.Second, condition(ns, "fn", v1alpha1.FunctionConditionMiddlewareUpToDate, corev1.ConditionFalse, v1alpha1.ReasonRebuildQueued))

	setSuspend(t, ns, "fn", true)
	eventually(t, 20*time.Second, condition(ns, "fn", v1alpha1.FunctionConditionSuspended, corev1.ConditionTrue, v1alpha1.ReasonSuspended))
	fn := getFunction(t, ns, "fn")
	if fn.Status.Build != nil {
		t.Errorf("status.build = %+v while suspended, want the queued rebuild gone", fn.Status.Build)
	}
	if c := fn.Status.GetCondition(v1alpha1.FunctionConditionMiddlewareUpToDate); c == nil || c.Reason != v1alpha1.ReasonMiddlewareOutdated {
		t.Errorf("MiddlewareUpToDate = %+v, want MiddlewareOutdated (no longer queued)", c)
	}
	if c := fn.Status.GetCondition(v1alpha1.FunctionConditionReconciling); c != nil {
		t.Errorf("Reconciling = %+v while suspended, want none", c)
	}

	// A budget now, and checks every second: still nothing while suspended.
	cfg.MaxConcurrentBuilds = 1
	store.Set(cfg)
	checks := f.srv.RefAdvertisements("fleet")
	time.Sleep(4 * time.Second)
	if got := f.srv.RefAdvertisements("fleet"); got != checks {
		t.Errorf("%d branch listings in 4s while suspended (checkInterval 1s), want none", got-checks)
	}
	if runs := pipelineRuns(t, ns); len(runs) != 0 {
		t.Errorf("%d PipelineRuns while suspended, want none", len(runs))
	}

	// Resumed: checked at once, and rebuilt (the positive control).
	setSuspend(t, ns, "fn", false)
	eventually(t, 60*time.Second, rebuilt(t, ns, "fn"))
	if got := f.srv.RefAdvertisements("fleet"); got == checks {
		t.Errorf("no branch listing after the Function was resumed")
	}
	if c := getFunction(t, ns, "fn").Status.GetCondition(v1alpha1.FunctionConditionSuspended); c != nil {
		t.Errorf("Suspended = %+v after resume, want none", c)
	}
	ev := eventsOf(t, ns, "fn")
	if len(ev[v1alpha1.ReasonSuspended]) != 1 || len(ev["Resumed"]) != 1 {
		t.Errorf("events %v, want one Suspended and one Resumed", ev)
	}
}

func setSuspend(t *testing.T, ns, name string, suspend bool) {
	t.Helper()
	fn := getFunction(t, ns, name)
	patch := client.RawPatch("application/merge-patch+json", []byte(fmt.Sprintf(`{"spec":{"suspend":%t}}`, suspend)))
	if err := k8sClient.Patch(context.Background(), fn, patch); err != nil {
		t.Fatal(err)
	}
}

// TestOperator_SuspendedMidBuildGivesItsSlotBack (issue 22): a tenant suspends a
// Function while its build runs. The build is still followed to its end, so that
// its slot of the fleet's budget (1 here) comes back, and another Function's
// queued rebuild runs; before, the suspended Function's status kept the build
// Running, its slot was never released, and a restart seeded it again. The
// positive control: the other Function waits while the build runs.
func TestOperator_SuspendedMidBuildGivesItsSlotBack(t *testing.T) {
	ns := newNamespace(t)
	f := newRebuildFixture(t, ns, "a", "b")
	var release atomic.Bool
	tekton.StartKubelet(t, restConfig, tekton.Options{Namespaces: []string{ns}, Registry: f.reg, Decide: succeed(t),
		Hold: func(pr *pipelinev1.PipelineRun) bool {
			return pr.Labels[resources.LabelFunction] != "a" || release.Load()
		}})
	startOperatorWith(t, rebuildConfig(1), ns)
	f.createFunction(t, "a", nil)
	eventually(t, 60*time.Second, buildPhase(ns, "a", v1alpha1.BuildPhaseRunning))
	f.createFunction(t, "b", nil)
	eventually(t, 30*time.Second, condition(ns, "b", v1alpha1.FunctionConditionMiddlewareUpToDate, corev1.ConditionFalse, v1alpha1.ReasonRebuildQueued))

	setSuspend(t, ns, "a", true)
	eventually(t, 20*time.Second, condition(ns, "a", v1alpha1.FunctionConditionSuspended, corev1.ConditionTrue, v1alpha1.ReasonSuspended))
	if b := getFunction(t, ns, "b").Status.Build; b == nil || b.Phase != v1alpha1.BuildPhaseQueued {
		t.Fatalf("b's build = %+v while a's runs, want Queued (the budget is 1)", b)
	}
	release.Store(true)
	eventually(t, 60*time.Second, buildPhase(ns, "a", v1alpha1.BuildPhaseSucceeded))
	eventually(t, 90*time.Second, rebuilt(t, ns, "b"))
}

// buildPhase waits for the Function's status.build to reach phase.
func buildPhase(ns, name, phase string) func() string {
	return func() string {
		fn := &v1alpha1.Function{}
		if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, fn); err != nil {
			return err.Error()
		}
		if b := fn.Status.Build; b == nil || b.Phase != phase {
			return fmt.Sprintf("%s/%s: status.build = %+v, want phase %s", ns, name, b, phase)
		}
		return ""
	}
}

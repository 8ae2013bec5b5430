package build

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fnops/func-operator/api/v1alpha1"
)

// TestReconciler_Observe: a rebase has no PipelineRun, so its launch holds its outcome
// alone. A reconcile whose status patch fails (a conflict) must not make the launcher
// forget it: the next reconcile records it again. Once a patch recorded it, it is
// forgotten.
func TestReconciler_Observe(t *testing.T) {
	const rebased = "registry.example/fns/hello@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	r := newTestReconciler(t, newFakeClient(t))
	key := types.NamespacedName{Namespace: "ns", Name: "hello"}
	r.Builds.Launcher.LaunchJob(key, "b1", time.Minute, func(context.Context) (string, error) { return rebased, nil })
	deadline := time.Now().Add(10 * time.Second)
	for _, ended, _ := r.Builds.Launcher.Launched(key, "b1"); !ended; _, ended, _ = r.Builds.Launcher.Launched(key, "b1") {
		if time.Now().After(deadline) {
			t.Fatal("the launch did not return")
		}
		time.Sleep(10 * time.Millisecond)
	}
	starting := func() *v1alpha1.Function {
		return &v1alpha1.Function{
			ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
			Status: v1alpha1.FunctionStatus{Build: &v1alpha1.BuildStatus{ID: "b1", Phase: v1alpha1.BuildPhaseStarting,
				StartTime: &metav1.Time{Time: time.Now()}, Cause: v1alpha1.BuildCauseBase, Method: v1alpha1.BuildMethodRebase,
				FromImage: "registry.example/fns/hello@sha256:" + "ab0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab"}},
		}
	}
	observe := func(patched bool) {
		t.Helper()
		fn := starting() // what the status holds while no patch recorded the outcome
		res, err := r.Observe(context.Background(), fn)
		if err != nil {
			t.Fatal(err)
		}
		if b := fn.Status.Build; b.Phase != v1alpha1.BuildPhaseSucceeded || b.ToImage != rebased {
			t.Fatalf("status.build = %+v, want Succeeded with the rebased image", b)
		}
		if res.AfterPatch == nil {
			t.Fatal("no AfterPatch: the launch is forgotten before the status records it")
		}
		res.AfterPatch(patched)
	}
	observe(false) // the patch conflicted
	if launched, _, _ := r.Builds.Launcher.Launched(key, "b1"); !launched {
		t.Fatal("the launch was forgotten though no status recorded its outcome")
	}
	observe(true)
	if launched, _, _ := r.Builds.Launcher.Launched(key, "b1"); launched {
		t.Error("the launch is kept after a patch recorded its outcome")
	}
}

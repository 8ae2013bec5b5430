package function

import (
	"strings"
	"testing"

	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
)

// TestReconcile_RebuildRequestWhileSuspended: a suspended Function builds nothing, and a
// rebuild asked for meanwhile is refused once, with an Event that says why, not kept
// for when the Function is resumed.
func TestReconcile_RebuildRequestWhileSuspended(t *testing.T) {
	onFakeClient(t)
	for _, tt := range []struct {
		name        string
		request     string
		wantHandled string
		wantRefused int
	}{
		{name: "requested: refused", request: "now", wantHandled: "now", wantRefused: 1},
		{name: "nothing requested: nothing refused (the control)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ns := newNamespace(t)
			fn := newFunction(ns, "fn", v1alpha1.Repository{URL: "http://127.0.0.1:1/fn.git"})
			fn.Annotations = map[string]string{v1alpha1.AnnotationSuspend: "true"}
			if tt.request != "" {
				fn.Annotations[v1alpha1.AnnotationRebuildRequestedAt] = tt.request
			}
			mustCreate(t, fn)
			r, _ := newBuildReconciler(t)
			for range 2 { // the second reconcile refuses nothing again
				if _, err := reconcileOnce(t, r, ns, "fn"); err != nil {
					t.Fatal(err)
				}
			}
			got := getFunction(t, ns, "fn")
			if got.Status.LastHandledRebuildRequest != tt.wantHandled {
				t.Errorf("status.lastHandledRebuildRequest = %q, want %q", got.Status.LastHandledRebuildRequest, tt.wantHandled)
			}
			if c := got.Status.GetCondition(v1alpha1.FunctionConditionSuspended); c == nil || !c.IsTrue() {
				t.Errorf("Suspended = %+v, want True (the path ran)", c)
			}
			refused := 0
			for events := r.Recorder.(*record.FakeRecorder).Events; len(events) > 0; {
				if e := <-events; strings.Contains(e, "RebuildRequestRefused") && strings.Contains(e, "suspended") {
					refused++
				}
			}
			if refused != tt.wantRefused {
				t.Errorf("%d RebuildRequestRefused Events, want %d", refused, tt.wantRefused)
			}
			if r.Builds.Queue.IsRunning(client.ObjectKeyFromObject(fn)) {
				t.Error("a suspended Function holds a build slot")
			}
		})
	}
}

// TestReconcile_RebuildRequestWhenACheckStalls: a check that only a change can help (a
// missing Secret) refuses a pending request at once, with an Event, instead of
// building it whenever the change comes (Stalled shows the path ran).
func TestReconcile_RebuildRequestWhenACheckStalls(t *testing.T) {
	onFakeClient(t)
	ns := newNamespace(t)
	fn := newFunction(ns, "fn", v1alpha1.Repository{URL: "http://127.0.0.1:1/fn.git", AuthSecretRef: secretRef("missing")})
	fn.Annotations = map[string]string{v1alpha1.AnnotationRebuildRequestedAt: "now"}
	mustCreate(t, fn)
	r, _ := newBuildReconciler(t)
	if _, err := reconcileOnce(t, r, ns, "fn"); err != nil {
		t.Fatal(err)
	}
	got := getFunction(t, ns, "fn")
	if c := got.Status.GetCondition(v1alpha1.FunctionConditionStalled); c == nil || !c.IsTrue() || c.Reason != v1alpha1.ReasonAuthSecretNotFound {
		t.Fatalf("Stalled = %+v, want True, %s (the path ran)", c, v1alpha1.ReasonAuthSecretNotFound)
	}
	if got.Status.LastHandledRebuildRequest != "now" {
		t.Errorf("status.lastHandledRebuildRequest = %q, want the refused request's value", got.Status.LastHandledRebuildRequest)
	}
	refused := 0
	for events := r.Recorder.(*record.FakeRecorder).Events; len(events) > 0; {
		if e := <-events; strings.Contains(e, "RebuildRequestRefused") && strings.Contains(e, "missing") {
			refused++
		}
	}
	if refused != 1 {
		t.Errorf("%d RebuildRequestRefused Events naming the missing Secret, want 1", refused)
	}
}

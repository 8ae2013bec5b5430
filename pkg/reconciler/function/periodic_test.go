package function

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/git"
	"github.com/fnops/func-operator/test/gitserver"
)

// countingClient counts the status writes that go through it.
type countingClient struct {
	client.Client
	statusWrites atomic.Int32
}

func (c *countingClient) Status() client.SubResourceWriter {
	return &countingStatusWriter{SubResourceWriter: c.Client.Status(), n: &c.statusWrites}
}

type countingStatusWriter struct {
	client.SubResourceWriter
	n *atomic.Int32
}

func (w *countingStatusWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	w.n.Add(1)
	return w.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

func (w *countingStatusWriter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	w.n.Add(1)
	return w.SubResourceWriter.Update(ctx, obj, opts...)
}

func TestReconcile_PeriodicCheck(t *testing.T) {
	root := gitserver.NewRepoRoot(t)
	srv := gitserver.StartHTTP(t, root)
	repo := gitserver.CreateRepo(t, root, "periodic")
	first := repo.Commit(t, "main", map[string]string{"fns/a/func.yaml": funcYAML("a", "go")}, "first")

	ns := newNamespace(t)
	mustCreate(t, newFunction(ns, "a", v1alpha1.Repository{URL: srv.URL("periodic"), Branch: "main", Path: "fns/a"}))

	counting := &countingClient{Client: k8sClient}
	clock := testclock.NewFakePassiveClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	r, events := newTestReconciler(t, 10)
	r.Client, r.Clock = counting, clock
	r.Fetcher.(*git.Fetcher).Clock = clock
	r.wire()

	type counts struct{ lsRemotes, clones, statusWrites int }
	now := func() counts {
		return counts{srv.RefAdvertisements("periodic"), srv.UploadPacks("periodic"), int(counting.statusWrites.Load())}
	}
	reconcileOK := func() {
		t.Helper()
		if res, err := reconcileOnce(t, r, ns, "a"); err != nil || res.RequeueAfter <= 0 {
			t.Fatalf("Reconcile = (%+v, %v), want a requeue after the check interval", res, err)
		}
	}

	// First reconcile: one ls-remote, one clone, one status write.
	reconcileOK()
	if got, want := now(), (counts{lsRemotes: 2, clones: 1, statusWrites: 1}); got != want {
		// A clone advertises refs too: ls-remote + clone = 2 advertisements.
		t.Fatalf("after the first reconcile: %+v, want %+v", got, want)
	}
	fn := getFunction(t, ns, "a")
	if fn.Status.Git == nil || fn.Status.Git.ObservedCommit != first || !fn.Status.Git.LastChecked.Time.Equal(clock.Now()) {
		t.Fatalf("status.git = %+v, want commit %s checked at %s", fn.Status.Git, first, clock.Now())
	}
	rv := fn.ResourceVersion

	// Periodic checks that find the same commit: one ls-remote each, nothing else.
	for i := 1; i <= 3; i++ {
		clock.SetTime(clock.Now().Add(time.Hour))
		reconcileOK()
		if got, want := now(), (counts{lsRemotes: 2 + i, clones: 1, statusWrites: 1}); got != want {
			t.Fatalf("after %d unchanged checks: %+v, want %+v", i, got, want)
		}
	}
	if got := getFunction(t, ns, "a"); got.ResourceVersion != rv {
		t.Errorf("resourceVersion moved from %s to %s though nothing changed", rv, got.ResourceVersion)
	}

	// Backdate every transition time, to see which ones the next write moves.
	past := apis.VolatileTime{Inner: metav1.NewTime(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC))}
	fn = getFunction(t, ns, "a")
	for i := range fn.Status.Conditions {
		fn.Status.Conditions[i].LastTransitionTime = past
	}
	if err := k8sClient.Status().Update(context.Background(), fn); err != nil {
		t.Fatal(err)
	}

	// A new commit: the next check clones once and records it.
	second := repo.Commit(t, "main", map[string]string{"fns/a/func.yaml": funcYAML("a", "python")}, "second")
	clock.SetTime(clock.Now().Add(time.Hour))
	reconcileOK()
	if got, want := now(), (counts{lsRemotes: 7, clones: 2, statusWrites: 2}); got != want {
		t.Fatalf("after a new commit: %+v, want %+v", got, want)
	}
	fn = getFunction(t, ns, "a")
	// SourceReady changed (its message names the commit); Ready and Deployed did not.
	for ty, wantMoved := range map[apis.ConditionType]bool{
		v1alpha1.FunctionConditionSourceReady: true,
		apis.ConditionReady:                   false,
		v1alpha1.FunctionConditionDeployed:    false,
	} {
		c := fn.Status.GetCondition(ty)
		if moved := !c.LastTransitionTime.Inner.Equal(&past.Inner); moved != wantMoved {
			t.Errorf("%s lastTransitionTime = %s, want moved = %t", ty, c.LastTransitionTime.Inner, wantMoved)
		}
	}
	if fn.Status.Git.ObservedCommit != second || !fn.Status.Git.LastChecked.Time.Equal(clock.Now()) {
		t.Errorf("status.git = %+v, want commit %s checked at %s", fn.Status.Git, second, clock.Now())
	}
	if fn.Status.Deployment.Runtime != "python" {
		t.Errorf("runtime = %q, want python from the new commit", fn.Status.Deployment.Runtime)
	}
	var sourceEvents, readyEvents []string
	for len(events.Events) > 0 {
		switch e := <-events.Events; {
		case strings.HasPrefix(e, "Normal SourceReady "):
			sourceEvents = append(sourceEvents, e)
		default:
			readyEvents = append(readyEvents, e)
		}
	}
	if len(sourceEvents) != 2 || !strings.Contains(sourceEvents[1], second[:12]) {
		t.Errorf("events = %q, want one SourceReady event per observed commit", sourceEvents)
	}
	// What holds Ready False (nothing deployed) is told once, not at every check.
	if len(readyEvents) != 1 || !strings.HasPrefix(readyEvents[0], "Warning "+v1alpha1.ReasonNotDeployed+" ") {
		t.Errorf("other events = %q, want one Warning %s", readyEvents, v1alpha1.ReasonNotDeployed)
	}

	// Another Function on the same commit and path is served from the cache.
	ns2 := newNamespace(t)
	mustCreate(t, newFunction(ns2, "a", v1alpha1.Repository{URL: srv.URL("periodic"), Path: "fns/a"}))
	if _, err := reconcileOnce(t, r, ns2, "a"); err != nil {
		t.Fatal(err)
	}
	if got := srv.UploadPacks("periodic"); got != 2 {
		t.Errorf("clones = %d after a second Function on a cached commit, want 2", got)
	}
	if c := getFunction(t, ns2, "a").Status.GetCondition(v1alpha1.FunctionConditionSourceReady); c == nil || !c.IsTrue() {
		t.Errorf("SourceReady of the second Function = %+v, want True", c)
	}

	// A restarted operator (empty cache) trusts the status: no clone, no write.
	restarted := &countingClient{Client: k8sClient}
	r2, _ := newTestReconciler(t, 10)
	r2.Client = restarted
	r2.wire()
	if _, err := reconcileOnce(t, r2, ns, "a"); err != nil {
		t.Fatal(err)
	}
	if got := srv.UploadPacks("periodic"); got != 2 || restarted.statusWrites.Load() != 0 {
		t.Errorf("after a restart: clones = %d, status writes = %d; want 2 and 0", got, restarted.statusWrites.Load())
	}
}

func TestReconcile_SpecChange(t *testing.T) {
	root := gitserver.NewRepoRoot(t)
	srv := gitserver.StartHTTP(t, root)
	repo := gitserver.CreateRepo(t, root, "mono")
	repo.Commit(t, "main", map[string]string{
		"one/func.yaml": funcYAML("one", "go"),
		"two/func.yaml": funcYAML("two", "typescript"),
	}, "two functions")

	ns := newNamespace(t)
	mustCreate(t, newFunction(ns, "f", v1alpha1.Repository{URL: srv.URL("mono"), Path: "one"}))
	r, _ := newTestReconciler(t, 10)
	if _, err := reconcileOnce(t, r, ns, "f"); err != nil {
		t.Fatal(err)
	}
	fn := getFunction(t, ns, "f")
	fn.Spec.Repository.Path = "two"
	if err := k8sClient.Update(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
	if _, err := reconcileOnce(t, r, ns, "f"); err != nil {
		t.Fatal(err)
	}
	got := getFunction(t, ns, "f")
	if got.Status.Name != "two" || got.Status.Deployment.Runtime != "typescript" || got.Status.ObservedGeneration != got.Generation {
		t.Errorf("after the path changed: name %q, runtime %q, observedGeneration %d (generation %d); want two, typescript, equal",
			got.Status.Name, got.Status.Deployment.Runtime, got.Status.ObservedGeneration, got.Generation)
	}
	// The new path is read (name two, typescript: above) from the commit the first
	// read fetched: one transfer per commit, whatever directory (issue 27).
	if srv.UploadPacks("mono") != 1 {
		t.Errorf("clones = %d, want 1: a new path at the same commit is read from the commit already fetched", srv.UploadPacks("mono"))
	}
}

func TestReconcile_FunctionDeletedWhileReconciled(t *testing.T) {
	root := gitserver.NewRepoRoot(t)
	srv := gitserver.StartHTTP(t, root)
	repo := gitserver.CreateRepo(t, root, "gone")
	repo.Commit(t, "main", map[string]string{"func.yaml": funcYAML("gone", "go")}, "first")

	ns := newNamespace(t)
	fn := newFunction(ns, "gone", v1alpha1.Repository{URL: srv.URL("gone")})
	mustCreate(t, fn)
	r, _ := newTestReconciler(t, 10)
	// The Function disappears between the read and the status write.
	r.Client = &deletingClient{Client: k8sClient}
	r.wire()
	if _, err := reconcileOnce(t, r, ns, "gone"); err != nil {
		t.Errorf("Reconcile of a Function deleted mid-way = %v, want no error", err)
	}
}

// deletingClient deletes the object it is asked to patch the status of, first.
type deletingClient struct{ client.Client }

func (c *deletingClient) Status() client.SubResourceWriter {
	return &deletingStatusWriter{SubResourceWriter: c.Client.Status(), c: c.Client}
}

type deletingStatusWriter struct {
	client.SubResourceWriter
	c client.Client
}

func (w *deletingStatusWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if err := w.c.Delete(ctx, obj); err != nil {
		return err
	}
	return w.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

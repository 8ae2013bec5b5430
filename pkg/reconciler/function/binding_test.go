package function

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"knative.dev/pkg/apis"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/knative"
	"github.com/fnops/func-operator/test/gitserver"
	"github.com/fnops/func-operator/test/registrytest"
)

// bindingFixture is a repository whose func.yaml names function "hello", an outdated
// image of it in a registry, and a Reconciler that can rebuild.
type bindingFixture struct {
	url, image string
}

func newBindingFixture(t *testing.T) bindingFixture {
	t.Helper()
	return newBindingFixtureWith(t, "")
}

// newBindingFixtureWith is newBindingFixture with extra lines in func.yaml.
func newBindingFixtureWith(t *testing.T, extra string) bindingFixture {
	t.Helper()
	reg := registrytest.Start(t)
	image := reg.Push(t, "fns/hello", "") // no middleware label: counts as outdated
	root := gitserver.NewRepoRoot(t)
	srv := gitserver.StartHTTP(t, root)
	gitserver.CreateRepo(t, root, "fn").Commit(t, "main", map[string]string{
		"func.yaml": funcYAML("hello", "go") + "registry: " + reg.Host + "/fns\n" + extra,
	}, "hello")
	return bindingFixture{url: srv.URL("fn"), image: image}
}

// service creates Knative Service "hello", ready, running f.image; funcLabel puts the
// label func's deployer writes.
func (f bindingFixture) service(t *testing.T, ns string, funcLabel bool) *servingv1.Service {
	t.Helper()
	knativeService{ready: &apis.Condition{Type: apis.ConditionReady, Status: corev1.ConditionTrue},
		readyRevision: "hello-00001", revisionDigest: f.image}.create(t, ns)
	svc := &servingv1.Service{}
	if err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "hello"}, svc); err != nil {
		t.Fatal(err)
	}
	if !funcLabel {
		delete(svc.Labels, knative.FunctionNameLabel)
		if err := k8sClient.Update(context.Background(), svc); err != nil {
			t.Fatal(err)
		}
	}
	return svc
}

// TestReconcile_TakeoverAttempt: a Function whose func.yaml names a Knative Service
// that func did not deploy for it (the measured takeover of a Service "payments")
// describes, inspects and rebuilds nothing, and changes no ServiceAccount or binding.
func TestReconcile_TakeoverAttempt(t *testing.T) {
	f := newBindingFixture(t)
	for _, tt := range []struct {
		name       string
		funcLabel  bool
		wantLaunch bool
		wantReason string
	}{
		{name: "a Service func did not deploy: left alone", wantReason: v1alpha1.ReasonServiceNotFromFunc},
		// The positive control: the same with the label func's deployer writes rebuilds.
		{name: "the Service func deployed for the function: rebuilt", funcLabel: true, wantLaunch: true, wantReason: v1alpha1.ReasonRebuilding},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ns := newNamespace(t)
			f.service(t, ns, tt.funcLabel)
			mustCreate(t, newFunction(ns, "attacker", v1alpha1.Repository{URL: f.url}))
			r, rec := newBuildReconciler(t)
			cfg := r.Config.Load()
			cfg.BuilderImages = map[string]string{"pack/go": "builder:pinned"}
			r.Config.Set(cfg)
			for i := 0; i < 2; i++ {
				if _, err := reconcileOnce(t, r, ns, "attacker"); err != nil {
					t.Fatalf("Reconcile %d: %v", i, err)
				}
				r.Builds.Launcher.Wait()
			}
			got := getFunction(t, ns, "attacker")
			c := got.Status.GetCondition(v1alpha1.FunctionConditionDeployed)
			if tt.wantLaunch {
				c = got.Status.GetCondition(v1alpha1.FunctionConditionMiddlewareUpToDate)
			}
			if c == nil || c.Reason != tt.wantReason {
				t.Fatalf("condition = %+v, want reason %s", c, tt.wantReason)
			}
			if n := len(rec.requests()); (n == 1) != tt.wantLaunch || n > 1 {
				t.Errorf("%d builds launched, want launch %t", n, tt.wantLaunch)
			}
			if tt.wantLaunch {
				return
			}
			sa := &corev1.ServiceAccount{}
			saErr := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "default"}, sa)
			if saErr == nil && len(sa.ImagePullSecrets) > 0 {
				t.Errorf("ServiceAccount default got image pull Secrets %v", sa.ImagePullSecrets)
			}
			if got.Status.Service != nil || got.Status.Deployment.Image != "" {
				t.Errorf("status describes the Service it may not touch: service %+v, image %q", got.Status.Service, got.Status.Deployment.Image)
			}
			if s := got.Status.GetCondition(v1alpha1.FunctionConditionStalled); s == nil || !s.IsTrue() || s.Reason != v1alpha1.ReasonServiceNotFromFunc {
				t.Errorf("Stalled = %+v, want True %s", s, v1alpha1.ReasonServiceNotFromFunc)
			}
		})
	}
}

// TestReconcile_FunctionNameConflict: two Functions whose func.yaml name one function.
// The first to claim it is bound to what func deployed (the UID in its status: the
// Knative Service's, or the raw Deployment's); the second gets its own reason and
// creates nothing, until the first is deleted.
func TestReconcile_FunctionNameConflict(t *testing.T) {
	for _, deployer := range []string{"knative", "raw"} {
		t.Run(deployer, func(t *testing.T) { testFunctionNameConflict(t, deployer) })
	}
}

func testFunctionNameConflict(t *testing.T, deployer string) {
	var (
		f   bindingFixture
		ns  = newNamespace(t)
		uid types.UID
	)
	if deployer == "raw" {
		f = newBindingFixtureWith(t, "deployer: raw\n")
		rawWorkload{image: f.image}.create(t, ns)
		d := &appsv1.Deployment{}
		if err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "hello"}, d); err != nil {
			t.Fatal(err)
		}
		uid = d.UID
	} else {
		f = newBindingFixture(t)
		uid = f.service(t, ns, true).UID
	}
	mustCreate(t, newFunction(ns, "first", v1alpha1.Repository{URL: f.url}))
	r, rec := newBuildReconciler(t)
	cfg := r.Config.Load()
	cfg.MaxConcurrentBuilds = 0 // the first stays queued: only binding is under test
	r.Config.Set(cfg)

	if _, err := reconcileOnce(t, r, ns, "first"); err != nil {
		t.Fatal(err)
	}
	first := getFunction(t, ns, "first")
	if first.Status.Service == nil || first.Status.Service.UID != uid {
		t.Fatalf("first: status.service = %+v, want bound to UID %s", first.Status.Service, uid)
	}

	time.Sleep(time.Second) // a later creationTimestamp (seconds)
	mustCreate(t, newFunction(ns, "second", v1alpha1.Repository{URL: f.url}))
	if _, err := reconcileOnce(t, r, ns, "second"); err != nil {
		t.Fatal(err)
	}
	second := getFunction(t, ns, "second")
	c := second.Status.GetCondition(v1alpha1.FunctionConditionDeployed)
	if c == nil || c.Reason != v1alpha1.ReasonFunctionNameConflict {
		t.Fatalf("second: Deployed = %+v, want %s", c, v1alpha1.ReasonFunctionNameConflict)
	}
	if second.Status.Service != nil || second.Status.Build != nil {
		t.Errorf("second: status.service %+v, status.build %+v; want neither", second.Status.Service, second.Status.Build)
	}
	// The first is still bound, and queued: the second did not take its place.
	if _, err := reconcileOnce(t, r, ns, "first"); err != nil {
		t.Fatal(err)
	}
	if got := getFunction(t, ns, "first"); got.Status.Service == nil || got.Status.Service.UID != uid ||
		got.Status.GetCondition(v1alpha1.FunctionConditionMiddlewareUpToDate).Reason != v1alpha1.ReasonRebuildQueued {
		t.Errorf("first after the second's reconcile: service %+v, MiddlewareUpToDate %+v", got.Status.Service,
			got.Status.GetCondition(v1alpha1.FunctionConditionMiddlewareUpToDate))
	}

	// Once the first is gone, the second is bound.
	if err := k8sClient.Delete(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	if _, err := reconcileOnce(t, r, ns, "second"); err != nil {
		t.Fatal(err)
	}
	second = getFunction(t, ns, "second")
	if second.Status.Service == nil || second.Status.Service.UID != uid {
		t.Errorf("second after the first's deletion: status.service = %+v, want bound to UID %s", second.Status.Service, uid)
	}
	if n := len(rec.requests()); n != 0 {
		t.Errorf("%d builds launched with a budget of 0", n)
	}
}

// TestReconcile_UnboundLeavesQueue: a queued Function whose Service stops being its
// own (the label removed, as a tenant could) gives its place in the fleet queue up.
func TestReconcile_UnboundLeavesQueue(t *testing.T) {
	f := newBindingFixture(t)
	ns := newNamespace(t)
	svc := f.service(t, ns, true)
	mustCreate(t, newFunction(ns, "fn", v1alpha1.Repository{URL: f.url}))
	r, _ := newBuildReconciler(t)
	cfg := r.Config.Load()
	cfg.MaxConcurrentBuilds = 0
	r.Config.Set(cfg)
	key := types.NamespacedName{Namespace: ns, Name: "fn"}
	if _, err := reconcileOnce(t, r, ns, "fn"); err != nil {
		t.Fatal(err)
	}
	if b := getFunction(t, ns, "fn").Status.Build; b == nil || b.Phase != v1alpha1.BuildPhaseQueued || !r.Builds.Queue.IsWaiting(key) {
		t.Fatalf("positive control: status.build = %+v, waiting %t; want Queued and waiting", b, r.Builds.Queue.IsWaiting(key))
	}
	delete(svc.Labels, knative.FunctionNameLabel)
	if err := k8sClient.Update(context.Background(), svc); err != nil {
		t.Fatal(err)
	}
	if _, err := reconcileOnce(t, r, ns, "fn"); err != nil {
		t.Fatal(err)
	}
	got := getFunction(t, ns, "fn")
	if got.Status.Build != nil || r.Builds.Queue.IsWaiting(key) {
		t.Errorf("status.build = %+v, waiting %t; want neither once the Service is not the Function's", got.Status.Build, r.Builds.Queue.IsWaiting(key))
	}
	if c := got.Status.GetCondition(v1alpha1.FunctionConditionDeployed); c.Reason != v1alpha1.ReasonServiceNotFromFunc {
		t.Errorf("Deployed = %+v, want %s", c, v1alpha1.ReasonServiceNotFromFunc)
	}
}

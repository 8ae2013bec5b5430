package function

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/google/go-containerregistry/pkg/authn"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/registry"
)

// fakeInspector answers Inspect with a fixed result, and records the reference.
type fakeInspector struct {
	got registry.Middleware
	err error
	ref string
	// base answers Base (the zero BaseImage, and errNoBase, when unset).
	base *registry.BaseImage
}

func (f *fakeInspector) Inspect(_ context.Context, ref string, _ authn.Keychain) (registry.Middleware, error) {
	f.ref = ref
	return f.got, f.err
}

var errNoBase = errors.New("fakeInspector: no base image in this test")

func (f *fakeInspector) Base(context.Context, string, authn.Keychain) (registry.BaseImage, error) {
	if f.base == nil {
		return registry.BaseImage{}, errNoBase
	}
	return *f.base, nil
}

func TestReconciler_reconcileMiddleware(t *testing.T) {
	onFakeClient(t)
	goPin, err := funclib.AvailableMiddleware("go", "http")
	if err != nil {
		t.Fatal(err)
	}
	nodePin, err := funclib.AvailableMiddleware("node", "http")
	if err != nil {
		t.Fatal(err)
	}
	const image = "registry.invalid/fns/hello@sha256:0123"
	off := false
	tests := []struct {
		name        string
		runtime     string
		current     *v1alpha1.MiddlewareStatus // status.middleware before the step
		autoUpdate  *bool
		cfg         func(*config.Config)
		registryRef string // spec.registry.authSecretRef, without a Secret
		inspect     fakeInspector
		want        outcome
		wantVerdict middlewareVerdict
	}{{
		name:        "up to date",
		runtime:     "go",
		inspect:     fakeInspector{got: registry.Middleware{Version: goPin.Version, Source: registry.SourceLabel}},
		want:        outcome{Condition: "True/UpToDate/"},
		wantVerdict: middlewareVerdict{current: goPin.Version, available: goPin.Version},
	}, {
		name:        "outdated, auto-update on: a rebuild is due, and it gates Ready",
		runtime:     "go",
		inspect:     fakeInspector{got: registry.Middleware{Version: "v0.1.0", Source: registry.SourceLabel}},
		want:        outcome{Condition: "False/MiddlewareOutdated/"},
		wantVerdict: middlewareVerdict{current: "v0.1.0", available: goPin.Version, rebuildDue: true},
	}, {
		name:        "outdated, auto-update off: False, severity Info, no rebuild",
		runtime:     "go",
		autoUpdate:  &off,
		inspect:     fakeInspector{got: registry.Middleware{Version: "v0.1.0", Source: registry.SourceLabel}},
		want:        outcome{Condition: "False/AutoUpdateDisabled/Info"},
		wantVerdict: middlewareVerdict{current: "v0.1.0", available: goPin.Version},
	}, {
		name:        "unknown middleware, policy UpToDate",
		runtime:     "go",
		cfg:         func(c *config.Config) { c.UnknownMiddlewarePolicy = config.UnknownMiddlewareUpToDate },
		inspect:     fakeInspector{},
		want:        outcome{Condition: "True/UpToDate/"},
		wantVerdict: middlewareVerdict{available: goPin.Version},
	}, {
		name:    "registry unreachable: transient",
		runtime: "go",
		inspect: fakeInspector{err: &registry.UnreachableError{Ref: image, Registry: "registry.invalid", Err: errors.New("connection refused")}},
		want:    outcome{Kind: "transient", Reason: v1alpha1.ReasonRegistryUnreachable, Condition: "Unknown/RegistryUnreachable/"},
	}, {
		name:    "registry refuses the credentials: stalls until they change",
		runtime: "go",
		inspect: fakeInspector{err: &registry.AuthError{Ref: image, Registry: "registry.invalid", StatusCode: 401, Err: errors.New("401")}},
		want:    outcome{Kind: "stalling", Reason: v1alpha1.ReasonRegistryAuthFailed, Condition: "Unknown/RegistryAuthFailed/"},
	}, {
		name:    "image not found: stalls",
		runtime: "go",
		inspect: fakeInspector{err: &registry.InspectError{Ref: image, Reason: registry.ReasonNotFound, StatusCode: 404, Err: errors.New("404")}},
		want:    outcome{Kind: "stalling", Reason: v1alpha1.ReasonImageNotFound, Condition: "Unknown/ImageNotFound/"},
	}, {
		name:    "malformed image: stalls",
		runtime: "go",
		inspect: fakeInspector{err: &registry.InspectError{Ref: image, Reason: registry.ReasonBadManifest, Err: errors.New("bad")}},
		want:    outcome{Kind: "stalling", Reason: v1alpha1.ReasonImageInspectFailed, Condition: "Unknown/ImageInspectFailed/"},
	}, {
		name:        "registry Secret missing: stalls before any registry call",
		runtime:     "go",
		registryRef: "regcred",
		want:        outcome{Kind: "stalling", Reason: v1alpha1.ReasonRegistryAuthSecretNotFound, Condition: "Unknown/RegistryAuthSecretNotFound/"},
	}, {
		name:        "node: older middleware in the function's source: False, severity Info",
		runtime:     "node",
		current:     &v1alpha1.MiddlewareStatus{Current: "^2.3.0", CurrentSource: v1alpha1.MiddlewareSourceSource},
		want:        outcome{Condition: "False/SourceManagedMiddleware/Info"},
		wantVerdict: middlewareVerdict{current: "^2.3.0", available: nodePin.Version},
	}, {
		name:        "node: the source pins the template's version",
		runtime:     "node",
		current:     &v1alpha1.MiddlewareStatus{Current: nodePin.Version, CurrentSource: v1alpha1.MiddlewareSourceSource},
		want:        outcome{Condition: "True/SourceManagedMiddleware/"},
		wantVerdict: middlewareVerdict{current: nodePin.Version, available: nodePin.Version},
	}, {
		name:        "node: no version in the source: Unknown, severity Info",
		runtime:     "node",
		want:        outcome{Condition: "Unknown/SourceManagedMiddleware/Info"},
		wantVerdict: middlewareVerdict{available: nodePin.Version},
	}, {
		name:    "runtime func has no template for: stalls",
		runtime: "cobol",
		want:    outcome{Kind: "stalling", Reason: v1alpha1.ReasonUnsupportedRuntime, Condition: "Unknown/UnsupportedRuntime/"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := newTestReconciler(t, 10)
			if tt.cfg != nil {
				c := r.Config.Load()
				tt.cfg(&c)
				r.Config.Set(c)
			}
			inspector := tt.inspect
			r.Inspector = &inspector
			r.wire()
			fn := &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: newNamespace(t), Name: "fn"}}
			fn.Spec.AutoUpdateMiddleware = tt.autoUpdate
			if tt.registryRef != "" {
				fn.Spec.Registry.AuthSecretRef = &corev1.LocalObjectReference{Name: tt.registryRef}
			}
			fn.Status.InitializeConditions()
			fn.Status.Middleware = tt.current
			fn.Status.Deployment = &v1alpha1.DeploymentStatus{Runtime: tt.runtime, Invoke: "http", Image: image}
			obs := &observation{
				source:     sourceArtifact{name: "hello", runtime: tt.runtime, invoke: "http"},
				deployment: deployment{image: image},
			}

			res, err := r.reconcileMiddleware(context.Background(), fn, obs)

			if diff := cmp.Diff(tt.want, outcomeOf(err, fn, v1alpha1.FunctionConditionMiddlewareUpToDate)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s\nerror: %v", diff, err)
			}
			if diff := cmp.Diff(tt.wantVerdict, obs.middleware, cmp.AllowUnexported(middlewareVerdict{}),
				cmpopts.IgnoreFields(middlewareVerdict{}, "from")); diff != "" { // from: TestDecideRebuildFrom
				t.Errorf("obs.middleware (-want +got):\n%s", diff)
			}
			if res.RequeueAfter != 0 || res.AfterPatch != nil {
				t.Errorf("Result = %+v, want none", res)
			}
			if inspected := inspector.ref != ""; inspected && inspector.ref != image {
				t.Errorf("inspected %q, want obs.deployment.image %q", inspector.ref, image)
			}
			if err == nil && fn.Status.Middleware.PendingRebuild != tt.wantVerdict.rebuildDue {
				t.Errorf("status.middleware.pendingRebuild = %t, want %t", fn.Status.Middleware.PendingRebuild, tt.wantVerdict.rebuildDue)
			}
		})
	}
}

// slowInspector is a registry that answers only when the caller gives up.
type slowInspector struct{ waited bool }

func (s *slowInspector) Inspect(ctx context.Context, ref string, _ authn.Keychain) (registry.Middleware, error) {
	<-ctx.Done()
	s.waited = true
	return registry.Middleware{}, &registry.UnreachableError{Ref: ref, Registry: "registry.invalid", Err: ctx.Err()}
}

func (s *slowInspector) Base(ctx context.Context, ref string, _ authn.Keychain) (registry.BaseImage, error) {
	<-ctx.Done()
	return registry.BaseImage{}, &registry.UnreachableError{Ref: ref, Registry: "registry.invalid", Err: ctx.Err()}
}

// TestReconciler_reconcileMiddleware_lastKnownGood: a registry that does not let a
// decided function's image be read (down, slower than registryTimeout, or refusing
// credentials it took before) leaves the verdict, and Ready, as they were, and shows
// it in RegistryReachable; a function without a verdict shows the error at once.
func TestReconciler_reconcileMiddleware_lastKnownGood(t *testing.T) {
	onFakeClient(t)
	goPin, err := funclib.AvailableMiddleware("go", "http")
	if err != nil {
		t.Fatal(err)
	}
	const image = "registry.invalid/fns/hello@sha256:0123"
	down := &registry.UnreachableError{Ref: image, Registry: "registry.invalid", StatusCode: 503, Err: errors.New("503")}
	refused := &registry.AuthError{Ref: image, Registry: "registry.invalid", StatusCode: 401, Err: errors.New("401")}
	noCredentials := &registry.AuthError{Ref: image, Registry: "registry.invalid", Err: errors.New("no keychain")}
	tests := []struct {
		name    string
		decided bool
		// verdictOf is the image the verdict was read from; the running image when empty.
		verdictOf string
		// readWith is the credentials the verdict was read with (anonymous when empty).
		readWith      string
		inspector     ImageInspector
		want          outcome
		wantReachable string
	}{{
		name:          "positive control: the registry answers",
		decided:       true,
		inspector:     &fakeInspector{got: registry.Middleware{Version: goPin.Version, Source: registry.SourceLabel}},
		want:          outcome{Condition: "True/UpToDate/"},
		wantReachable: "True/Reachable/",
	}, {
		name:          "down: the verdict stands",
		decided:       true,
		inspector:     &fakeInspector{err: down},
		want:          outcome{Kind: "waiting", Reason: v1alpha1.ReasonRegistryUnreachable, Condition: "True/UpToDate/"},
		wantReachable: "False/RegistryUnreachable/Warning",
	}, {
		name:          "slower than registryTimeout: the verdict stands",
		decided:       true,
		inspector:     &slowInspector{},
		want:          outcome{Kind: "waiting", Reason: v1alpha1.ReasonRegistryUnreachable, Condition: "True/UpToDate/"},
		wantReachable: "False/RegistryUnreachable/Warning",
	}, {
		name:          "401 for credentials that read the image before: the verdict stands",
		decided:       true,
		inspector:     &fakeInspector{err: refused},
		want:          outcome{Kind: "waiting", Reason: v1alpha1.ReasonRegistryAuthFailed, Condition: "True/UpToDate/"},
		wantReachable: "False/RegistryAuthFailed/Warning",
	}, {
		name:      "401 for an image other than the verdict's (a new image, a typo): shown at once",
		decided:   true,
		verdictOf: "registry.invalid/fns/hello@sha256:4567",
		inspector: &fakeInspector{err: refused},
		want:      outcome{Kind: "stalling", Reason: v1alpha1.ReasonRegistryAuthFailed, Condition: "Unknown/RegistryAuthFailed/"},
		// RegistryReachable says it too.
		wantReachable: "False/RegistryAuthFailed/Warning",
	}, {
		name:      "401 after the credentials the verdict was read with changed (an edited Secret): shown at once",
		decided:   true,
		readWith:  "secret/regcred@41",
		inspector: &fakeInspector{err: refused},
		want:      outcome{Kind: "stalling", Reason: v1alpha1.ReasonRegistryAuthFailed, Condition: "Unknown/RegistryAuthFailed/"},
		// RegistryReachable says it too.
		wantReachable: "False/RegistryAuthFailed/Warning",
	}, {
		name:          "503 for an image other than the verdict's: an outage all the same",
		decided:       true,
		verdictOf:     "registry.invalid/fns/hello@sha256:4567",
		inspector:     &fakeInspector{err: down},
		want:          outcome{Kind: "waiting", Reason: v1alpha1.ReasonRegistryUnreachable, Condition: "True/UpToDate/"},
		wantReachable: "False/RegistryUnreachable/Warning",
	}, {
		name:          "401 with no verdict yet: shown at once",
		inspector:     &fakeInspector{err: refused},
		want:          outcome{Kind: "stalling", Reason: v1alpha1.ReasonRegistryAuthFailed, Condition: "Unknown/RegistryAuthFailed/"},
		wantReachable: "False/RegistryAuthFailed/Warning",
	}, {
		name:      "no credentials at all is not an outage: shown at once",
		decided:   true,
		inspector: &fakeInspector{err: noCredentials},
		want:      outcome{Kind: "stalling", Reason: v1alpha1.ReasonRegistryAuthFailed, Condition: "Unknown/RegistryAuthFailed/"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := newTestReconciler(t, 10)
			c := r.Config.Load()
			c.RegistryTimeout = 50 * time.Millisecond
			r.Config.Set(c)
			r.Inspector = tt.inspector
			r.wire()
			fn := &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: newNamespace(t), Name: "fn"}}
			fn.Status.InitializeConditions()
			fn.Status.Middleware = &v1alpha1.MiddlewareStatus{}
			if tt.decided {
				fn.Status.Middleware.Current, fn.Status.Middleware.Image = goPin.Version, image
				if tt.verdictOf != "" {
					fn.Status.Middleware.Image = tt.verdictOf
				}
				fn.Status.Middleware.ReadWith = tt.readWith
				fn.Status.MarkMiddlewareUpToDate("up to date")
			}
			fn.Status.Deployment = &v1alpha1.DeploymentStatus{Runtime: "go", Invoke: "http", Image: image}
			obs := &observation{
				source:     sourceArtifact{name: "hello", runtime: "go", invoke: "http"},
				deployment: deployment{image: image},
			}

			_, err := r.reconcileMiddleware(context.Background(), fn, obs)

			if diff := cmp.Diff(tt.want, outcomeOf(err, fn, v1alpha1.FunctionConditionMiddlewareUpToDate)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s\nerror: %v", diff, err)
			}
			got := ""
			if cond := fn.Status.GetCondition(v1alpha1.FunctionConditionRegistryReachable); cond != nil {
				got = string(cond.Status) + "/" + cond.Reason + "/" + string(cond.Severity)
			}
			if got != tt.wantReachable {
				t.Errorf("RegistryReachable = %q, want %q", got, tt.wantReachable)
			}
			if s, ok := tt.inspector.(*slowInspector); ok && !s.waited {
				t.Error("the slow registry was not waited for")
			}
			if err == nil && fn.Status.Middleware.Image != image {
				t.Errorf("status.middleware.image = %q, want the image read, %q", fn.Status.Middleware.Image, image)
			}
		})
	}
}

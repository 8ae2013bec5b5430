package function

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"knative.dev/pkg/apis"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/test/gitserver"
	"github.com/fnops/func-operator/test/registrytest"
)

func TestReconcile_Middleware(t *testing.T) {
	pin, err := funclib.AvailableMiddleware("go", "http")
	if err != nil {
		t.Fatal(err)
	}
	nodePin, err := funclib.AvailableMiddleware("node", "http")
	if err != nil {
		t.Fatal(err)
	}
	reg := registrytest.Start(t)
	current := reg.Push(t, "fns/current", pin.Version)
	older := reg.Push(t, "fns/older", "v0.1.0")
	newer := reg.Push(t, "fns/newer", "v99.0.0")
	unlabelled := reg.Push(t, "fns/unlabelled", "")

	root := gitserver.NewRepoRoot(t)
	srv := gitserver.StartHTTP(t, root)
	goRepo := gitserver.CreateRepo(t, root, "gofn")
	goRepo.Commit(t, "main", map[string]string{"func.yaml": funcYAML("hello", "go")}, "go")
	nodeRepo := gitserver.CreateRepo(t, root, "nodefn")
	nodeRepo.Commit(t, "main", map[string]string{
		"func.yaml":    funcYAML("hello", "node"),
		"package.json": `{"name": "hello", "dependencies": {"faas-js-runtime": "^2.3.0"}}`,
	}, "node")

	on, off := true, false
	type want struct {
		status         corev1.ConditionStatus
		reason         string
		message        string // substring
		current        string
		currentSource  string
		pendingRebuild bool
		autoUpdate     v1alpha1.AutoUpdateStatus
		transient      bool
		// readyTrue: the condition does not gate Ready, which is True.
		readyTrue bool
	}
	operatorOn := v1alpha1.AutoUpdateStatus{Enabled: true, Source: "OperatorConfig"}
	tests := []struct {
		name     string
		repo     string
		image    string
		override *bool
		cfg      func(*config.Config)
		secret   *corev1.Secret // registry auth Secret; referenced when set
		ref      string         // registry.authSecretRef name without a Secret
		want     want
	}{{
		name: "up to date", repo: "gofn", image: current,
		want: want{status: corev1.ConditionTrue, reason: v1alpha1.ReasonUpToDate, current: pin.Version, currentSource: "label", autoUpdate: operatorOn},
	}, {
		name: "outdated: a rebuild is pending", repo: "gofn", image: older,
		want: want{status: corev1.ConditionFalse, reason: v1alpha1.ReasonMiddlewareOutdated, message: pin.Version + " is available (running: v0.1.0)",
			current: "v0.1.0", currentSource: "label", pendingRebuild: true, autoUpdate: operatorOn},
	}, {
		name: "an older available is no update", repo: "gofn", image: newer,
		want: want{status: corev1.ConditionTrue, reason: v1alpha1.ReasonUpToDate, current: "v99.0.0", currentSource: "label", autoUpdate: operatorOn},
	}, {
		name: "outdated, auto-update off on the Function", repo: "gofn", image: older, override: &off,
		want: want{status: corev1.ConditionFalse, reason: v1alpha1.ReasonAutoUpdateDisabled, message: "set by Function", readyTrue: true,
			current: "v0.1.0", currentSource: "label", autoUpdate: v1alpha1.AutoUpdateStatus{Enabled: false, Source: "Function"}},
	}, {
		name: "outdated, auto-update off in the operator config", repo: "gofn", image: older,
		cfg: func(c *config.Config) { c.AutoUpdateMiddleware = false },
		want: want{status: corev1.ConditionFalse, reason: v1alpha1.ReasonAutoUpdateDisabled, message: "set by OperatorConfig", readyTrue: true,
			current: "v0.1.0", currentSource: "label", autoUpdate: v1alpha1.AutoUpdateStatus{Enabled: false, Source: "OperatorConfig"}},
	}, {
		name: "the Function's setting wins over the operator's", repo: "gofn", image: older, override: &on,
		cfg: func(c *config.Config) { c.AutoUpdateMiddleware = false },
		want: want{status: corev1.ConditionFalse, reason: v1alpha1.ReasonMiddlewareOutdated,
			current: "v0.1.0", currentSource: "label", pendingRebuild: true, autoUpdate: v1alpha1.AutoUpdateStatus{Enabled: true, Source: "Function"}},
	}, {
		name: "unknown current counts as outdated by default", repo: "gofn", image: unlabelled,
		want: want{status: corev1.ConditionFalse, reason: v1alpha1.ReasonMiddlewareOutdated, message: "running: unknown", pendingRebuild: true, autoUpdate: operatorOn},
	}, {
		name: "unknown current as up to date by policy", repo: "gofn", image: unlabelled,
		cfg:  func(c *config.Config) { c.UnknownMiddlewarePolicy = config.UnknownMiddlewareUpToDate },
		want: want{status: corev1.ConditionTrue, reason: v1alpha1.ReasonUpToDate, autoUpdate: operatorOn},
	}, {
		name: "node: middleware in the user's source, which pins an older one", repo: "nodefn", image: older,
		want: want{status: corev1.ConditionFalse, reason: v1alpha1.ReasonSourceManagedMiddleware, readyTrue: true,
			message: "source, which pins faas-js-runtime ^2.3.0, older than " + nodePin.Version + " that func " + funclib.Version() + " templates pin: update it in the source", current: "^2.3.0", currentSource: "source", autoUpdate: operatorOn},
	}, {
		name: "registry Secret missing", repo: "gofn", image: current, ref: "regcred",
		want: want{status: corev1.ConditionUnknown, reason: v1alpha1.ReasonRegistryAuthSecretNotFound, message: `"regcred"`, autoUpdate: operatorOn},
	}, {
		name: "registry Secret of the wrong type", repo: "gofn", image: current,
		secret: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "regcred"}, Data: map[string][]byte{"token": []byte("x")}},
		want:   want{status: corev1.ConditionUnknown, reason: v1alpha1.ReasonRegistryAuthSecretInvalid, message: ".dockerconfigjson", autoUpdate: operatorOn},
	}, {
		name: "image not in the registry", repo: "gofn", image: reg.Host + "/fns/missing@sha256:" + strings.Repeat("0", 64),
		want: want{status: corev1.ConditionUnknown, reason: v1alpha1.ReasonImageNotFound, message: "not found in registry", autoUpdate: operatorOn},
	}, {
		name: "registry unreachable is retried with backoff", repo: "gofn", image: "127.0.0.1:1/fns/x@sha256:" + strings.Repeat("1", 64),
		want: want{status: corev1.ConditionUnknown, reason: v1alpha1.ReasonRegistryUnreachable, autoUpdate: operatorOn, transient: true},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ns := newNamespace(t)
			knativeService{ready: &apis.Condition{Type: apis.ConditionReady, Status: corev1.ConditionTrue},
				readyRevision: "hello-00001", revisionDigest: tc.image}.create(t, ns)
			fn := newFunction(ns, "fn", v1alpha1.Repository{URL: srv.URL(tc.repo)})
			fn.Spec.AutoUpdateMiddleware = tc.override
			if tc.secret != nil {
				tc.secret.Namespace = ns
				mustCreate(t, tc.secret)
				fn.Spec.Registry.AuthSecretRef = secretRef(tc.secret.Name)
			}
			if tc.ref != "" {
				fn.Spec.Registry.AuthSecretRef = secretRef(tc.ref)
			}
			mustCreate(t, fn)
			r, _ := newTestReconciler(t, 10)
			if tc.cfg != nil {
				c := r.Config.Load()
				tc.cfg(&c)
				r.Config.Set(c)
			}
			_, err := reconcileOnce(t, r, ns, "fn")
			if tc.want.transient != (err != nil) {
				t.Errorf("Reconcile error = %v, want transient = %t", err, tc.want.transient)
			}
			got := getFunction(t, ns, "fn")
			c := got.Status.GetCondition(v1alpha1.FunctionConditionMiddlewareUpToDate)
			t.Logf("MiddlewareUpToDate %s/%s: %s", c.Status, c.Reason, c.Message)
			if c == nil || c.Status != tc.want.status || c.Reason != tc.want.reason || !strings.Contains(c.Message, tc.want.message) {
				t.Fatalf("MiddlewareUpToDate = %+v, want %s/%s containing %q", c, tc.want.status, tc.want.reason, tc.want.message)
			}
			mw := got.Status.Middleware
			wantMW := &v1alpha1.MiddlewareStatus{
				Current: tc.want.current, CurrentSource: tc.want.currentSource, Available: pin.Version,
				AutoUpdate: &tc.want.autoUpdate, PendingRebuild: tc.want.pendingRebuild, FuncVersion: funclib.Version(),
			}
			if tc.repo == "nodefn" {
				wantMW.Available = nodePin.Version
			} else if got.Status.Deployment != nil {
				wantMW.Image = got.Status.Deployment.Image // the verdict was read from the running image
				// It names no commit: a rebuild would build the followed one.
				wantMW.RebuildFrom = &v1alpha1.RebuildFromStatus{Commit: got.Status.Git.ObservedCommit,
					Source: v1alpha1.RebuildFromFollowed, Policy: v1alpha1.RebuildCommitDeployed, PolicySource: v1alpha1.AutoUpdateSourceOperatorConfig}
				if tc.secret != nil {
					wantMW.ReadWith = "secret/" + tc.secret.Name + "@" + secretVersion(t, ns, tc.secret.Name)
				}
			}
			if diff := cmp.Diff(wantMW, mw); diff != "" && tc.want.status != corev1.ConditionUnknown {
				t.Errorf("status.middleware (-want +got):\n%s", diff)
			}
			ready := got.Status.GetCondition(apis.ConditionReady)
			if wantReady := tc.want.status == corev1.ConditionTrue || tc.want.readyTrue; wantReady != ready.IsTrue() {
				t.Errorf("Ready = %+v, want True %t: the function is deployed and ready; only middleware that gates Ready may hold it back", ready, wantReady)
			}
			if wantInfo := tc.want.readyTrue; wantInfo != (c.Severity == apis.ConditionSeverityInfo) {
				t.Errorf("MiddlewareUpToDate severity = %q, want Info %t", c.Severity, wantInfo)
			}
			if wantOutdated := tc.want.status == corev1.ConditionFalse; got.Status.MiddlewareOutdated() != wantOutdated {
				t.Errorf("MiddlewareOutdated() = %t, want %t", got.Status.MiddlewareOutdated(), wantOutdated)
			}
		})
	}
}

// TestReconciler_MiddlewareCachedByDigest shows an image digest is inspected once.
func TestReconcile_MiddlewareCachedByDigest(t *testing.T) {
	pin, err := funclib.AvailableMiddleware("go", "http")
	if err != nil {
		t.Fatal(err)
	}
	reg := registrytest.Start(t)
	image := reg.Push(t, "fns/cached", pin.Version)
	root := gitserver.NewRepoRoot(t)
	srv := gitserver.StartHTTP(t, root)
	repo := gitserver.CreateRepo(t, root, "gofn")
	repo.Commit(t, "main", map[string]string{"func.yaml": funcYAML("hello", "go")}, "go")

	ns := newNamespace(t)
	knativeService{ready: &apis.Condition{Type: apis.ConditionReady, Status: corev1.ConditionTrue},
		readyRevision: "hello-00001", revisionDigest: image}.create(t, ns)
	mustCreate(t, newFunction(ns, "fn", v1alpha1.Repository{URL: srv.URL("gofn")}))
	r, _ := newTestReconciler(t, 10)
	if _, err := reconcileOnce(t, r, ns, "fn"); err != nil {
		t.Fatal(err)
	}
	first := reg.Requests()
	if first == 0 {
		t.Fatal("the first reconcile did not read the registry")
	}
	for i := 0; i < 3; i++ {
		if _, err := reconcileOnce(t, r, ns, "fn"); err != nil {
			t.Fatal(err)
		}
	}
	if got := reg.Requests(); got != first {
		t.Errorf("registry requests went from %d to %d over 3 reconciles of the same digest, want no new request", first, got)
	}
	if c := getFunction(t, ns, "fn").Status.GetCondition(v1alpha1.FunctionConditionMiddlewareUpToDate); !c.IsTrue() {
		t.Errorf("MiddlewareUpToDate = %+v, want True", c)
	}
}

// TestReconciler_MiddlewarePrivateRegistry reads the image from a registry that needs
// the credentials of the Function's dockerconfigjson Secret.
func TestReconcile_MiddlewarePrivateRegistry(t *testing.T) {
	const password = "registry-pa55-7f3e"
	pin, err := funclib.AvailableMiddleware("go", "http")
	if err != nil {
		t.Fatal(err)
	}
	reg := registrytest.StartPrivate(t, "pusher", password)
	image := reg.Push(t, "team/hello", pin.Version)
	root := gitserver.NewRepoRoot(t)
	srv := gitserver.StartHTTP(t, root)
	gitserver.CreateRepo(t, root, "gofn").Commit(t, "main", map[string]string{"func.yaml": funcYAML("hello", "go")}, "go")

	for _, tc := range []struct {
		name       string
		secret     []byte // nil: no Secret referenced
		wantReason string
	}{
		{name: "with the Secret", secret: reg.DockerConfigJSON(), wantReason: v1alpha1.ReasonUpToDate},
		{name: "anonymous", wantReason: v1alpha1.ReasonRegistryAuthFailed},
		{name: "wrong password", secret: registrytest.StartPrivate(t, "pusher", "wrong-"+password).DockerConfigJSONFor(reg.Host),
			wantReason: v1alpha1.ReasonRegistryAuthFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := newNamespace(t)
			knativeService{ready: &apis.Condition{Type: apis.ConditionReady, Status: corev1.ConditionTrue},
				readyRevision: "hello-00001", revisionDigest: image}.create(t, ns)
			fn := newFunction(ns, "fn", v1alpha1.Repository{URL: srv.URL("gofn")})
			if tc.secret != nil {
				mustCreate(t, &corev1.Secret{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hello-registry-auth"},
					Type:       corev1.SecretTypeDockerConfigJson,
					Data:       map[string][]byte{corev1.DockerConfigJsonKey: tc.secret},
				})
				fn.Spec.Registry.AuthSecretRef = secretRef("hello-registry-auth")
			}
			mustCreate(t, fn)
			r, _ := newTestReconciler(t, 10)
			_, err := reconcileOnce(t, r, ns, "fn")
			got := getFunction(t, ns, "fn")
			c := got.Status.GetCondition(v1alpha1.FunctionConditionMiddlewareUpToDate)
			if c == nil || c.Reason != tc.wantReason {
				t.Fatalf("MiddlewareUpToDate = %+v, want reason %s", c, tc.wantReason)
			}
			if strings.Contains(c.Message, password) || (err != nil && strings.Contains(err.Error(), password)) {
				t.Errorf("the registry password shows in %q / %v", c.Message, err)
			}
			if c.IsTrue() {
				// The verdict names the credentials it was read with, never their value.
				want := "secret/hello-registry-auth@" + secretVersion(t, ns, "hello-registry-auth")
				if mw := got.Status.Middleware; mw.ReadWith != want {
					t.Errorf("status.middleware.readWith = %q, want %q", mw.ReadWith, want)
				}
			}
		})
	}
}

// secretVersion returns the resourceVersion of a Secret of the test's.
func secretVersion(t *testing.T, ns, name string) string {
	t.Helper()
	apiServer(t)
	var s corev1.Secret
	if err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &s); err != nil {
		t.Fatal(err)
	}
	return s.ResourceVersion
}

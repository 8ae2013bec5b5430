package function

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"knative.dev/pkg/apis"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/rerror"
	"github.com/fnops/func-operator/test/gitserver"
	"github.com/fnops/func-operator/test/registrytest"
)

// TestReconcile_Kstatus runs kstatus (sigs.k8s.io/cli-utils, the library of Flux's
// health checks, kpt and Config Sync) on Functions as the API server returns them
// after a reconcile: Ready is Current, a Function only a change can fix is Failed, one
// that builds or waits is InProgress.
func TestReconcile_Kstatus(t *testing.T) {
	pin, err := funclib.AvailableMiddleware("go", "http")
	if err != nil {
		t.Fatal(err)
	}
	reg := registrytest.Start(t)
	current := reg.Push(t, "fns/current", pin.Version)
	outdated := reg.Push(t, "fns/outdated", "v0.1.0")
	root := gitserver.NewRepoRoot(t)
	srv := gitserver.StartHTTP(t, root)
	gitserver.CreateRepo(t, root, "fn").Commit(t, "main", map[string]string{
		"func.yaml":     funcYAML("hello", "go") + "registry: " + reg.Host + "/fns\n",
		"bad/func.yaml": "name: [unclosed\n",
	}, "hello")
	off := false

	tests := []struct {
		name       string
		path       string
		image      string // of the Knative Service; none when empty
		autoUpdate *bool
		rebuild    bool // the Reconciler can rebuild
		want       status.Status
		wantCond   string // the kstatus condition type and reason, when one decides
	}{{
		name: "ready and up to date: Current", image: current,
		want: status.CurrentStatus,
	}, {
		name: "outdated, auto-update off: Current (the condition does not gate Ready)", image: outdated, autoUpdate: &off,
		want: status.CurrentStatus,
	}, {
		name: "invalid func.yaml: Failed", path: "bad",
		want: status.FailedStatus, wantCond: "Stalled/" + v1alpha1.ReasonFuncYamlInvalid,
	}, {
		name: "outdated and rebuilding: InProgress", image: outdated, rebuild: true,
		want: status.InProgressStatus, wantCond: "Reconciling/" + v1alpha1.ReasonRebuilding,
	}, {
		name: "not deployed yet: InProgress, waiting for func deploy",
		want: status.InProgressStatus,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := newNamespace(t)
			if tt.image != "" {
				knativeService{ready: &apis.Condition{Type: apis.ConditionReady, Status: corev1.ConditionTrue},
					readyRevision: "hello-00001", revisionDigest: tt.image}.create(t, ns)
			}
			fn := newFunction(ns, "fn", v1alpha1.Repository{URL: srv.URL("fn"), Path: tt.path})
			fn.Spec.AutoUpdateMiddleware = tt.autoUpdate
			mustCreate(t, fn)
			r, _ := newTestReconciler(t, 100)
			if tt.rebuild {
				r, _ = newBuildReconciler(t)
				cfg := r.Config.Load()
				cfg.MaxConcurrentBuilds = 1
				cfg.BuilderImages = map[string]string{"pack/go": "builder:pinned"}
				r.Config.Set(cfg)
			}
			if _, err := reconcileOnce(t, r, ns, "fn"); err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			if r.Builds != nil {
				r.Builds.Launcher.Wait()
			}

			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(v1alpha1.SchemeGroupVersion.WithKind("Function"))
			if err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "fn"}, u); err != nil {
				t.Fatal(err)
			}
			res, err := status.Compute(u)
			if err != nil {
				t.Fatalf("kstatus: %v", err)
			}
			if diff := cmp.Diff(tt.want, res.Status); diff != "" {
				t.Errorf("kstatus status (-want +got):\n%s\nmessage: %s", diff, res.Message)
			}
			got := ""
			for _, c := range res.Conditions {
				if c.Status == corev1.ConditionTrue {
					got = string(c.Type) + "/" + c.Reason
				}
			}
			if tt.wantCond != "" {
				if diff := cmp.Diff(tt.wantCond, got); diff != "" {
					t.Errorf("kstatus condition (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	stall := rerror.NewStalling(v1alpha1.ReasonFuncYamlInvalid, "func.yaml is invalid")
	tests := []struct {
		name  string
		mark  func(fs *v1alpha1.FunctionStatus)
		err   error
		build *v1alpha1.BuildStatus
		want  map[apis.ConditionType]string // Stalled and Reconciling, "status/reason"; absent when not set
	}{{
		name: "Ready: neither",
		mark: func(fs *v1alpha1.FunctionStatus) {
			fs.MarkSourceReady("main", "c1")
			fs.MarkDeployed("Knative Service hello", "img", "")
			fs.MarkServiceReady("Knative Service hello is ready")
			fs.MarkMiddlewareUpToDate("newest")
		},
		want: map[apis.ConditionType]string{},
	}, {
		name: "stalling error: Stalled with its reason",
		mark: func(fs *v1alpha1.FunctionStatus) { fs.MarkSourceFailed(v1alpha1.ReasonFuncYamlInvalid, "bad") },
		err:  stall,
		want: map[apis.ConditionType]string{v1alpha1.FunctionConditionStalled: "True/FuncYamlInvalid"},
	}, {
		name:  "a build under way: Reconciling with Ready's reason",
		mark:  func(fs *v1alpha1.FunctionStatus) { fs.MarkRebuilding("build b1 runs") },
		build: &v1alpha1.BuildStatus{ID: "b1", Phase: v1alpha1.BuildPhaseRunning},
		want:  map[apis.ConditionType]string{v1alpha1.FunctionConditionReconciling: "True/Rebuilding"},
	}, {
		name: "first check, nothing decided: Reconciling",
		mark: func(fs *v1alpha1.FunctionStatus) {},
		want: map[apis.ConditionType]string{v1alpha1.FunctionConditionReconciling: "True/Reconciling"},
	}, {
		name: "waiting for a deploy (Ready False, no stall): neither; kstatus reads Ready",
		mark: func(fs *v1alpha1.FunctionStatus) { fs.MarkSourceReady("main", "c1"); fs.MarkNotDeployed("hello", "ns") },
		err:  rerror.NewWaiting(v1alpha1.ReasonNotDeployed, 0, "waiting"),
		want: map[apis.ConditionType]string{},
	}, {
		name: "a transient error: Stalled kept, nothing new is known of it",
		mark: func(fs *v1alpha1.FunctionStatus) { fs.MarkSourceFailed(v1alpha1.ReasonGitCloneFailed, "timed out") },
		err:  rerror.NewTransient(v1alpha1.ReasonGitCloneFailed, "timed out"),
		want: map[apis.ConditionType]string{v1alpha1.FunctionConditionStalled: "True/Old"},
	}, {
		name: "an unclassified error counts as transient",
		mark: func(fs *v1alpha1.FunctionStatus) {},
		err:  errors.New("cache not synced"),
		want: map[apis.ConditionType]string{v1alpha1.FunctionConditionStalled: "True/Old"},
	}, {
		name: "a failed build waiting for its retry: neither",
		mark: func(fs *v1alpha1.FunctionStatus) {
			fs.MarkSourceReady("main", "c1")
			fs.MarkBuildFailed("build b1 failed")
		},
		build: &v1alpha1.BuildStatus{ID: "b1", Phase: v1alpha1.BuildPhaseFailed},
		want:  map[apis.ConditionType]string{},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fn := &v1alpha1.Function{}
			fn.Status.InitializeConditions()
			fn.Status.MarkStalled("Old", "left from an earlier reconcile")
			tt.mark(&fn.Status)
			fn.Status.Build = tt.build
			summarize(fn, tt.err)
			got := map[apis.ConditionType]string{}
			for _, c := range fn.Status.Conditions {
				if c.Type == v1alpha1.FunctionConditionStalled || c.Type == v1alpha1.FunctionConditionReconciling {
					got[c.Type] = string(c.Status) + "/" + c.Reason
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("kstatus conditions (-want +got):\n%s", diff)
			}
		})
	}
}

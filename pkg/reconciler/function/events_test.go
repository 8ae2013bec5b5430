package function

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/tools/record"

	"github.com/fnops/func-operator/api/v1alpha1"
)

// TestReconciler_recordEvents_Ready: every reason that turns Ready False is told
// once, by one Event, whichever condition holds it; a rebuild on its way is Normal.
func TestReconciler_recordEvents_Ready(t *testing.T) {
	ready := func() *v1alpha1.Function {
		fn := &v1alpha1.Function{}
		fn.Status.InitializeConditions()
		fn.Status.MarkSourceReady("main", "c1")
		fn.Status.Deployment = &v1alpha1.DeploymentStatus{}
		return fn
	}
	tests := []struct {
		name   string
		before func(*v1alpha1.Function)
		after  func(*v1alpha1.Function)
		want   []string // Events, "Type Reason" each
	}{{
		name:  "a rebuild not possible: a Warning",
		after: func(fn *v1alpha1.Function) { fn.Status.MarkRebuildNotPossible("no Tekton") },
		want:  []string{"Warning RebuildNotPossible"},
	}, {
		name: "the image not found: Ready Unknown, but stalled",
		after: func(fn *v1alpha1.Function) {
			fn.Status.MarkMiddlewareUnknown(v1alpha1.ReasonImageNotFound, "gone")
			fn.Status.MarkStalled(v1alpha1.ReasonImageNotFound, "gone")
		},
		want: []string{"Warning ImageNotFound"},
	}, {
		name: "not bound: stalled and Ready False, told once",
		after: func(fn *v1alpha1.Function) {
			fn.Status.MarkNotBound(v1alpha1.ReasonServiceNotFromFunc, "not func's")
			fn.Status.MarkStalled(v1alpha1.ReasonServiceNotFromFunc, "not func's")
		},
		want: []string{"Warning ServiceNotFromFunc"},
	}, {
		name:   "the same reason again: nothing",
		before: func(fn *v1alpha1.Function) { fn.Status.MarkRebuildNotPossible("no Tekton") },
		after:  func(fn *v1alpha1.Function) { fn.Status.MarkRebuildNotPossible("no Tekton, still") },
	}, {
		name:   "another reason: told",
		before: func(fn *v1alpha1.Function) { fn.Status.MarkRebuildNotPossible("no Tekton") },
		after:  func(fn *v1alpha1.Function) { fn.Status.MarkDeployerMismatch("switch") },
		want:   []string{"Warning DeployerMismatch"},
	}, {
		name:  "told by the source already: once",
		after: func(fn *v1alpha1.Function) { fn.Status.MarkSourceFailed(v1alpha1.ReasonGitCloneFailed, "refused") },
		want:  []string{"Warning GitCloneFailed"},
	}, {
		name: "a failed build told when it failed: not again when it reaches Ready",
		before: func(fn *v1alpha1.Function) {
			fn.Status.Build = &v1alpha1.BuildStatus{ID: "b1", Phase: v1alpha1.BuildPhaseFailed}
			fn.Status.MarkRebuilding("build b1 running")
		},
		after: func(fn *v1alpha1.Function) { fn.Status.MarkBuildFailed("build b1 failed; retry 2 at ...") },
	}, {
		name: "the control: a build failing now is told once, by the build's Event",
		before: func(fn *v1alpha1.Function) {
			fn.Status.Build = &v1alpha1.BuildStatus{ID: "b1", Phase: v1alpha1.BuildPhaseRunning}
			fn.Status.MarkRebuilding("build b1 running")
		},
		after: func(fn *v1alpha1.Function) {
			fn.Status.Build = &v1alpha1.BuildStatus{ID: "b1", Phase: v1alpha1.BuildPhaseFailed}
			fn.Status.MarkBuildFailed("build b1 failed")
		},
		want: []string{"Warning BuildFailed"},
	}, {
		name: "a rebuild on its way: Normal",
		after: func(fn *v1alpha1.Function) {
			fn.Status.Middleware = &v1alpha1.MiddlewareStatus{PendingRebuild: true}
			fn.Status.MarkMiddlewareOutdated("v0.22.0 is available")
		},
		want: []string{"Normal MiddlewareOutdated"},
	}, {
		name:  "Ready Unknown: nothing",
		after: func(fn *v1alpha1.Function) { fn.Status.MarkSourceUnknown(v1alpha1.ReasonGitCloneFailed, "trying") },
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			orig := ready()
			if tt.before != nil {
				tt.before(orig)
			}
			fn := orig.DeepCopy()
			tt.after(fn)
			rec := record.NewFakeRecorder(10)
			r := New(Deps{Recorder: rec})

			r.recordEvents(orig, fn)

			var got []string
			for len(rec.Events) > 0 {
				e := strings.Fields(<-rec.Events)
				got = append(got, e[0]+" "+e[1])
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Events (-want +got):\n%s", diff)
			}
		})
	}
}

package build

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/rebuild"
	"github.com/fnops/func-operator/pkg/reconciler/function/resources"
)

// TestReconciler_pruneHistory keeps spec.buildHistoryLimit finished PipelineRuns of a
// Function, those that finished last, besides the run of the build its status records
// and any run not finished. A run the Function does not control (a tenant labelled it
// as the Function's) is neither counted nor deleted.
func TestReconciler_pruneHistory(t *testing.T) {
	// The runs of Function fn, oldest first: r0…r4 finished a minute apart, "running"
	// has not, and "current" (finished first of all) is the build the status records;
	// "foreign" finished last, and the Function does not control it.
	runs := []string{"r0", "r1", "r2", "r3", "r4", "running", "current", "foreign"}
	for _, tt := range []struct {
		name  string
		limit *int32
		want  []string // the runs left
	}{
		{name: "unset: 3", want: []string{"current", "foreign", "r2", "r3", "r4", "running"}},
		{name: "0: only the recorded and unfinished runs", limit: ptr.To[int32](0), want: []string{"current", "foreign", "running"}},
		{name: "more than there are: none deleted", limit: ptr.To[int32](20), want: runs},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, ns := context.Background(), "fn-test"
			r := newTestReconciler(t, newFakeClient(t))
			fn := &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fn", UID: "fn-uid"}}
			fn.Spec.BuildHistoryLimit = tt.limit
			fn.Status.Build = &v1alpha1.BuildStatus{ID: "current", Phase: v1alpha1.BuildPhaseSucceeded}
			base := time.Now().Add(-time.Hour).Truncate(time.Second)
			for i, name := range runs {
				pr := &pipelinev1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
					Labels: map[string]string{resources.LabelFunction: "fn", resources.LabelManagedBy: resources.ManagedBy, resources.LabelBuildID: name}},
					Spec: pipelinev1.PipelineRunSpec{PipelineRef: &pipelinev1.PipelineRef{Name: "p"}}}
				if name != "foreign" {
					pr.OwnerReferences = []metav1.OwnerReference{resources.Owner(fn)}
				}
				if err := r.Client.Create(ctx, pr); err != nil {
					t.Fatal(err)
				}
				status, done := corev1.ConditionTrue, metav1.NewTime(base.Add(time.Duration(i)*time.Minute))
				switch name {
				case "running":
					status = corev1.ConditionUnknown
				case "current":
					done = metav1.NewTime(base.Add(-time.Minute))
				}
				pr.Status.Conditions = duckv1.Conditions{{Type: apis.ConditionSucceeded, Status: status}}
				if status != corev1.ConditionUnknown {
					pr.Status.CompletionTime = &done
				}
				if err := r.Client.Status().Update(ctx, pr); err != nil {
					t.Fatal(err)
				}
			}
			listed, err := r.pipelineRuns(ctx, fn)
			if err != nil || len(listed) != len(runs) {
				t.Fatalf("listed %d runs (%v), want %d", len(listed), err, len(runs))
			}

			if err := r.pruneHistory(ctx, fn, listed); err != nil {
				t.Fatal(err)
			}

			var left pipelinev1.PipelineRunList
			if err := r.APIReader.List(ctx, &left, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, pr := range left.Items {
				if pr.DeletionTimestamp.IsZero() {
					names = append(names, pr.Name)
				}
			}
			slices.Sort(names)
			want := slices.Sorted(slices.Values(tt.want))
			if diff := cmp.Diff(want, names); diff != "" {
				t.Errorf("runs left (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReconciler_sweepGitCredentials deletes the git credentials Secrets of a
// Function's builds that are not in flight, read from the namespace's Secret watch:
// not the in-flight build's, nor one another Function owns, nor one while this
// process launches a build.
func TestReconciler_sweepGitCredentials(t *testing.T) {
	ctx, ns := context.Background(), "fn-test"
	fn := &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fn", UID: "uid-fn"}}
	fn.Status.Build = &v1alpha1.BuildStatus{ID: "running", Phase: v1alpha1.BuildPhaseRunning}
	secret := func(id string, owner types.UID) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: funclib.GitSecretName("fn", id),
			Labels:          map[string]string{funclib.LabelGitCredentials: "true", resources.LabelFunction: "fn", resources.LabelBuildID: id},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "functions.dev/v1alpha1", Kind: "Function", Name: "fn", UID: owner}}}}
	}
	c := newFakeClient(t, secret("ended", "uid-fn"), secret("running", "uid-fn"), secret("others", "uid-other"))
	r := newTestReconciler(t, c)
	r.GitCredentials = labelledGitCredentials{c}
	if got := len(r.GitCredentials.GitCredentials(ns, "fn")); got != 3 {
		t.Fatalf("positive control: the simulated watch sees %d Secrets, want 3", got)
	}

	left := func() []string {
		var list corev1.SecretList
		if err := r.APIReader.List(ctx, &list, client.InNamespace(ns), client.HasLabels{funclib.LabelGitCredentials}); err != nil {
			t.Fatal(err)
		}
		names := make([]string, 0, len(list.Items))
		for _, s := range list.Items {
			names = append(names, s.Labels[resources.LabelBuildID])
		}
		slices.Sort(names)
		return names
	}
	// While this process launches a build of fn, nothing goes.
	release := make(chan struct{})
	r.Builds = &rebuild.Builds{Launcher: rebuild.NewLauncher(func(context.Context, funclib.BuildRequest) error { <-release; return nil }, nil, logr.Discard())}
	r.Builds.Launcher.Launch(types.NamespacedName{Namespace: ns, Name: "fn"}, "next", funclib.BuildRequest{})
	r.sweepGitCredentials(ctx, fn)
	close(release)
	r.Builds.Launcher.Wait()
	if diff := cmp.Diff([]string{"ended", "others", "running"}, left()); diff != "" {
		t.Errorf("during a launch, Secrets left (-want +got):\n%s", diff)
	}
	r.sweepGitCredentials(ctx, fn)
	if diff := cmp.Diff([]string{"others", "running"}, left()); diff != "" {
		t.Errorf("Secrets left (-want +got):\n%s", diff)
	}
	// The build ended: its Secret goes too.
	fn.Status.Build.Phase = v1alpha1.BuildPhaseSucceeded
	r.sweepGitCredentials(ctx, fn)
	if diff := cmp.Diff([]string{"others"}, left()); diff != "" {
		t.Errorf("after the build ended, Secrets left (-want +got):\n%s", diff)
	}
}

package rebuild

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/reconciler/function/resources"
)

// inNamespace lists from one namespace only: the tests' control plane is shared.
type inNamespace struct {
	client.Reader
	ns string
}

func (r inNamespace) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return r.Reader.List(ctx, list, append(opts, client.InNamespace(r.ns))...)
}

// TestQueueSeeder_list seeds the fleet budget from the builds the Functions' statuses
// record, which only the operator writes: not from PipelineRuns, which a tenant may
// create with the operator's labels (here: two unfinished look-alikes, one for a
// Function without a build, one for no Function at all).
func TestQueueSeeder_list(t *testing.T) {
	ns := newNamespace(t)
	queuedAt := metav1.NewTime(time.Now().Add(-time.Minute).Truncate(time.Second))
	builds := map[string]*v1alpha1.BuildStatus{
		"running":  {ID: "b1", Phase: v1alpha1.BuildPhaseRunning, PipelineRun: "fn-run-b1"},
		"starting": {ID: "b2", Phase: v1alpha1.BuildPhaseStarting}, // its run not created yet
		"queued":   {Phase: v1alpha1.BuildPhaseQueued, QueuedAt: &queuedAt, QueuePosition: 1},
		"done":     {ID: "b3", Phase: v1alpha1.BuildPhaseSucceeded},
		"failed":   {ID: "b4", Phase: v1alpha1.BuildPhaseFailed},
		"tenant":   nil,
	}
	ctx := context.Background()
	for name, b := range builds {
		fn := &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.FunctionSpec{Repository: v1alpha1.Repository{URL: "http://127.0.0.1:1/fn.git"}}}
		if err := k8sClient.Create(ctx, fn); err != nil {
			t.Fatal(err)
		}
		if b == nil {
			continue
		}
		fn.Status.Build = b
		if err := k8sClient.Status().Update(ctx, fn); err != nil {
			t.Fatal(err)
		}
	}
	// Unfinished runs with the operator's labels: a tenant's look-alikes, and one of b1.
	for _, look := range []struct{ id, name string }{{"forged", "tenant-lookalike"}, {"forged", "ghost-lookalike"}, {"b1", "fn-run-b1"}} {
		pr := &pipelinev1.PipelineRun{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: look.name, Labels: map[string]string{
				resources.LabelFunction: "fn", resources.LabelBuildID: look.id, resources.LabelManagedBy: resources.ManagedBy}},
			Spec: pipelinev1.PipelineRunSpec{PipelineRef: &pipelinev1.PipelineRef{Name: "fn-pipeline"}},
		}
		if err := k8sClient.Create(ctx, pr); err != nil {
			t.Fatal(err)
		}
	}
	key := func(name string) Key { return types.NamespacedName{Namespace: ns, Name: name} }

	for _, tt := range []struct {
		name        string
		tekton      bool
		wantRunning []Key
	}{
		{name: "Tekton served: the builds in flight", tekton: true, wantRunning: []Key{key("running"), key("starting")}},
		{name: "no Tekton: none followed, none counted"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &QueueSeeder{Reader: inNamespace{k8sClient, ns}, Tekton: tt.tekton}
			running, waiting, err := s.list(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			slices.SortFunc(running, func(a, b Key) int { return strings.Compare(a.String(), b.String()) })
			if diff := cmp.Diff(tt.wantRunning, running); diff != "" {
				t.Errorf("running (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(map[Key]time.Time{key("queued"): queuedAt.Time}, waiting); diff != "" {
				t.Errorf("waiting (-want +got):\n%s", diff)
			}
		})
	}
}

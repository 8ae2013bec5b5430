package function

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/buildqueue"
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
	for name, b := range builds {
		fn := newFunction(ns, name, v1alpha1.Repository{URL: "http://127.0.0.1:1/fn.git"})
		mustCreate(t, fn)
		if b == nil {
			continue
		}
		fn.Status.Build = b
		if err := k8sClient.Status().Update(context.Background(), fn); err != nil {
			t.Fatal(err)
		}
	}
	for _, look := range []pipelineRun{
		{id: "forged", name: "tenant-lookalike", succeeded: corev1.ConditionUnknown},
		{id: "forged", name: "ghost-lookalike", foreign: true},
		{id: "b1", name: "fn-run-b1", succeeded: corev1.ConditionUnknown},
	} {
		look.create(t, ns)
	}
	key := func(name string) buildqueue.Key { return types.NamespacedName{Namespace: ns, Name: name} }

	for _, tt := range []struct {
		name        string
		tekton      bool
		wantRunning []buildqueue.Key
	}{
		{name: "Tekton served: the builds in flight", tekton: true, wantRunning: []buildqueue.Key{key("running"), key("starting")}},
		{name: "no Tekton: none followed, none counted"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &QueueSeeder{Reader: inNamespace{k8sClient, ns}, Tekton: tt.tekton}
			running, waiting, err := s.list(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			slices.SortFunc(running, func(a, b buildqueue.Key) int { return strings.Compare(a.String(), b.String()) })
			if diff := cmp.Diff(tt.wantRunning, running); diff != "" {
				t.Errorf("running (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(map[buildqueue.Key]time.Time{key("queued"): queuedAt.Time}, waiting); diff != "" {
				t.Errorf("waiting (-want +got):\n%s", diff)
			}
		})
	}
}

package function

import (
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/fnops/func-operator/api/v1alpha1"
)

func TestReconciler_recordDeploy(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(d)); return &t }
	rebuilt := v1alpha1.HistoryEntry{Time: *at(-time.Hour), Message: "Middleware updated from v0.21.3 to v0.22.0"}
	tests := []struct {
		name        string
		annotation  *string
		imageBuilt  *metav1.Time
		wantBuilt   *metav1.Time
		wantHistory []v1alpha1.HistoryEntry
		wantEvents  int
		// rebuildAt, when set, is a rebuild's completion recorded between the two reconciles.
		rebuildAt *metav1.Time
	}{{
		name:        "no annotation: nothing",
		imageBuilt:  at(-time.Hour),
		wantBuilt:   at(-time.Hour),
		wantHistory: []v1alpha1.HistoryEntry{rebuilt},
	}, {
		name:        "a deploy after the operator's rebuild: the image was built then",
		annotation:  ptrTo(now.Add(-time.Minute).Format(time.RFC3339)),
		imageBuilt:  at(-time.Hour),
		wantBuilt:   at(-time.Minute),
		wantHistory: []v1alpha1.HistoryEntry{{Time: *at(-time.Minute), Message: "Function was deployed"}, rebuilt},
		wantEvents:  1,
	}, {
		name:        "a deploy before it: nothing new",
		annotation:  ptrTo(now.Add(-2 * time.Hour).Format(time.RFC3339)),
		imageBuilt:  at(-time.Hour),
		wantBuilt:   at(-time.Hour),
		wantHistory: []v1alpha1.HistoryEntry{rebuilt},
	}, {
		name:        "the first deploy seen, in another zone",
		annotation:  ptrTo(now.Add(-time.Minute).In(time.FixedZone("CET", 3600)).Format(time.RFC3339)),
		wantBuilt:   at(-time.Minute),
		wantHistory: []v1alpha1.HistoryEntry{{Time: *at(-time.Minute), Message: "Function was deployed"}, rebuilt},
		wantEvents:  1,
	}, {
		name:        "a deploy a little ahead, recorded, then a rebuild finished before its time: not recorded again",
		annotation:  ptrTo(now.Add(time.Minute).Format(time.RFC3339)),
		imageBuilt:  at(-time.Hour), // replaced below by the rebuild's completion, before the deploy's time
		wantBuilt:   at(30 * time.Second),
		wantHistory: []v1alpha1.HistoryEntry{{Time: *at(time.Minute), Message: "Function was deployed"}, rebuilt},
		wantEvents:  1,
		rebuildAt:   at(30 * time.Second),
	}, {
		name:        "not func's format: ignored",
		annotation:  ptrTo("yesterday"),
		imageBuilt:  at(-time.Hour),
		wantBuilt:   at(-time.Hour),
		wantHistory: []v1alpha1.HistoryEntry{rebuilt},
	}, {
		name:        "far in the future: not yet",
		annotation:  ptrTo(now.Add(time.Hour).Format(time.RFC3339)),
		imageBuilt:  at(-time.Hour),
		wantBuilt:   at(-time.Hour),
		wantHistory: []v1alpha1.HistoryEntry{rebuilt},
	}, {
		name:        "a clock a little ahead: taken",
		annotation:  ptrTo(now.Add(time.Minute).Format(time.RFC3339)),
		imageBuilt:  at(-time.Hour),
		wantBuilt:   at(time.Minute),
		wantHistory: []v1alpha1.HistoryEntry{{Time: *at(time.Minute), Message: "Function was deployed"}, rebuilt},
		wantEvents:  1,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(10)
			r := New(Deps{Recorder: rec, Clock: testclock.NewFakePassiveClock(now)})
			fn := &v1alpha1.Function{}
			if tt.annotation != nil {
				fn.Annotations = map[string]string{v1alpha1.AnnotationLastDeployed: *tt.annotation}
			}
			fn.Status.Deployment = &v1alpha1.DeploymentStatus{ImageBuilt: tt.imageBuilt}
			fn.Status.History = []v1alpha1.HistoryEntry{rebuilt}

			// Twice: what a reconcile recorded, the next one does not record again.
			r.recordDeploy(fn)
			if tt.rebuildAt != nil {
				fn.Status.Deployment.ImageBuilt = tt.rebuildAt
			}
			r.recordDeploy(fn)

			if diff := cmp.Diff(tt.wantBuilt, fn.Status.Deployment.ImageBuilt); diff != "" {
				t.Errorf("status.deployment.imageBuilt (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantHistory, fn.Status.History); diff != "" {
				t.Errorf("status.history (-want +got):\n%s", diff)
			}
			if got := len(rec.Events); got != tt.wantEvents {
				t.Errorf("%d Events, want %d", got, tt.wantEvents)
			}
		})
	}
}

package function

import (
	"context"
	"testing"
	"time"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/rerror"
	"github.com/fnops/func-operator/pkg/tenancy"
)

// TestReconciler_Result: when a reconcile comes back. A namespace that has not
// onboarded the operator is looked at again within tenancy.AccessTTL, since no watch sees
// onboarding; any other stall waits for the next check.
func TestReconciler_Result(t *testing.T) {
	store := config.NewStore()
	cfg := config.Defaults()
	cfg.CheckInterval = time.Hour
	store.Set(cfg)
	r := New(Deps{Config: store})
	for _, tt := range []struct {
		name     string
		err      error
		min, max time.Duration
	}{
		{name: "not onboarded: soon", err: tenancy.NotOnboarded("ns", "x"), min: tenancy.AccessTTL, max: tenancy.AccessTTL},
		// Within the interval: 90–100% of it, so every Function is checked within it.
		{name: "another stall: the next check", err: rerror.NewStalling(v1alpha1.ReasonFuncYamlInvalid, "x"), min: 54 * time.Minute, max: time.Hour},
		{name: "no error: the next check", min: 54 * time.Minute, max: time.Hour},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.result(context.Background(), Result{}, tt.err)
			if err != nil {
				t.Fatalf("result: %v, want the stall absorbed", err)
			}
			if got.RequeueAfter < tt.min || got.RequeueAfter > tt.max {
				t.Errorf("RequeueAfter = %s, want %s to %s", got.RequeueAfter, tt.min, tt.max)
			}
		})
	}
}

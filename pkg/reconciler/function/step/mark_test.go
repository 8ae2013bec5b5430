package step

import (
	"errors"
	"testing"

	"knative.dev/pkg/apis"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/rerror"
)

// A failure's condition and its error are one value: the condition shows the error's
// reason and text, and the error comes back unchanged (its cause still reachable).
func TestMarkedBy(t *testing.T) {
	cause := errors.New("boom")
	tests := []struct {
		name string
		mark func(fn *v1alpha1.Function, err *rerror.Stalling) error
		cond apis.ConditionType
	}{
		{"reason from the error", func(fn *v1alpha1.Function, err *rerror.Stalling) error {
			return MarkedBy(fn.Status.MarkMiddlewareUnknown, err)
		}, v1alpha1.FunctionConditionMiddlewareUpToDate},
		{"fixed reason", func(fn *v1alpha1.Function, err *rerror.Stalling) error {
			return MarkedBy(WithReason(fn.Status.MarkRebuildNotPossible), err)
		}, v1alpha1.FunctionConditionMiddlewareUpToDate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fn := &v1alpha1.Function{}
			fn.Status.InitializeConditions()
			stall := rerror.NewStalling(v1alpha1.ReasonRebuildNotPossible, "the build cannot start: %w", cause)
			got := tt.mark(fn, stall)
			if got != error(stall) || !errors.Is(got, cause) {
				t.Fatalf("MarkedBy returned %v, want the stall it was given, wrapping its cause", got)
			}
			c := fn.Status.GetCondition(tt.cond)
			if c == nil || c.Reason != v1alpha1.ReasonRebuildNotPossible || c.Message != stall.Error() {
				t.Errorf("condition %s = %+v, want reason %s and message %q", tt.cond, c, v1alpha1.ReasonRebuildNotPossible, stall.Error())
			}
		})
	}
}

package v1alpha1

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestFunction_PendingRebuildRequest(t *testing.T) {
	long := strings.Repeat("x", 65)
	for _, tt := range []struct {
		name, annotation, handled, want string
	}{
		{name: "none"},
		{name: "new", annotation: "t1", want: "t1"},
		{name: "handled", annotation: "t1", handled: "t1"},
		{name: "another after one handled", annotation: "t2", handled: "t1", want: "t2"},
		{name: "long: by its digest", annotation: long, want: HandledValue(long)},
		{name: "long, handled by its digest", annotation: long, handled: HandledValue(long)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fn := &Function{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{AnnotationRebuildRequestedAt: tt.annotation}}}
			fn.Status.LastHandledRebuildRequest = tt.handled
			if got := fn.PendingRebuildRequest(); got != tt.want {
				t.Errorf("PendingRebuildRequest() = %q, want %q", got, tt.want)
			}
		})
	}
	if v := HandledValue(long); !strings.HasPrefix(v, "sha256:") || len(v) != 7+64 {
		t.Errorf("HandledValue of 65 bytes = %q, want sha256: and 64 hex digits", v)
	}
}

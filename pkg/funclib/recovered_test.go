package funclib

import (
	"errors"
	"strings"
	"testing"
)

// TestRecovered: a panic in a call into func becomes an error of the build, not the
// end of the operator. The positive control: an error or success passes through.
func TestRecovered(t *testing.T) {
	err := recovered("running the pipeline", func() error {
		var p *struct{ x int }
		return errors.New(string(rune(p.x))) // a nil dereference, as func's GetPodLogs
	})
	if err == nil || !strings.Contains(err.Error(), "the func library panicked running the pipeline") ||
		!strings.Contains(err.Error(), "nil pointer dereference") {
		t.Errorf("recovered(a panicking call) = %v, want the panic as an error", err)
	}
	want := errors.New("step failed")
	if err := recovered("x", func() error { return want }); !errors.Is(err, want) {
		t.Errorf("recovered(an error) = %v, want %v", err, want)
	}
	if err := recovered("x", func() error { return nil }); err != nil {
		t.Errorf("recovered(success) = %v, want nil", err)
	}
}

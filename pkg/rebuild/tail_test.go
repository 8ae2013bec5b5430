package rebuild

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fnops/func-operator/pkg/netguard"
)

func TestTailLines(t *testing.T) {
	log := "func pipeline: step build failed:\n" + strings.Repeat("noise\n", 1000) + "last words " + strings.Repeat("x", 2000)
	got := TailLines(log, 3, 64)
	lines := strings.Split(got, "\n")
	want := []string{"func pipeline: step build failed:", "… (999 lines cut)", "noise", netguard.CapText("last words "+strings.Repeat("x", 2000), 64)}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("TailLines() (-want +got):\n%s", diff)
	}
	if got := TailLines("one\ntwo", 0, 64); got != "one\n… (1 lines cut)" {
		t.Errorf("TailLines(n=0) = %q", got)
	}
	if got := TailLines("one\ntwo", 5, 64); got != "one\ntwo" {
		t.Errorf("TailLines(short) = %q", got)
	}
}

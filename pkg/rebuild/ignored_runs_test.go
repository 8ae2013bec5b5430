package rebuild

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// TestIgnoredRuns: a look-alike run is reported the first time only; the memory of
// them is bounded, the oldest forgotten first.
func TestIgnoredRuns(t *testing.T) {
	var i IgnoredRuns
	if !i.First("a") {
		t.Error("the first sight of run a not reported")
	}
	if i.First("a") {
		t.Error("run a reported twice")
	}
	for n := range maxIgnoredRuns {
		i.First(types.UID(fmt.Sprint(n)))
	}
	if !i.First("a") {
		t.Errorf("run a still remembered after %d others: the memory is not bounded", maxIgnoredRuns)
	}
}

package function

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// TestIgnoredRuns: a look-alike run is reported the first time only; the memory of
// them is bounded, the oldest forgotten first.
func TestIgnoredRuns(t *testing.T) {
	var i ignoredRuns
	if !i.first("a") {
		t.Error("the first sight of run a not reported")
	}
	if i.first("a") {
		t.Error("run a reported twice")
	}
	for n := range maxIgnoredRuns {
		i.first(types.UID(fmt.Sprint(n)))
	}
	if !i.first("a") {
		t.Errorf("run a still remembered after %d others: the memory is not bounded", maxIgnoredRuns)
	}
}

package faults

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
)

// TestAttack_HangingBuilds: two namespaces whose builds never end (a build step that
// sleeps, a registry that never answers the push) hold one build slot each until
// buildTimeout, not every slot: with maxConcurrentBuilds 3 and
// maxConcurrentBuildsPerNamespace 1, each runs one build while its second waits
// with a slot free (the namespace's share, not the budget, holds it: the positive
// control of the limit), and an outdated Function of a third namespace is rebuilt at
// once. Without the namespace limit the hanging namespaces took all three slots and
// the third waited for buildTimeout (1h by default).
func TestAttack_HangingBuilds(t *testing.T) {
	s := setUpWithBuilds(t, map[string]string{config.KeyMaxConcurrentBuilds: "3", config.KeyMaxConcurrentBuildsPerNamespace: "1"}, nil)

	// Builds held running: they end only when the test lets them.
	hanging := []*fleet{s.newFleet(t, "hang-a", 0, 2, true), s.newFleet(t, "hang-b", 0, 2, true)}
	s.fleets = append(s.fleets, hanging...)
	for _, f := range hanging {
		until(t, 2*time.Minute, f.ns+": one build running, one waiting for the namespace's share", func() string {
			running, queued := 0, ""
			for _, name := range f.outdated {
				fn := s.function(f.ns, name)
				if fn == nil || fn.Status.Build == nil {
					return name + ": no build yet"
				}
				switch fn.Status.Build.Phase {
				case v1alpha1.BuildPhaseRunning:
					running++
				case v1alpha1.BuildPhaseQueued:
					queued = fn.Status.GetCondition(v1alpha1.FunctionConditionMiddlewareUpToDate).Message
				}
			}
			if running != 1 || !strings.Contains(queued, "key "+config.KeyMaxConcurrentBuildsPerNamespace) {
				return fmt.Sprintf("%d running, queued with %q; want 1 running and 1 queued for the namespace's share", running, queued)
			}
			return ""
		})
	}

	victim := s.newFleet(t, "hang-victim", 0, 1, false)
	s.fleets = append(s.fleets, victim)
	v := victim.outdated[0]
	waited := until(t, 2*time.Minute, "a third namespace's Function rebuilt beside two hanging ones",
		func() string { return s.rebuilt(victim.ns, v) })
	t.Logf("a third namespace's outdated Function was rebuilt %s after it was created, beside two namespaces of hanging builds holding a slot each of 3",
		waited.Round(100*time.Millisecond))
	for _, f := range hanging {
		for _, name := range f.outdated {
			if n := s.obs.runsOf(f.key(name)); n > 1 {
				t.Errorf("%s: %d PipelineRuns, want at most 1", f.key(name), n)
			}
		}
		if n := s.obs.runsOf(f.key(f.outdated[0])) + s.obs.runsOf(f.key(f.outdated[1])); n != 1 {
			t.Errorf("%s: %d PipelineRuns while its builds hang, want 1", f.ns, n)
		}
	}

	// The hanging builds end: every Function is rebuilt, none twice.
	for _, f := range hanging {
		f.hold.Store(false)
	}
	if lost := s.lostBuilds(t, 3*time.Minute, s.fleets); lost != 0 {
		t.Errorf("%d builds lost", lost)
	}
	s.checkCounters(t)
}

package rebuild

import (
	"sync/atomic"
)

// Builds is the rebuild machinery a Reconciler drives: the fleet's queue, the
// launcher, the leadership clock and what the cluster serves. A Reconciler without
// Builds (nil) rebuilds nothing. Builds is safe for concurrent use.
type Builds struct {
	// Queue is the fleet-wide budget of running rebuilds.
	Queue *Queue
	// Launcher starts rebuilds off the reconcile path.
	Launcher *Launcher
	// Leading is when this process became the leader; nil without leader election,
	// when no earlier leader is known to be gone.
	Leading *Leading
	// WorkDir holds scratch directories of builds.
	WorkDir string
	// Tekton is true when the cluster served Tekton's PipelineRuns at start: rebuilds
	// are possible. TektonFound records Tekton installed later.
	Tekton bool
	// Ignored are the look-alike PipelineRuns already logged (by UID), so that each
	// is logged once however often its Function is checked.
	Ignored IgnoredRuns

	tektonLate atomic.Bool
}

// TektonServed reports whether the cluster serves Tekton's PipelineRuns; false
// without Builds.
func (b *Builds) TektonServed() bool { return b != nil && (b.Tekton || b.tektonLate.Load()) }

// TektonFound records that the cluster serves Tekton's PipelineRuns now.
func (b *Builds) TektonFound() {
	if b != nil {
		b.tektonLate.Store(true)
	}
}

// Apply applies t's effects on the queue and the launcher for key's build id (the
// build the event was about). The status (t.Build) is the caller's to record.
func (b *Builds) Apply(key Key, id string, t Transition) {
	switch t.Slot {
	case SlotHold:
		b.Queue.Running(key)
	case SlotRelease:
		b.Queue.Release(key)
	case SlotLeave:
		b.Queue.Forget(key)
	}
	if t.LaunchDone {
		b.Launcher.Done(key, id)
	}
}

// Forget forgets a deleted Function: its launch is cancelled (func's provider deletes
// the PipelineRun of a cancelled build) and its place in the queue freed.
func (b *Builds) Forget(key Key) {
	if b == nil {
		return
	}
	if b.Launcher != nil {
		b.Launcher.Cancel(key)
	}
	if b.Queue != nil {
		b.Queue.Forget(key)
	}
}

package rebuild

import (
	"context"
	"sync/atomic"
	"time"
)

// Leading records when this process became the leader. A build another process
// launched before that was launched by an earlier leader, which is gone (its Lease
// expired before this one was granted): its PipelineRun, if it made one, is in the
// synced cache, so a build still without one was lost and need not wait out
// LaunchGrace.
type Leading struct{ since atomic.Int64 }

// Start records the time and waits for ctx: the manager starts it once elected.
func (l *Leading) Start(ctx context.Context) error {
	l.since.Store(time.Now().UnixNano())
	<-ctx.Done()
	return nil
}

// NeedLeaderElection is true: Start runs when this process leads.
func (*Leading) NeedLeaderElection() bool { return true }

// Since returns when this process became the leader, false before it did.
func (l *Leading) Since() (time.Time, bool) {
	if l == nil {
		return time.Time{}, false
	}
	ns := l.since.Load()
	return time.Unix(0, ns), ns != 0
}

// LeadingSince returns a Leading that became the leader at t, as a test sets it up.
func LeadingSince(t time.Time) *Leading {
	l := &Leading{}
	l.since.Store(t.UnixNano())
	return l
}

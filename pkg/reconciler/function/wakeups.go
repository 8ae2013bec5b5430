package function

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Wakeups brings Functions back to the reconciler from outside the watches: a build's
// launch returned, the fleet budget has a slot for one, the operator policy changed,
// a repository was pushed to.
//
// A wake-up is a Function's key added to the controller's work queue, which holds
// each key once however often it is added (a key added while its reconcile runs is
// reconciled once more after it). Until the controller starts (on a replica that
// does not lead, or before the caches synced), the keys wait in a set. So a burst of
// wake-ups costs a record per distinct Function, never a goroutine or a reconcile per
// wake-up, and nothing ever blocks.
type Wakeups struct {
	mu sync.Mutex
	// queue is the controller's work queue, nil until the controller starts.
	queue workqueue.TypedRateLimitingInterface[reconcile.Request]
	// pending holds the keys woken before the controller started.
	pending map[types.NamespacedName]struct{}
}

// NewWakeups returns Wakeups for one controller.
func NewWakeups() *Wakeups {
	return &Wakeups{pending: map[types.NamespacedName]struct{}{}}
}

// Enqueue brings the Function key back to the reconciler. It never blocks.
func (w *Wakeups) Enqueue(key types.NamespacedName) {
	w.mu.Lock()
	q := w.queue
	if q == nil {
		w.pending[key] = struct{}{}
	}
	w.mu.Unlock()
	if q != nil {
		q.Add(reconcile.Request{NamespacedName: key})
	}
}

// EnqueueAll brings every Function of keys back; it stops when ctx ends. It never
// blocks.
func (w *Wakeups) EnqueueAll(ctx context.Context, keys []types.NamespacedName) {
	for _, key := range keys {
		if ctx.Err() != nil {
			return
		}
		w.Enqueue(key)
	}
}

// source is what the controller watches: when the controller starts, it hands over
// its queue, which takes the keys woken until then.
func (w *Wakeups) source() source.Source {
	return source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		w.mu.Lock()
		w.queue = q
		pending := w.pending
		w.pending = nil
		w.mu.Unlock()
		for key := range pending {
			q.Add(reconcile.Request{NamespacedName: key})
		}
		return nil
	})
}

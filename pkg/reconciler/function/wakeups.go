package function

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/fnops/func-operator/api/v1alpha1"
)

// wakeupBuffer is how many wake-ups wait for the controller before Enqueue hands
// the rest to goroutines.
const wakeupBuffer = 1024

// Wakeups brings Functions back to the reconciler from outside the watches: a build's
// launch returned, the fleet budget has a slot for one, the operator policy changed.
type Wakeups struct {
	ch chan event.GenericEvent
}

// NewWakeups returns Wakeups for one controller.
func NewWakeups() *Wakeups {
	return &Wakeups{ch: make(chan event.GenericEvent, wakeupBuffer)}
}

// Enqueue brings the Function key back to the reconciler. It never blocks.
func (w *Wakeups) Enqueue(key types.NamespacedName) {
	ev := functionEvent(key)
	select {
	case w.ch <- ev:
	default:
		go func() { w.ch <- ev }()
	}
}

// EnqueueAll brings every Function of keys back, waiting for room; it stops when ctx ends.
func (w *Wakeups) EnqueueAll(ctx context.Context, keys []types.NamespacedName) {
	for _, key := range keys {
		select {
		case w.ch <- functionEvent(key):
		case <-ctx.Done():
			return
		}
	}
}

// source is what the controller watches.
func (w *Wakeups) source() source.Source {
	return source.Channel(w.ch, &handler.EnqueueRequestForObject{})
}

func functionEvent(key types.NamespacedName) event.GenericEvent {
	return event.GenericEvent{Object: &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}}
}

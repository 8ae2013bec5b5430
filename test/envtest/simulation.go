package envtest

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// simulation plays, for the objects an informer sees, the part of a component that
// does not run in envtest (a kubelet, the KEDA HTTP add-on's operator): sync is
// called with each object added or updated (and at each resync), and again, with
// backoff, while it fails.
type simulation struct {
	name     string
	informer cache.SharedIndexInformer
	queue    workqueue.TypedRateLimitingInterface[string]
	sync     func(ctx context.Context, obj any) error
	logf     func(format string, args ...any)

	cancel   context.CancelFunc
	shutdown func() // waits for the informer's goroutines
	done     chan struct{}
	stopOnce sync.Once
}

// startSimulation starts the informer (start starts its factory, shutdown waits for
// it once stopped) and a worker calling syncObj, and returns once the informer has synced. It runs
// until ctx ends or stop.
func startSimulation(ctx context.Context, name string, informer cache.SharedIndexInformer, start func(stop <-chan struct{}), shutdown func(),
	syncObj func(ctx context.Context, obj any) error, logf func(format string, args ...any)) (*simulation, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &simulation{
		name: name, informer: informer, sync: syncObj, logf: logf, cancel: cancel, shutdown: shutdown, done: make(chan struct{}),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: name}),
	}
	enqueue := func(obj any) {
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			s.queue.Add(key)
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		cancel()
		return nil, fmt.Errorf("%s: watching: %w", name, err)
	}
	start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		cancel()
		shutdown()
		return nil, fmt.Errorf("%s: its informer did not sync: %w", name, context.Cause(ctx))
	}
	go func() {
		<-ctx.Done()
		s.queue.ShutDown()
	}()
	go func() {
		defer close(s.done)
		for s.next(ctx) {
		}
	}()
	return s, nil
}

// next syncs the next object of the queue; false once the queue is shut down.
func (s *simulation) next(ctx context.Context) bool {
	key, quit := s.queue.Get()
	if quit {
		return false
	}
	defer s.queue.Done(key)
	obj, exists, err := s.informer.GetStore().GetByKey(key)
	if err != nil || !exists {
		s.queue.Forget(key)
		return true
	}
	if err := s.sync(ctx, obj); err != nil {
		if ctx.Err() != nil {
			return true
		}
		// A conflict or a deleted object is followed by the informer's own event.
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			s.logf("%s: %s: %v (retrying)", s.name, key, err)
		}
		s.queue.AddRateLimited(key)
		return true
	}
	s.queue.Forget(key)
	return true
}

// resync syncs every object the informer knows again, now.
func (s *simulation) resync() {
	for _, key := range s.informer.GetStore().ListKeys() {
		s.queue.Add(key)
	}
}

// stop stops the simulation and waits for its worker; it may be called more than
// once.
func (s *simulation) stop() {
	s.stopOnce.Do(func() {
		s.cancel()
		<-s.done
		s.shutdown()
	})
}

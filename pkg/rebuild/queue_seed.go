package rebuild

import (
	"context"
	"fmt"
	"math"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/fnops/func-operator/api/v1alpha1"
)

// QueueSeeder seeds the fleet budget from what the Functions' statuses record of
// builds: those in flight (Starting or Running) and those that wait in the queue.
// Only the status counts, which only the operator writes, and which records a build
// before it is launched: PipelineRuns are not listed, since a tenant may create one
// with the operator's labels and must not hold a slot by it. It makes the budget
// and the queue's order survive an operator restart. Until it succeeds the queue
// admits nothing; a failure is logged and retried with backoff. It runs as a manager
// Runnable, on the leader, once the caches can be read.
type QueueSeeder struct {
	// Reader lists Functions, from the manager's cache.
	Reader client.Reader
	Queue  *Queue
	// Tekton is true when the cluster serves PipelineRuns: without, no build is
	// followed to its end, so none is counted.
	Tekton bool
}

// seedBackoff spaces the retries of a failed seed.
var seedBackoff = wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: math.MaxInt32, Cap: time.Minute}

// Start seeds the queue, retrying until it succeeds or ctx ends.
func (s *QueueSeeder) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("build-queue")
	err := wait.ExponentialBackoffWithContext(ctx, seedBackoff, func(ctx context.Context) (bool, error) {
		running, waiting, err := s.list(ctx)
		if err != nil {
			logger.Error(err, "seeding the build queue from the cluster failed: no rebuild is admitted until it succeeds; retrying")
			return false, nil
		}
		s.Queue.Seed(running, waiting)
		logger.Info("build queue seeded from the cluster", "running", len(running), "waiting", len(waiting))
		return true, nil
	})
	if ctx.Err() != nil {
		return nil // stopped before it succeeded: nothing to report
	}
	return err
}

// list returns the Functions whose build is in flight and those that wait, with when
// they joined the queue. A build in flight whose run ended while no process looked
// holds its slot until its Function's first reconcile records the end, as does one
// whose launch was lost until the machine records it lost (LaunchLost): never a slot too few.
func (s *QueueSeeder) list(ctx context.Context) (running []Key, waiting map[Key]time.Time, err error) {
	var fns v1alpha1.FunctionList
	if err := s.Reader.List(ctx, &fns); err != nil {
		return nil, nil, fmt.Errorf("listing Functions: %w", err)
	}
	waiting = map[Key]time.Time{}
	for _, fn := range fns.Items {
		b := fn.Status.Build
		switch {
		case b == nil:
		case b.InFlight():
			// Without Tekton no step follows a build to its end, which would free the slot.
			if s.Tekton {
				running = append(running, client.ObjectKeyFromObject(&fn))
			}
		case b.Queued() && b.QueuedAt != nil:
			waiting[client.ObjectKeyFromObject(&fn)] = b.QueuedAt.Time
		}
	}
	return running, waiting, nil
}

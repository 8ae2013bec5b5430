package function

import (
	"context"
	"fmt"
	"math"
	"time"

	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/buildqueue"
	"github.com/fnops/func-operator/pkg/reconciler/function/resources"
)

// QueueSeeder seeds the fleet budget from what the cluster records of builds: the
// PipelineRuns that run and the Functions that wait in the queue. It makes the budget
// and the queue's order survive an operator restart. Until it succeeds the queue
// admits nothing; a failure is logged and retried with backoff. It runs as a manager
// Runnable, on the leader, once the caches can be read.
type QueueSeeder struct {
	// Reader lists PipelineRuns and Functions, from the manager's cache.
	Reader client.Reader
	Queue  *buildqueue.Queue
	// Tekton is true when the cluster serves PipelineRuns.
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

// list returns the Functions whose build runs and those that wait, with when they joined the queue.
func (s *QueueSeeder) list(ctx context.Context) (running []buildqueue.Key, waiting map[buildqueue.Key]time.Time, err error) {
	if s.Tekton {
		var runs pipelinev1.PipelineRunList
		if err := s.Reader.List(ctx, &runs, client.MatchingLabels{resources.LabelManagedBy: resources.ManagedBy}); err != nil {
			return nil, nil, fmt.Errorf("listing build PipelineRuns: %w", err)
		}
		for _, pr := range runs.Items {
			if name := pr.Labels[resources.LabelFunction]; name != "" && !pr.IsDone() {
				running = append(running, buildqueue.Key{Namespace: pr.Namespace, Name: name})
			}
		}
	}
	var fns v1alpha1.FunctionList
	if err := s.Reader.List(ctx, &fns); err != nil {
		return nil, nil, fmt.Errorf("listing Functions: %w", err)
	}
	waiting = map[buildqueue.Key]time.Time{}
	for _, fn := range fns.Items {
		if b := fn.Status.Build; b != nil && b.Phase == v1alpha1.BuildPhaseQueued && b.QueuedAt != nil {
			waiting[client.ObjectKeyFromObject(&fn)] = b.QueuedAt.Time
		}
	}
	return running, waiting, nil
}

// Package tektonsim is a simulation of the Tekton controller, for tests: no kubelet runs in envtest.
package tektonsim

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"knative.dev/pkg/apis"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The task of func's pipelines that builds and pushes the image, and its step.
const (
	buildTask = "build"
	buildStep = "build"
)

// Tasks are the tasks of func's pipelines, in the order they run.
var Tasks = []string{"fetch-sources", buildTask, "deploy"}

// FunctionLabel is the PipelineRun label func writes the function's name to, which
// is the name of its Knative Service.
const FunctionLabel = "function.knative.dev/name"

// ImageParam is the PipelineRun parameter func writes the image to build to.
const ImageParam = "imageName"

// Messages of the Succeeded condition, as Tekton writes them.
const (
	runningMessage   = "Tasks Completed: 0 (Failed: 0, Cancelled 0), Skipped: 0"
	succeededMessage = "Tasks Completed: 3 (Failed: 0, Cancelled 0), Skipped: 0"
)

// Outcome is how a simulated PipelineRun ends.
type Outcome struct {
	// Fail makes the run fail in FailedTask (default "build"), whose step FailedStep
	// (default "build") exits with code 1; Message is the failed TaskRun's
	// condition message (default `"step-<FailedStep>" exited with code 1`).
	Fail                            bool
	FailedTask, FailedStep, Message string
	// MiddlewareVersion is the middleware-version label of the image a successful
	// run pushes (none when empty).
	MiddlewareVersion string
}

// Options configure a Sim.
type Options struct {
	// Client reads and writes the objects; it needs a scheme with Tekton v1, Knative
	// Serving v1 and core v1. When nil, Start makes one from its rest.Config.
	Client client.Client
	// Namespaces are the only namespaces simulated (at least one).
	Namespaces []string
	// Decide returns the outcome of a PipelineRun; called once per run when it starts
	// running, with a copy of the run. When nil, every run succeeds with an unlabelled
	// image. Decide and Hold are called on the simulation's goroutine.
	Decide func(pr *pipelinev1.PipelineRun) Outcome
	// Hold, when not nil, is called before finishing a run; the run stays Running
	// while it returns false (it is polled every Interval).
	Hold func(pr *pipelinev1.PipelineRun) bool
	// Registry receives the images of successful runs (a *registrytest.Registry).
	// A successful run without one fails in its build task.
	Registry interface {
		PushImage(ref, label string) (string, error)
	}
	// Interval is the poll interval, 50ms when zero.
	Interval time.Duration
}

// Sim is a running simulation of the Tekton controller.
//
// envtest runs only kube-apiserver and etcd, so nothing would ever run the
// PipelineRuns that func creates there. A Sim plays the Tekton controller (and
// func's pipeline) instead: it marks new PipelineRuns Running, and later finishes
// them as the test decides, succeeding (an image pushed to a test registry, the
// Knative Service deployed with it by digest, as func's deploy step does) or failing
// (a failed TaskRun step). It is the only simulation in the tests: everything else
// they run (API server, git server, registry, operator) is real.
type Sim struct {
	t    testing.TB
	c    client.Client
	opts Options

	// runs are the runs started and not finished, by namespace/name; only the
	// simulation's goroutine uses it.
	runs map[string]*run

	mu                sync.Mutex
	started, finished []string
	maxRunning        int
}

// run is a PipelineRun the simulation started.
type run struct {
	namespace string
	uid       types.UID
	outcome   Outcome
}

// Start starts simulating Tekton in opts.Namespaces until the test ends: it polls
// the PipelineRuns there every opts.Interval. A run with no Succeeded condition is
// marked Running and given its Outcome by opts.Decide; on a later poll, once
// opts.Hold allows it, it is finished as decided. Runs that are finished, or were
// started by something else (Running when first seen), are left alone; a run
// deleted while running is forgotten.
func Start(t testing.TB, cfg *rest.Config, opts Options) *Sim {
	t.Helper()
	if len(opts.Namespaces) == 0 {
		t.Fatal("tektonsim: no namespaces to simulate")
	}
	if opts.Interval <= 0 {
		opts.Interval = 50 * time.Millisecond
	}
	if opts.Decide == nil {
		opts.Decide = func(*pipelinev1.PipelineRun) Outcome { return Outcome{} }
	}
	c := opts.Client
	if c == nil {
		var err error
		if c, err = newClient(cfg); err != nil {
			t.Fatal(err)
		}
	}
	s := &Sim{t: t, c: c, opts: opts, runs: map[string]*run{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(opts.Interval)
		defer tick.Stop()
		for {
			s.poll(ctx)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return s
}

// newClient makes a client for the objects the simulation reads and writes.
func newClient(cfg *rest.Config) (client.Client, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, pipelinev1.AddToScheme, servingv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("tektonsim: building the scheme: %w", err)
		}
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("tektonsim: creating a client: %w", err)
	}
	return c, nil
}

// MaxRunning returns the maximum number of PipelineRuns the simulation had running
// (started and not finished) at once, across its namespaces.
func (s *Sim) MaxRunning() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxRunning
}

// Started returns the namespace/name of the runs the simulation started, in order.
func (s *Sim) Started() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.started...)
}

// Finished returns the namespace/name of the runs the simulation finished, in order.
func (s *Sim) Finished() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.finished...)
}

// logf logs unless the simulation is stopping (its errors are then cancellations).
func (s *Sim) logf(ctx context.Context, format string, args ...any) {
	if ctx.Err() == nil {
		s.t.Logf("tektonsim: "+format, args...)
	}
}

// poll lists the PipelineRuns of every namespace and moves each one on; what fails
// is retried on the next poll.
func (s *Sim) poll(ctx context.Context) {
	for _, ns := range s.opts.Namespaces {
		if ctx.Err() != nil {
			return
		}
		var list pipelinev1.PipelineRunList
		if err := s.c.List(ctx, &list, client.InNamespace(ns)); err != nil {
			s.logf(ctx, "listing the PipelineRuns of namespace %s: %v", ns, err)
			continue
		}
		seen := map[string]bool{}
		for i := range list.Items {
			pr := &list.Items[i]
			key := pr.Namespace + "/" + pr.Name
			seen[key] = true
			r := s.runs[key]
			if r != nil && r.uid != pr.UID {
				// Deleted and created again under the same name.
				s.forget(key)
				r = nil
			}
			c := pr.Status.GetCondition(apis.ConditionSucceeded)
			switch {
			case c == nil && r == nil:
				s.start(ctx, key, pr)
			case c == nil:
				// Status lost since the simulation started it: nothing to do.
			case c.IsUnknown() && r != nil:
				if s.opts.Hold == nil || s.opts.Hold(pr) {
					s.finish(ctx, key, pr, r)
				}
			case !c.IsUnknown() && r != nil:
				// Finished by something else.
				s.forget(key)
			}
		}
		for key, r := range s.runs {
			if r.namespace == ns && !seen[key] {
				// Deleted while running.
				s.forget(key)
			}
		}
	}
}

// start marks a new run Running, as Tekton does when it creates the first TaskRun,
// and decides its outcome.
func (s *Sim) start(ctx context.Context, key string, pr *pipelinev1.PipelineRun) {
	now := metav1.Now()
	pr.Status.StartTime = &now
	pr.Status.SetCondition(&apis.Condition{
		Type: apis.ConditionSucceeded, Status: corev1.ConditionUnknown,
		Reason: pipelinev1.PipelineRunReasonRunning.String(), Message: runningMessage,
		LastTransitionTime: apis.VolatileTime{Inner: now},
	})
	// The lock is held across the write, so that whoever sees the run Running also
	// sees it in Started().
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.c.Status().Update(ctx, pr); err != nil {
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			s.logf(ctx, "marking PipelineRun %s running: %v", key, err)
		}
		return
	}
	out := s.opts.Decide(pr.DeepCopy())
	if out.Fail {
		out = *failure(out.FailedTask, out.FailedStep, out.Message)
	}
	s.runs[key] = &run{namespace: pr.Namespace, uid: pr.UID, outcome: out}
	s.started = append(s.started, key)
	s.maxRunning = max(s.maxRunning, len(s.runs))
}

// forget drops a run that the simulation will not finish.
func (s *Sim) forget(key string) {
	delete(s.runs, key)
}

// finish ends a run with its outcome: the side effects of func's pipeline, the
// TaskRuns, then the PipelineRun's status. Every step is idempotent, so that a poll
// retries what the previous one left undone.
func (s *Sim) finish(ctx context.Context, key string, pr *pipelinev1.PipelineRun, r *run) {
	if !r.outcome.Fail {
		if out, err := s.deploy(ctx, pr, r.outcome.MiddlewareVersion); err != nil {
			s.logf(ctx, "deploying PipelineRun %s: %v", key, err)
			return
		} else if out != nil {
			s.logf(ctx, "PipelineRun %s fails: %s", key, out.Message)
			r.outcome = *out
		}
	}
	tasks, skipped := Tasks, 0
	if r.outcome.Fail {
		tasks, skipped = failedTasks(r.outcome.FailedTask)
	}
	var children []pipelinev1.ChildStatusReference
	for i, task := range tasks {
		failed := r.outcome.Fail && i == len(tasks)-1
		tr, err := s.taskRun(ctx, pr, task, failed, r.outcome)
		if err != nil {
			s.logf(ctx, "creating TaskRun %s/%s: %v", pr.Namespace, pr.Name+"-"+task, err)
			return
		}
		children = append(children, pipelinev1.ChildStatusReference{
			TypeMeta:         runtime.TypeMeta{APIVersion: pipelinev1.SchemeGroupVersion.String(), Kind: "TaskRun"},
			Name:             tr.Name,
			PipelineTaskName: task,
		})
	}
	cond := &apis.Condition{
		Type: apis.ConditionSucceeded, Status: corev1.ConditionTrue,
		Reason: pipelinev1.PipelineRunReasonSuccessful.String(), Message: succeededMessage,
	}
	if r.outcome.Fail {
		cond.Status, cond.Reason = corev1.ConditionFalse, pipelinev1.PipelineRunReasonFailed.String()
		cond.Message = fmt.Sprintf("Tasks Completed: %d (Failed: 1, Cancelled 0), Skipped: %d", len(tasks), skipped)
	}
	// The lock is held across the write, so that whoever sees the run finished also
	// sees it in Finished().
	s.mu.Lock()
	defer s.mu.Unlock()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &pipelinev1.PipelineRun{}
		if err := s.c.Get(ctx, client.ObjectKeyFromObject(pr), cur); err != nil {
			return err
		}
		if cur.UID != r.uid {
			return apierrors.NewNotFound(pipelinev1.Resource("pipelineruns"), pr.Name)
		}
		now := metav1.Now()
		cond.LastTransitionTime = apis.VolatileTime{Inner: now}
		cur.Status.SetCondition(cond)
		cur.Status.CompletionTime = &now
		cur.Status.ChildReferences = children
		return s.c.Status().Update(ctx, cur)
	})
	switch {
	case apierrors.IsNotFound(err):
		s.forget(key)
	case err != nil:
		s.logf(ctx, "finishing PipelineRun %s: %v", key, err)
	default:
		s.forget(key)
		s.finished = append(s.finished, key)
	}
}

// failedTasks returns the tasks that ran in a pipeline failing in task failed (the
// last one) and how many were skipped after it.
func failedTasks(failed string) (tasks []string, skipped int) {
	for i, task := range Tasks {
		if task == failed {
			return Tasks[:i+1], len(Tasks) - i - 1
		}
	}
	// A task func's pipelines do not have: it runs after fetch-sources, instead of build.
	return []string{Tasks[0], failed}, len(Tasks) - 2
}

// deploy does what a successful pipeline does: it pushes the image of the run's
// imageName parameter and deploys it by digest to the function's Knative Service.
// It returns the outcome of a failed run instead when the pipeline would fail.
func (s *Sim) deploy(ctx context.Context, pr *pipelinev1.PipelineRun, label string) (*Outcome, error) {
	image := ""
	for _, p := range pr.Spec.Params {
		if p.Name == ImageParam {
			image = p.Value.StringVal
		}
	}
	if image == "" {
		return failure(buildTask, buildStep, "no "+ImageParam+" parameter"), nil
	}
	if s.opts.Registry == nil {
		return failure(buildTask, buildStep, "tektonsim: no Registry to push "+image+" to"), nil
	}
	svc := types.NamespacedName{Namespace: pr.Namespace, Name: pr.Labels[FunctionLabel]}
	if svc.Name == "" {
		return failure("deploy", "deploy", "Knative Service not found"), nil
	}
	ref, err := s.opts.Registry.PushImage(image, label)
	if err != nil {
		return failure(buildTask, buildStep, err.Error()), nil
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ksvc := &servingv1.Service{}
		if err := s.c.Get(ctx, svc, ksvc); err != nil {
			return err
		}
		containers := ksvc.Spec.Template.Spec.Containers
		if len(containers) == 0 {
			containers = []corev1.Container{{}}
		}
		if containers[0].Image == ref {
			return nil
		}
		containers[0].Image = ref
		ksvc.Spec.Template.Spec.Containers = containers
		return s.c.Update(ctx, ksvc)
	})
	if apierrors.IsNotFound(err) {
		return failure("deploy", "deploy", "Knative Service not found"), nil
	}
	if err != nil {
		return nil, fmt.Errorf("deploying %s to Knative Service %s: %w", ref, svc, err)
	}
	return nil, nil
}

// failure returns the outcome of a run failing in step of task, with the defaults
// of Outcome for what is empty.
func failure(task, step, msg string) *Outcome {
	if task == "" {
		task = buildTask
	}
	if step == "" {
		step = buildStep
	}
	if msg == "" {
		msg = fmt.Sprintf("%q exited with code 1", "step-"+step)
	}
	return &Outcome{Fail: true, FailedTask: task, FailedStep: step, Message: msg}
}

// taskRun creates the TaskRun of a pipeline task of a finished run, unless it
// exists, and writes its status.
func (s *Sim) taskRun(ctx context.Context, pr *pipelinev1.PipelineRun, task string, failed bool, out Outcome) (*pipelinev1.TaskRun, error) {
	labels := map[string]string{}
	for k, v := range pr.Labels {
		labels[k] = v
	}
	labels["tekton.dev/pipelineRun"] = pr.Name
	labels["tekton.dev/pipelineTask"] = task
	tr := &pipelinev1.TaskRun{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: pr.Namespace, Name: pr.Name + "-" + task, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: pipelinev1.SchemeGroupVersion.String(), Kind: "PipelineRun",
				Name: pr.Name, UID: pr.UID, Controller: ptr(true), BlockOwnerDeletion: ptr(true),
			}},
		},
		Spec: pipelinev1.TaskRunSpec{TaskRef: &pipelinev1.TaskRef{Name: task}},
	}
	if err := s.c.Create(ctx, tr); apierrors.IsAlreadyExists(err) {
		if err := s.c.Get(ctx, client.ObjectKeyFromObject(tr), tr); err != nil {
			return nil, fmt.Errorf("reading the existing TaskRun: %w", err)
		}
		if tr.Status.GetCondition(apis.ConditionSucceeded) != nil {
			return tr, nil
		}
	} else if err != nil {
		return nil, fmt.Errorf("creating the TaskRun: %w", err)
	}
	now := metav1.Now()
	started := now
	if pr.Status.StartTime != nil {
		started = *pr.Status.StartTime
	}
	tr.Status.PodName = tr.Name + "-pod"
	tr.Status.StartTime, tr.Status.CompletionTime = &started, &now
	cond := &apis.Condition{
		Type: apis.ConditionSucceeded, Status: corev1.ConditionTrue,
		Reason: pipelinev1.TaskRunReasonSuccessful.String(), Message: "All Steps have completed executing",
		LastTransitionTime: apis.VolatileTime{Inner: now},
	}
	steps := []string{task}
	if failed {
		step := out.FailedStep
		cond.Status, cond.Reason, cond.Message = corev1.ConditionFalse, pipelinev1.TaskRunReasonFailed.String(), out.Message
		steps = []string{step}
		if step != "prepare" {
			steps = []string{"prepare", step}
		}
	}
	tr.Status.SetCondition(cond)
	tr.Status.Steps = nil
	for i, step := range steps {
		code, reason := int32(0), "Completed"
		if failed && i == len(steps)-1 {
			code, reason = 1, "Error"
		}
		tr.Status.Steps = append(tr.Status.Steps, pipelinev1.StepState{
			Name: step, Container: "step-" + step,
			ContainerState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: code, Reason: reason, StartedAt: started, FinishedAt: now,
			}},
		})
	}
	if err := s.c.Status().Update(ctx, tr); err != nil {
		return nil, fmt.Errorf("writing the TaskRun's status: %w", err)
	}
	return tr, nil
}

func ptr[T any](v T) *T { return &v }

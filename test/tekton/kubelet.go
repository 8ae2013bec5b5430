package tekton

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"github.com/tektoncd/pipeline/pkg/result"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Labels Tekton puts on the Pods of TaskRuns.
const (
	taskRunLabel        = "tekton.dev/taskRun"
	pipelineRunLabel    = "tekton.dev/pipelineRun"
	pipelineRunUIDLabel = "tekton.dev/pipelineRunUID"
	pipelineTaskLabel   = "tekton.dev/pipelineTask"
)

// readyAnnotation is the Pod annotation the controller sets once the Pod's sidecars
// are ready; the first step's entrypoint waits for it (through a downward API file).
const readyAnnotation = "tekton.dev/ready"

// downwardReadyFile is where the first step's entrypoint reads readyAnnotation.
const downwardReadyFile = "/tekton/downward/ready"

// stepPrefix starts the name of the container of every step.
const stepPrefix = "step-"

// Outcome is how the Pods of a PipelineRun end, once the kubelet simulation lets
// them (Options.Hold).
type Outcome struct {
	// Fail makes the Pod of pipeline task FailedTask (default "build") fail: its step
	// FailedStep exits with code 1, and the steps after it are skipped as Tekton's
	// entrypoint skips them. Tekton then fails the TaskRun with the message
	// `"step-<step>" exited with code 1: Error` (Tekton v1 appends the reason the
	// kubelet gives the container), and the PipelineRun. FailedStep defaults
	// to the step that builds the image (create for pack, build for s2i); the task's
	// last step fails when it has no step of that name. The effects of the steps
	// before it are played (effects.go): a failing func-deploy fails after the push.
	Fail                   bool
	FailedTask, FailedStep string
	// MiddlewareVersion is the middleware-version label of the image the build task
	// pushes (none when empty).
	MiddlewareVersion string
}

// Options configure a Kubelet.
type Options struct {
	// Client reads and writes the objects as the kubelet does (an admin); it needs a
	// scheme with Tekton v1, Knative Serving v1 and core v1. When nil, StartKubelet
	// makes one from its rest.Config.
	Client client.Client
	// Namespaces are the only namespaces whose Pods run (at least one).
	Namespaces []string
	// Decide returns the outcome of a PipelineRun; called once per run, when the
	// first of its Pods starts running, with a copy of the run. When nil, every run
	// succeeds with an unlabelled image. Decide, Hold and Result are called on the
	// simulation's goroutine.
	Decide func(pr *pipelinev1.PipelineRun) Outcome
	// Hold, when not nil, is called before ending each running Pod of a PipelineRun,
	// with the run as it is then; the Pod stays Running while it returns false (it is
	// polled every Interval).
	Hold func(pr *pipelinev1.PipelineRun) bool
	// Registry receives the images the build task pushes (a *registrytest.Registry),
	// with the image config labels given; it returns the image's reference by digest.
	// Without one, the build task's building step fails.
	Registry interface {
		PushImage(ref string, labels map[string]string) (string, error)
	}
	// Result, when not nil, gives the value the steps of a succeeding pipeline task
	// write to one of the results its Task declares (ok false: the default). The
	// default is "<task>.<result>" for a string result, [] for an array and an
	// object with every declared property "" for an object.
	Result func(pr *pipelinev1.PipelineRun, task, result string) (value string, ok bool)
	// Interval is the poll interval, 50ms when zero.
	Interval time.Duration
	// Logf, when set, logs what the simulation could not do (it retries), prefixed
	// "tekton kubelet simulation: ". StartKubelet logs to the test's log.
	Logf func(format string, args ...any)
	// Observe, when set, is told in one sentence each thing the simulation plays: a
	// Pod of a PipelineRun reported running, a step's effect (the image pushed, the
	// Service updated), a Pod ended. For a narration (make demo); called on the
	// simulation's goroutine.
	Observe func(msg string)
}

// Kubelet is a running kubelet simulation, for the real Tekton controller
// (StartController) in envtest, where no kubelet runs.
//
// It plays what a kubelet does with the Pods the Tekton controller creates for
// TaskRuns (those labelled tekton.dev/taskRun in Options.Namespaces): it reports
// them Running (init containers completed, containers running, Ready), and later
// ends them, Succeeded or Failed, with every step container terminated with the
// exit code and the termination message Tekton's entrypoint writes — how Tekton
// learns steps' results, start times and skips. As its entrypoint does, the first
// step waits for the controller's tekton.dev/ready annotation first.
//
// No container runs, so the kubelet simulation also plays the effects of the two
// step containers of func's build task that matter to the operator (see
// effects.go): the building step (create or build) pushes the image to
// Options.Registry, and func-deploy updates the Knative Service as the
// ServiceAccount of the run.
type Kubelet struct {
	c    client.Client
	cfg  *rest.Config
	opts Options

	// Only the simulation's goroutine uses these.
	runs map[types.UID]*run
	// ending are the final statuses of Pods whose writing failed, to retry them
	// without playing the containers' effects again.
	ending       map[types.UID]*corev1.PodStatus
	impersonated map[string]client.Client

	mu                sync.Mutex
	started, finished []string
	running           int
	maxRunning        int
	// secrets are the Secrets the Pods mounted, by namespace/PipelineRun, then
	// pipeline task.
	secrets map[string]map[string][]string

	cancel context.CancelFunc
	done   chan struct{}
}

// run is a PipelineRun whose first Pod the simulation started.
type run struct {
	namespace, name string
	outcome         Outcome
	done            bool
}

// StartKubelet starts the kubelet simulation (RunKubelet) in opts.Namespaces until
// the test ends, logging what it could not do to the test's log.
func StartKubelet(t testing.TB, cfg *rest.Config, opts Options) *Kubelet {
	t.Helper()
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	k, err := RunKubelet(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Stop)
	return k
}

// RunKubelet starts the kubelet simulation in opts.Namespaces: it polls the Pods and
// PipelineRuns there every opts.Interval until ctx ends or Stop.
func RunKubelet(ctx context.Context, cfg *rest.Config, opts Options) (*Kubelet, error) {
	if len(opts.Namespaces) == 0 {
		return nil, errors.New("tekton: no namespaces for the kubelet simulation")
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
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	k := &Kubelet{
		c: c, cfg: cfg, opts: opts,
		runs: map[types.UID]*run{}, ending: map[types.UID]*corev1.PodStatus{}, impersonated: map[string]client.Client{},
		secrets: map[string]map[string][]string{},
		cancel:  cancel, done: make(chan struct{}),
	}
	go func() {
		defer close(k.done)
		tick := time.NewTicker(opts.Interval)
		defer tick.Stop()
		for {
			k.poll(ctx)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return k, nil
}

// Stop stops the simulation and waits for its goroutine; it may be called more than
// once.
func (k *Kubelet) Stop() {
	k.cancel()
	<-k.done
}

// newClient makes a client for the objects the simulation reads and writes.
func newClient(cfg *rest.Config) (client.Client, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, pipelinev1.AddToScheme, servingv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("tekton: building the scheme: %w", err)
		}
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("tekton: creating a client: %w", err)
	}
	return c, nil
}

// Started returns the namespace/name of the PipelineRuns whose first Pod the
// simulation started running, in order.
func (k *Kubelet) Started() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.started)
}

// Finished returns the namespace/name of the started PipelineRuns that Tekton has
// since finished (Succeeded True or False), in the order the simulation saw them
// finish: up to one Interval after Tekton wrote it.
func (k *Kubelet) Finished() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.finished)
}

// MaxRunning returns the maximum number of PipelineRuns that were running at once
// (started and not finished), across the simulation's namespaces.
func (k *Kubelet) MaxRunning() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.maxRunning
}

// PodSecrets returns the Secrets the Pods of a PipelineRun mounted as volumes
// (directly or projected), by pipeline task, each list sorted: what a test asserts
// to know which task got which credentials.
func (k *Kubelet) PodSecrets(namespace, pipelineRun string) map[string][]string {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := map[string][]string{}
	for task, names := range k.secrets[namespace+"/"+pipelineRun] {
		out[task] = slices.Clone(names)
	}
	return out
}

// logf logs unless the simulation is stopping (its errors are then cancellations).
func (k *Kubelet) logf(ctx context.Context, format string, args ...any) {
	if ctx.Err() == nil && k.opts.Logf != nil {
		k.opts.Logf("tekton kubelet simulation: "+format, args...)
	}
}

// observe tells Options.Observe what the simulation played.
func (k *Kubelet) observe(format string, args ...any) {
	if k.opts.Observe != nil {
		k.opts.Observe(fmt.Sprintf(format, args...))
	}
}

// poll moves every Pod of the namespaces on, then notes the runs Tekton finished;
// what fails is retried on the next poll.
func (k *Kubelet) poll(ctx context.Context) {
	for _, ns := range k.opts.Namespaces {
		if ctx.Err() != nil {
			return
		}
		var prs pipelinev1.PipelineRunList
		if err := k.c.List(ctx, &prs, client.InNamespace(ns)); err != nil {
			k.logf(ctx, "listing the PipelineRuns of namespace %s: %v", ns, err)
			continue
		}
		byName := map[string]*pipelinev1.PipelineRun{}
		for i := range prs.Items {
			byName[prs.Items[i].Name] = &prs.Items[i]
		}
		var pods corev1.PodList
		if err := k.c.List(ctx, &pods, client.InNamespace(ns), client.HasLabels{taskRunLabel}); err != nil {
			k.logf(ctx, "listing the Pods of namespace %s: %v", ns, err)
			continue
		}
		sort.Slice(pods.Items, func(i, j int) bool {
			a, b := &pods.Items[i], &pods.Items[j]
			if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
				return a.CreationTimestamp.Before(&b.CreationTimestamp)
			}
			return a.Name < b.Name
		})
		for i := range pods.Items {
			pod := &pods.Items[i]
			var pr *pipelinev1.PipelineRun
			if p := byName[pod.Labels[pipelineRunLabel]]; p != nil && string(p.UID) == pod.Labels[pipelineRunUIDLabel] {
				pr = p
			}
			k.move(ctx, pod, pr)
		}
		k.noteFinished(ns, byName)
	}
}

// move moves a Pod on: a new one starts running; a running one ends once its
// first step may start and Hold allows it.
func (k *Kubelet) move(ctx context.Context, pod *corev1.Pod, pr *pipelinev1.PipelineRun) {
	switch {
	case pod.DeletionTimestamp != nil:
		return
	case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
		delete(k.ending, pod.UID)
		return
	case pod.Status.Phase != corev1.PodRunning:
		k.start(ctx, pod, pr)
		return
	}
	r := k.runOf(pr)
	if waitsForReady(pod) && pod.Annotations[readyAnnotation] == "" {
		return
	}
	if r != nil && k.opts.Hold != nil && !k.opts.Hold(pr.DeepCopy()) {
		return
	}
	status := k.ending[pod.UID]
	if status == nil {
		var err error
		if status, err = k.endStatus(ctx, pod, pr, r); err != nil {
			k.logf(ctx, "ending Pod %s/%s: %v", pod.Namespace, pod.Name, err)
			return
		}
		if status == nil {
			return // not yet
		}
		k.ending[pod.UID] = status
	}
	orig := pod.DeepCopy()
	pod.Status = *status
	if err := k.c.Status().Patch(ctx, pod, client.MergeFrom(orig)); err != nil {
		if !apierrors.IsNotFound(err) {
			k.logf(ctx, "writing the end of Pod %s/%s: %v", pod.Namespace, pod.Name, err)
		}
		return
	}
	delete(k.ending, pod.UID)
	k.observe("Pod %s/%s (task %s) ended: %s", pod.Namespace, pod.Name, pod.Labels[pipelineTaskLabel], status.Phase)
}

// runOf returns the simulation's run of a PipelineRun, deciding its outcome and
// noting it started when it is new; nil for no PipelineRun.
func (k *Kubelet) runOf(pr *pipelinev1.PipelineRun) *run {
	if pr == nil {
		return nil
	}
	if r := k.runs[pr.UID]; r != nil {
		return r
	}
	out := k.opts.Decide(pr.DeepCopy())
	if out.Fail {
		if out.FailedTask == "" {
			out.FailedTask = buildTask
		}
	}
	r := &run{namespace: pr.Namespace, name: pr.Name, outcome: out}
	k.runs[pr.UID] = r
	k.mu.Lock()
	defer k.mu.Unlock()
	k.started = append(k.started, pr.Namespace+"/"+pr.Name)
	k.running++
	k.maxRunning = max(k.maxRunning, k.running)
	return r
}

// noteFinished notes the started runs of namespace ns that Tekton finished, and
// forgets those deleted.
func (k *Kubelet) noteFinished(ns string, byName map[string]*pipelinev1.PipelineRun) {
	for uid, r := range k.runs {
		if r.namespace != ns || r.done {
			continue
		}
		pr := byName[r.name]
		switch {
		case pr == nil || pr.UID != uid:
			delete(k.runs, uid)
			k.mu.Lock()
			k.running--
			k.mu.Unlock()
		case pr.IsDone():
			r.done = true
			k.mu.Lock()
			k.running--
			k.finished = append(k.finished, r.namespace+"/"+r.name)
			k.mu.Unlock()
		}
	}
}

// start reports a Pod running, as a kubelet does once its init containers have
// completed and its containers started, and notes the Secrets it mounts.
func (k *Kubelet) start(ctx context.Context, pod *corev1.Pod, pr *pipelinev1.PipelineRun) {
	now := metav1.Now()
	orig := pod.DeepCopy()
	pod.Status.Phase = corev1.PodRunning
	pod.Status.StartTime = &now
	pod.Status.Conditions = conditions(now, corev1.ConditionTrue, "")
	pod.Status.InitContainerStatuses = nil
	for _, c := range pod.Spec.InitContainers {
		pod.Status.InitContainerStatuses = append(pod.Status.InitContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, Ready: true,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 0, Reason: "Completed", StartedAt: now, FinishedAt: now,
			}},
		})
	}
	pod.Status.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, Ready: true, Started: ptr(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		})
	}
	if err := k.c.Status().Patch(ctx, pod, client.MergeFrom(orig)); err != nil {
		if !apierrors.IsNotFound(err) {
			k.logf(ctx, "starting Pod %s/%s: %v", pod.Namespace, pod.Name, err)
		}
		return
	}
	k.runOf(pr)
	k.observe("Pod %s/%s (task %s of PipelineRun %s) running: init containers done, %d containers started",
		pod.Namespace, pod.Name, pod.Labels[pipelineTaskLabel], pod.Labels[pipelineRunLabel], len(pod.Spec.Containers))
	if name := pod.Labels[pipelineRunLabel]; name != "" {
		k.noteSecrets(pod.Namespace+"/"+name, pod.Labels[pipelineTaskLabel], pod)
	}
}

// noteSecrets notes the Secrets a Pod of a PipelineRun mounts.
func (k *Kubelet) noteSecrets(runKey, task string, pod *corev1.Pod) {
	var names []string
	for _, v := range pod.Spec.Volumes {
		if v.Secret != nil {
			names = append(names, v.Secret.SecretName)
		}
		if v.Projected != nil {
			for _, s := range v.Projected.Sources {
				if s.Secret != nil {
					names = append(names, s.Secret.Name)
				}
			}
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.secrets[runKey] == nil {
		k.secrets[runKey] = map[string][]string{}
	}
	k.secrets[runKey][task] = names
}

// waitsForReady reports whether a step of the Pod waits for readyAnnotation, as
// the first does when the controller may run sidecars.
func waitsForReady(pod *corev1.Pod) bool {
	for _, c := range pod.Spec.Containers {
		for i, arg := range c.Args {
			if arg == "-wait_file" && i+1 < len(c.Args) && c.Args[i+1] == downwardReadyFile {
				return true
			}
		}
	}
	return false
}

// conditions returns the Pod conditions a kubelet reports, Ready and
// ContainersReady with status ready and reason.
func conditions(now metav1.Time, ready corev1.ConditionStatus, reason string) []corev1.PodCondition {
	out := make([]corev1.PodCondition, 0, 4)
	for _, c := range []struct {
		t      corev1.PodConditionType
		status corev1.ConditionStatus
		reason string
	}{
		{corev1.PodReadyToStartContainers, corev1.ConditionTrue, ""},
		{corev1.PodInitialized, corev1.ConditionTrue, ""},
		{corev1.ContainersReady, ready, reason},
		{corev1.PodReady, ready, reason},
	} {
		out = append(out, corev1.PodCondition{Type: c.t, Status: c.status, Reason: c.reason, LastTransitionTime: now})
	}
	return out
}

// endStatus returns the status of a Pod that ended: its steps play their run's
// outcome and the effects of their containers (effects.go). It returns nil while
// the TaskRun has no resolved Task yet.
func (k *Kubelet) endStatus(ctx context.Context, pod *corev1.Pod, pr *pipelinev1.PipelineRun, r *run) (*corev1.PodStatus, error) {
	tr := &pipelinev1.TaskRun{}
	if err := k.c.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: pod.Labels[taskRunLabel]}, tr); err != nil {
		return nil, fmt.Errorf("reading TaskRun %s: %w", pod.Labels[taskRunLabel], err)
	}
	if tr.Status.TaskSpec == nil {
		return nil, nil
	}
	var steps []string
	for _, c := range pod.Spec.Containers {
		if strings.HasPrefix(c.Name, stepPrefix) {
			steps = append(steps, c.Name)
		}
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("no step containers")
	}
	task := pod.Labels[pipelineTaskLabel]
	failAt := -1
	if r != nil && r.outcome.Fail && task == r.outcome.FailedTask {
		if r.outcome.FailedStep == "" {
			failAt = buildStepIndex(steps)
		} else if failAt = slices.Index(steps, stepPrefix+r.outcome.FailedStep); failAt < 0 {
			failAt = len(steps) - 1
		}
	}
	failAt = k.effects(ctx, pod, pr, r, task, steps, failAt)
	// The results, written by the last step, when every step succeeds.
	var results []result.RunResult
	if failAt < 0 {
		results = k.results(pr, task, tr)
	}

	now := metav1.Now()
	status := pod.Status.DeepCopy()
	status.Phase = corev1.PodSucceeded
	if failAt >= 0 {
		status.Phase = corev1.PodFailed
	}
	status.Conditions = conditions(now, corev1.ConditionFalse, "PodCompleted")
	started := now
	if status.StartTime != nil {
		started = *status.StartTime
	}
	for i := range status.ContainerStatuses {
		cs := &status.ContainerStatuses[i]
		cs.Ready, cs.Started = false, ptr(false)
		term := &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: started, FinishedAt: now}
		if step := slices.Index(steps, cs.Name); step >= 0 {
			msg := []result.RunResult{{Key: "StartedAt", Value: started.UTC().Format(startedAtFormat), ResultType: result.InternalTektonResultType}}
			switch {
			case failAt < 0 && step == len(steps)-1:
				msg = append(msg, results...)
			case failAt >= 0 && step == failAt:
				term.ExitCode, term.Reason = 1, "Error"
			case failAt >= 0 && step > failAt:
				// Tekton's entrypoint skips the steps after a failed one, and exits 1.
				term.ExitCode, term.Reason = 1, "Error"
				msg = append(msg, result.RunResult{Key: "Reason", Value: "Skipped", ResultType: result.InternalTektonResultType})
			}
			content, err := json.Marshal(msg)
			if err != nil {
				return nil, fmt.Errorf("writing the termination message of %s: %w", cs.Name, err)
			}
			term.Message = string(content)
		}
		cs.State = corev1.ContainerState{Terminated: term}
	}
	return status, nil
}

func ptr[T any](v T) *T { return &v }

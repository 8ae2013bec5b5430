package function

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"knative.dev/pkg/apis"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/reconciler/function/resources"
	"github.com/fnops/func-operator/pkg/registry"
	"github.com/fnops/func-operator/pkg/source"
)

// Timings of a build's life that are not configurable.
const (
	// launchGrace is how long a build may stay Starting, without a PipelineRun, when
	// this process did not launch it: another process (before a restart) may still be
	// creating its PipelineRun. After it, the launch counts as lost and is retried.
	launchGrace = 2 * time.Minute
	// deployGrace is how long after a successful PipelineRun the Knative Service may
	// still run the old image before the build counts as failed.
	deployGrace = 2 * time.Minute
	// pollWhileWaiting is the requeue while waiting for a launch or a deploy.
	pollWhileWaiting = 2 * time.Second
	// maxMessage bounds a build message copied from Tekton or the func library.
	maxMessage = 1024
)

// observeBuild follows the Function's build through its PipelineRun, mapped back by
// label: it adopts a run it does not know (after a restart, or a lost status write),
// and records how a run ended. It runs before every other step, so a build is
// followed even while the source or the Service cannot be read.
func (r *Reconciler) observeBuild(ctx context.Context, fn *v1alpha1.Function) error {
	if !r.Tekton || r.Launcher == nil {
		return nil
	}
	key := client.ObjectKeyFromObject(fn)
	runs, err := r.pipelineRuns(ctx, fn)
	if err != nil {
		return err
	}
	b := fn.Status.Build
	if b == nil || (b.Phase != v1alpha1.BuildPhaseStarting && b.Phase != v1alpha1.BuildPhaseRunning) {
		for i := range runs {
			if pr := &runs[i]; !pr.IsDone() && !r.Launcher.Busy(key) {
				// A run the status does not show: adopt it rather than start another.
				adopted := &v1alpha1.BuildStatus{ID: pr.Labels[resources.LabelBuildID], Phase: v1alpha1.BuildPhaseRunning,
					PipelineRun: pr.Name, StartTime: startTime(pr)}
				if b != nil {
					adopted.Failures = b.Failures
				}
				fn.Status.Build = adopted
				r.Launcher.Queue.Running(key)
				return nil
			}
		}
		return nil
	}

	var pr *pipelinev1.PipelineRun
	for i := range runs {
		if runs[i].Labels[resources.LabelBuildID] == b.ID {
			pr = &runs[i]
		}
	}
	now := r.now()
	if pr == nil {
		launched, ended, launchErr := r.Launcher.Launched(key, b.ID)
		switch {
		case launched && !ended:
			r.requeueWithin(ctx, pollWhileWaiting) // the PipelineRun is on its way
		case launched && launchErr != nil:
			r.buildFailed(fn, now, "", "", fmt.Sprintf("starting the build failed: %s", launchErr))
			r.Launcher.Done(key, b.ID)
		case b.Phase == v1alpha1.BuildPhaseRunning:
			r.buildFailed(fn, now, "", "", fmt.Sprintf("PipelineRun %s was deleted before it finished", b.PipelineRun))
			r.Launcher.Done(key, b.ID)
		case b.StartTime != nil && now.Sub(b.StartTime.Time) < launchGrace:
			r.requeueWithin(ctx, launchGrace-now.Sub(b.StartTime.Time))
		default:
			// Launched by a process that is gone, and no PipelineRun came of it.
			b.Phase, b.Message = v1alpha1.BuildPhaseFailed, "the build's launch was interrupted before its PipelineRun existed (the operator restarted?): it is retried now"
			b.CompletionTime, b.RetryAfter = &metav1.Time{Time: now}, &metav1.Time{Time: now}
			r.Launcher.Queue.Release(key)
		}
		return nil
	}

	b.PipelineRun = pr.Name
	c := pr.Status.GetCondition(apis.ConditionSucceeded)
	switch {
	case c == nil || c.IsUnknown():
		b.Phase = v1alpha1.BuildPhaseRunning
		if st := startTime(pr); st != nil {
			b.StartTime = st
		}
		r.Launcher.Queue.Running(key)
	case c.IsTrue():
		b.Phase, b.Failures, b.RetryAfter = v1alpha1.BuildPhaseSucceeded, 0, nil
		b.FailedTask, b.FailedStep = "", ""
		b.CompletionTime = completionTime(pr, now)
		b.Message = fmt.Sprintf("PipelineRun %s succeeded", pr.Name)
		r.Launcher.Queue.Release(key)
		r.Launcher.Done(key, b.ID)
	default:
		task, step, msg := r.failedTask(ctx, pr)
		r.buildFailed(fn, completionTime(pr, now).Time, task, step, msg)
		r.Launcher.Done(key, b.ID)
	}
	return nil
}

// buildFailed records a failed build and when it may be retried.
func (r *Reconciler) buildFailed(fn *v1alpha1.Function, at time.Time, task, step, msg string) {
	b := fn.Status.Build
	b.Phase, b.FailedTask, b.FailedStep = v1alpha1.BuildPhaseFailed, task, step
	b.Message = bound(msg)
	b.Failures++
	b.CompletionTime = &metav1.Time{Time: at}
	b.RetryAfter = &metav1.Time{Time: at.Add(r.Config.Load().BuildRetryDelay(b.Failures))}
	r.Launcher.Queue.Release(client.ObjectKeyFromObject(fn))
}

// reconcileRebuild rebuilds a Function whose middleware is outdated, when policy and
// the fleet budget allow: through func's Tekton pipeline, launched after the status
// that records the build is written.
func (r *Reconciler) reconcileRebuild(ctx context.Context, fn *v1alpha1.Function) error {
	if r.Launcher == nil {
		return nil
	}
	key := client.ObjectKeyFromObject(fn)
	mw, b := fn.Status.Middleware, fn.Status.Build
	if b != nil {
		switch b.Phase {
		case v1alpha1.BuildPhaseStarting, v1alpha1.BuildPhaseRunning:
			fn.Status.MarkRebuilding("build %s %s: PipelineRun %s rebuilds the function to bring %s (running: %s)",
				b.ID, strings.ToLower(b.Phase), orDefault(b.PipelineRun, "(being created)"), b.ToMiddleware, orDefault(b.FromMiddleware, "unknown"))
			return nil
		case v1alpha1.BuildPhaseSucceeded:
			if done, err := r.verifyRebuild(ctx, fn); done || err != nil {
				return err
			}
		}
	}
	if !mw.PendingRebuild {
		if b != nil && b.Phase == v1alpha1.BuildPhaseQueued {
			fn.Status.Build = nil // no longer needed
		}
		// Only a queued Function leaves the queue: Forget wakes the head of the
		// queue, which every up-to-date Function's check must not do.
		if r.Launcher.Queue.IsWaiting(key) {
			r.Launcher.Queue.Forget(key)
		}
		return nil
	}
	if r.Launcher.Busy(key) {
		// Launched by this process, and not yet in the status this reconcile read.
		fn.Status.MarkRebuilding("a build of the function is starting")
		return nil
	}
	if !r.Tekton {
		fn.Status.MarkRebuildNotPossible("%s is available (running: %s) but the cluster has no Tekton Pipelines API (tekton.dev/v1 PipelineRun): install Tekton Pipelines and restart the operator",
			mw.Available, orDefault(mw.Current, "unknown"))
		return &stallingError{reason: v1alpha1.ReasonRebuildNotPossible, message: "Tekton Pipelines is not installed"}
	}
	if fn.Spec.Repository.AuthSecretRef != nil {
		fn.Status.MarkRebuildNotPossible("%s is available (running: %s) but the repository is private: func %s's pipeline clones it with the Tekton Hub git-clone task, which gets no credentials; rebuild it with `func deploy --remote` and a credentialed pipeline",
			mw.Available, orDefault(mw.Current, "unknown"), mw.FuncVersion)
		return &stallingError{reason: v1alpha1.ReasonRebuildNotPossible, message: "private repositories cannot be rebuilt by func's pipeline"}
	}
	meta, err := r.functionMetadata(ctx, fn)
	if err != nil {
		return err
	}
	if err := funclib.CheckBuildable(meta); err != nil {
		fn.Status.MarkRebuildNotPossible("%s is available (running: %s) but func's pipeline cannot build the function: %s",
			mw.Available, orDefault(mw.Current, "unknown"), err)
		return &stallingError{reason: v1alpha1.ReasonRebuildNotPossible, message: err.Error()}
	}

	now := r.now()
	if b != nil && b.Phase == v1alpha1.BuildPhaseFailed && b.RetryAfter != nil && now.Before(b.RetryAfter.Time) {
		fn.Status.MarkBuildFailed("%s; retry %d at %s", failureSummary(b), b.Failures+1, b.RetryAfter.UTC().Format(time.RFC3339))
		r.requeueWithin(ctx, b.RetryAfter.Sub(now))
		return nil
	}

	cfg := r.Config.Load()
	queuedAt := metav1.NewTime(now)
	if b != nil && b.Phase == v1alpha1.BuildPhaseQueued && b.QueuedAt != nil {
		queuedAt = *b.QueuedAt
	}
	var failures int32
	if b != nil {
		failures = b.Failures
	}
	admitted, position, length := r.Launcher.Queue.Admit(key, queuedAt.Time)
	if !admitted {
		fn.Status.Build = &v1alpha1.BuildStatus{Phase: v1alpha1.BuildPhaseQueued, QueuedAt: &queuedAt,
			QueuePosition: int32(position), Failures: failures}
		fn.Status.MarkRebuildQueued("%s is available (running: %s): the rebuild waits in the queue at position %d of %d; at most %d rebuilds run at once (ConfigMap %s, key %s)",
			mw.Available, orDefault(mw.Current, "unknown"), position, length, cfg.MaxConcurrentBuilds, config.ConfigMapName, config.KeyMaxConcurrentBuilds)
		return nil
	}
	if err := r.ensurePipelineAccess(ctx, fn, cfg, meta); err != nil {
		r.Launcher.Queue.Release(key)
		return err
	}
	id := newBuildID()
	start := metav1.NewTime(now)
	fn.Status.Build = &v1alpha1.BuildStatus{
		ID: id, Phase: v1alpha1.BuildPhaseStarting, StartTime: &start, QueuedAt: &queuedAt,
		Commit: fn.Status.Git.ObservedCommit, FromImage: fn.Status.Deployment.Image,
		FromMiddleware: mw.Current, ToMiddleware: mw.Available, Failures: failures,
	}
	fn.Status.MarkRebuilding("build %s starting: rebuilding commit %s to bring %s (running: %s)",
		id, v1alpha1.ShortCommit(fn.Status.Git.ObservedCommit), mw.Available, orDefault(mw.Current, "unknown"))
	req := resources.BuildRequest(fn, id, meta, cfg.BuilderImages)
	req.Credentials = r.registryCredentials(fn)
	req.WorkDir = r.WorkDir
	stateFrom(ctx).afterPatch(func(patched bool) {
		if patched {
			r.Launcher.Launch(key, id, req)
		} else {
			r.Launcher.Queue.Release(key)
		}
	})
	r.requeueWithin(ctx, pollWhileWaiting)
	return nil
}

// verifyRebuild follows a successful build until the Knative Service runs its image.
// It returns done when the build's outcome is decided for this reconcile.
func (r *Reconciler) verifyRebuild(ctx context.Context, fn *v1alpha1.Function) (bool, error) {
	mw, b := fn.Status.Middleware, fn.Status.Build
	if mw.LastRebuild != nil && b.CompletionTime != nil && mw.LastRebuild.Equal(b.CompletionTime) {
		return false, nil // recorded already
	}
	now := r.now()
	if fn.Status.Deployment.Image == b.FromImage && b.FromImage != "" {
		if b.CompletionTime != nil && now.Sub(b.CompletionTime.Time) > deployGrace {
			r.buildFailed(fn, now, "", "", fmt.Sprintf("PipelineRun %s succeeded but the Knative Service still runs %s after %s", b.PipelineRun, b.FromImage, deployGrace))
			fn.Status.MarkBuildFailed("%s", failureSummary(b))
			return true, nil
		}
		fn.Status.MarkRebuilding("PipelineRun %s succeeded: waiting for the Knative Service to run the new image", b.PipelineRun)
		r.requeueWithin(ctx, pollWhileWaiting)
		return true, nil
	}
	if mw.PendingRebuild {
		r.buildFailed(fn, now, "", "", fmt.Sprintf("PipelineRun %s succeeded but the new image %s runs middleware %s; %s is available",
			b.PipelineRun, fn.Status.Deployment.Image, orDefault(mw.Current, "unknown"), mw.Available))
		fn.Status.MarkBuildFailed("%s", failureSummary(b))
		return true, nil
	}
	fn.Status.Middleware.LastRebuild = b.CompletionTime.DeepCopy()
	fn.Status.Deployment.ImageBuilt = b.CompletionTime.DeepCopy()
	msg := fmt.Sprintf("Middleware updated from %s to %s", orDefault(b.FromMiddleware, "unknown"), orDefault(mw.Current, "unknown"))
	b.Message = fmt.Sprintf("%s by PipelineRun %s; the Service runs %s", msg, b.PipelineRun, fn.Status.Deployment.Image)
	fn.Status.AddHistory(v1alpha1.HistoryEntry{Time: *b.CompletionTime.DeepCopy(), Message: msg})
	r.Recorder.Eventf(fn, corev1.EventTypeNormal, "Rebuilt", "%s (PipelineRun %s)", msg, b.PipelineRun)
	return false, nil
}

// failureSummary describes a failed build for the condition message.
func failureSummary(b *v1alpha1.BuildStatus) string {
	where := ""
	switch {
	case b.FailedTask != "" && b.FailedStep != "":
		where = fmt.Sprintf(" in task %s, step %s", b.FailedTask, b.FailedStep)
	case b.FailedTask != "":
		where = fmt.Sprintf(" in task %s", b.FailedTask)
	}
	return fmt.Sprintf("build %s failed%s (%d in a row): %s; the running revision keeps serving", b.ID, where, b.Failures, b.Message)
}

// pipelineRuns returns the Function's PipelineRuns, newest first.
func (r *Reconciler) pipelineRuns(ctx context.Context, fn *v1alpha1.Function) ([]pipelinev1.PipelineRun, error) {
	var list pipelinev1.PipelineRunList
	if err := r.Client.List(ctx, &list, client.InNamespace(fn.Namespace),
		client.MatchingLabels{resources.LabelFunction: fn.Name, resources.LabelManagedBy: resources.ManagedBy}); err != nil {
		return nil, fmt.Errorf("listing the PipelineRuns of Function %s: %w", fn, err)
	}
	runs := list.Items
	sort.Slice(runs, func(i, j int) bool { return runs[j].CreationTimestamp.Before(&runs[i].CreationTimestamp) })
	return runs, nil
}

// failedTask finds the task and step that failed a PipelineRun, from its TaskRuns.
func (r *Reconciler) failedTask(ctx context.Context, pr *pipelinev1.PipelineRun) (task, step, msg string) {
	msg = "PipelineRun " + pr.Name + " failed"
	if c := pr.Status.GetCondition(apis.ConditionSucceeded); c != nil && c.Message != "" {
		msg = fmt.Sprintf("PipelineRun %s failed (%s): %s", pr.Name, c.Reason, c.Message)
	}
	for _, child := range pr.Status.ChildReferences {
		if child.Kind != "TaskRun" {
			continue
		}
		tr := &pipelinev1.TaskRun{}
		if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: pr.Namespace, Name: child.Name}, tr); err != nil {
			continue
		}
		c := tr.Status.GetCondition(apis.ConditionSucceeded)
		if c == nil || !c.IsFalse() {
			continue
		}
		task = child.PipelineTaskName
		for _, s := range tr.Status.Steps {
			if s.Terminated != nil && s.Terminated.ExitCode != 0 {
				step = s.Name
				break
			}
		}
		return task, step, fmt.Sprintf("TaskRun %s: %s", tr.Name, c.Message)
	}
	return "", "", msg
}

// functionMetadata reads func.yaml at the observed commit, from the Fetcher's cache.
func (r *Reconciler) functionMetadata(ctx context.Context, fn *v1alpha1.Function) (funclib.Metadata, error) {
	auth, err := r.repositoryAuth(ctx, fn)
	if err != nil {
		return funclib.Metadata{}, err
	}
	g := fn.Status.Git
	res, err := r.Fetcher.Read(ctx, fn.Spec.Repository.URL, source.Head{Branch: g.ResolvedBranch, Commit: g.ObservedCommit},
		fn.Spec.Repository.CleanPath(), auth, r.Config.Load().GitTimeout)
	if err != nil {
		return funclib.Metadata{}, fmt.Errorf("reading func.yaml for the build: %w", err)
	}
	return res.Metadata, nil
}

// registryCredentials returns the pipeline's registry credentials, read from the
// Function's registry Secret when the build starts.
func (r *Reconciler) registryCredentials(fn *v1alpha1.Function) func(ctx context.Context, image string) (string, string, error) {
	fn = fn.DeepCopy()
	return func(ctx context.Context, image string) (string, string, error) {
		kc, err := r.registryKeychain(ctx, fn)
		if err != nil {
			return "", "", fmt.Errorf("reading the registry Secret: %w", err)
		}
		return registry.Login(kc, image)
	}
}

func newBuildID() string { return rand.String(10) }

func startTime(pr *pipelinev1.PipelineRun) *metav1.Time {
	if pr.Status.StartTime != nil {
		return pr.Status.StartTime.DeepCopy()
	}
	t := pr.CreationTimestamp
	return &t
}

func completionTime(pr *pipelinev1.PipelineRun, now time.Time) *metav1.Time {
	if pr.Status.CompletionTime != nil {
		return pr.Status.CompletionTime.DeepCopy()
	}
	return &metav1.Time{Time: now}
}

func bound(s string) string {
	if len(s) > maxMessage {
		return s[:maxMessage] + "…"
	}
	return s
}

// buildObjectKinds are the kinds of the objects func's provider creates for a build.
var buildObjectKinds = []schema.GroupVersionKind{
	pipelinev1.SchemeGroupVersion.WithKind("PipelineRun"),
	pipelinev1.SchemeGroupVersion.WithKind("Pipeline"),
	corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"),
	corev1.SchemeGroupVersion.WithKind("Secret"),
}

// deleteBuildObjects deletes what the builds of a deleted Function left: its
// PipelineRuns (a running one is stopped), Pipeline, PVC and registry Secret, found by
// the operator's labels. func's provider deletes a PipelineRun only when cancelled
// while it follows the run, not while it is still creating it, so the operator does.
func (r *Reconciler) deleteBuildObjects(ctx context.Context, key types.NamespacedName) error {
	var errs []error
	for _, gvk := range buildObjectKinds {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := r.APIReader.List(ctx, list, client.InNamespace(key.Namespace),
			client.MatchingLabels{resources.LabelFunction: key.Name, resources.LabelManagedBy: resources.ManagedBy}); err != nil {
			errs = append(errs, fmt.Errorf("listing the %ss of deleted Function %s: %w", gvk.Kind, key, err))
			continue
		}
		for i := range list.Items {
			o := &list.Items[i]
			o.SetGroupVersionKind(gvk)
			if err := r.Client.Delete(ctx, o, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
				errs = append(errs, fmt.Errorf("deleting %s %s/%s: %w", gvk.Kind, o.Namespace, o.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

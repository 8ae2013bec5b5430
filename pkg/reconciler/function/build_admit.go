package function

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/git"
	"github.com/fnops/func-operator/pkg/reconciler/function/resources"
	"github.com/fnops/func-operator/pkg/registry"
	"github.com/fnops/func-operator/pkg/rerror"
	"github.com/fnops/func-operator/pkg/tenancy"
)

// reconcileRebuild rebuilds a Function whose middleware is outdated (obs.middleware),
// when policy and the fleet budget allow: through func's Tekton pipeline, launched
// after the status that records the build is written.
func (r *Reconciler) reconcileRebuild(ctx context.Context, fn *v1alpha1.Function, obs *observation) (Result, error) {
	if r.Launcher == nil {
		return Result{}, nil
	}
	key := client.ObjectKeyFromObject(fn)
	mw, b := obs.middleware, fn.Status.Build
	if b != nil {
		switch b.Phase {
		case v1alpha1.BuildPhaseStarting, v1alpha1.BuildPhaseRunning:
			fn.Status.MarkRebuilding("build %s %s: PipelineRun %s rebuilds the function to bring %s (running: %s)",
				b.ID, strings.ToLower(b.Phase), orDefault(b.PipelineRun, "(being created)"), b.ToMiddleware, orDefault(b.FromMiddleware, "unknown"))
			return Result{}, nil
		case v1alpha1.BuildPhaseSucceeded:
			if res, decided := r.verifyRebuild(fn, obs); decided {
				return res, nil
			}
		}
	}
	if !mw.rebuildDue {
		r.leaveQueue(fn)
		return Result{}, nil
	}
	if r.Launcher.Busy(key) {
		// Launched by this process, and not yet in the status this reconcile read.
		fn.Status.MarkRebuilding("a build of the function is starting")
		return Result{}, nil
	}
	running := orDefault(mw.current, "unknown")
	if !r.tektonServed() {
		r.leaveQueue(fn)
		fn.Status.MarkRebuildNotPossible("%s is available (running: %s) but the cluster has no Tekton Pipelines API (tekton.dev/v1 PipelineRun): "+
			"install Tekton Pipelines: the operator picks it up within a minute, without a restart",
			mw.available, running)
		return Result{}, rerror.NewStalling(v1alpha1.ReasonRebuildNotPossible, "Tekton Pipelines is not installed")
	}
	meta, err := r.buildMetadata(ctx, fn, obs.source)
	if err != nil {
		return Result{}, err
	}
	if err := funclib.CheckBuildable(meta); err != nil {
		r.leaveQueue(fn)
		fn.Status.MarkRebuildNotPossible("%s is available (running: %s) but func's pipeline cannot build the function: %s",
			mw.available, running, err)
		return Result{}, rerror.NewStalling(v1alpha1.ReasonRebuildNotPossible, "func's pipeline cannot build the function: %w", err)
	}

	// The clone step gets the credentials the check read the repository with.
	var cloneCreds *git.CloneCredentials
	if obs.source.auth != nil {
		cloneCreds, err = obs.source.auth.ForClone()
		if err == nil && cloneCreds != nil {
			err = funclib.CheckGitCredentials(fn.Spec.Repository.URL, gitCredentials(cloneCreds))
		}
		if err != nil {
			r.leaveQueue(fn)
			fn.Status.MarkRebuildNotPossible("%s is available (running: %s) but the repository's credentials cannot be handed to the build's clone step: %s",
				mw.available, running, err)
			return Result{}, rerror.NewStalling(v1alpha1.ReasonRebuildNotPossible, "the clone step's credentials: %w", err)
		}
	}

	cfg := r.Config.Load()
	// Only a Function that may build now holds a place in the queue.
	if err := r.Access.Check(ctx, fn.Namespace, cfg.PipelineServiceAccount); err != nil {
		if tenancy.IsNotOnboarded(err) {
			r.leaveQueue(fn)
			fn.Status.MarkNamespaceNotOnboarded("%s is available (running: %s) but %s", mw.available, running, err)
		}
		return Result{}, err
	}

	now := r.now()
	if b != nil && b.Phase == v1alpha1.BuildPhaseFailed && b.RetryAfter != nil && now.Before(b.RetryAfter.Time) {
		fn.Status.MarkBuildFailed("%s; retry %d at %s", failureSummary(b), b.Failures+1, b.RetryAfter.UTC().Format(time.RFC3339))
		return requeueAfter(b.RetryAfter.Sub(now)), nil
	}

	queuedAt := metav1.NewTime(now)
	if b != nil && b.Phase == v1alpha1.BuildPhaseQueued && b.QueuedAt != nil {
		queuedAt = *b.QueuedAt
	}
	var failures int32
	if b != nil {
		failures = b.Failures
	}
	admitted, position, length := r.Queue.Admit(key, queuedAt.Time)
	if !admitted {
		fn.Status.Build = &v1alpha1.BuildStatus{Phase: v1alpha1.BuildPhaseQueued, QueuedAt: &queuedAt,
			QueuePosition: int32(position), Failures: failures}
		fn.Status.MarkRebuildQueued("%s is available (running: %s): the rebuild waits in the queue at position %d of %d; at most %d rebuilds run at once (ConfigMap %s, key %s)",
			mw.available, running, position, length, cfg.MaxConcurrentBuilds, config.ConfigMapName, config.KeyMaxConcurrentBuilds)
		return Result{}, nil
	}
	if err := r.ensurePullSecret(ctx, fn, meta); err != nil {
		r.Queue.Release(key)
		return Result{}, err
	}
	id := rand.String(10)
	start := metav1.NewTime(now)
	commit := obs.source.head.Commit
	fn.Status.Build = &v1alpha1.BuildStatus{
		ID: id, Phase: v1alpha1.BuildPhaseStarting, StartTime: &start, QueuedAt: &queuedAt,
		Commit: commit, FromImage: obs.deployment.image,
		FromMiddleware: mw.current, ToMiddleware: mw.available, Failures: failures, ServiceUID: obs.deployment.uid,
	}
	fn.Status.MarkRebuilding("build %s starting: rebuilding commit %s to bring %s (running: %s)",
		id, v1alpha1.ShortCommit(commit), mw.available, running)
	req := resources.BuildRequest(fn, id, commit, meta, cfg.BuilderImages)
	req.Labels[resources.LabelServiceUID] = string(obs.deployment.uid)
	req.Credentials = r.registryCredentials(fn)
	req.GitCredentials = gitCredentials(cloneCreds)
	req.WorkDir = r.WorkDir
	return Result{
		RequeueAfter: pollWhileWaiting,
		// Launched only once the status records the build: a stale read cannot start a second one.
		AfterPatch: func(patched bool) {
			if patched {
				r.Launcher.Launch(key, id, req)
			} else {
				r.Queue.Release(key)
			}
		},
	}, nil
}

// gitCredentials are c for the func library's build, nil when anonymous.
func gitCredentials(c *git.CloneCredentials) *funclib.GitCredentials {
	if c == nil {
		return nil
	}
	return &funclib.GitCredentials{Username: c.Username, Password: c.Password,
		SSHPrivateKey: c.SSHPrivateKey, KnownHosts: c.KnownHosts, CABundle: c.CABundle}
}

// leaveQueue takes a Function that cannot or need not be rebuilt now out of the queue,
// and its Queued build out of the status, so that it holds no place a slot would wait
// on. Only a queued Function leaves: Forget wakes the head of the queue, which every
// up-to-date Function's check must not do. A Queued status counts too, before the
// queue is seeded from it.
func (r *Reconciler) leaveQueue(fn *v1alpha1.Function) {
	if r.Launcher == nil {
		return // no rebuilds, no queue
	}
	key := client.ObjectKeyFromObject(fn)
	queued := fn.Status.Build != nil && fn.Status.Build.Phase == v1alpha1.BuildPhaseQueued
	if queued {
		fn.Status.Build = nil
	}
	if queued || r.Queue.IsWaiting(key) {
		r.Queue.Forget(key)
	}
}

// buildMetadata returns func.yaml at src.head: as the source step read it, or from the
// Fetcher's cache (a clone when a restart emptied it).
func (r *Reconciler) buildMetadata(ctx context.Context, fn *v1alpha1.Function, src sourceArtifact) (funclib.Metadata, error) {
	if src.metadata != nil {
		return *src.metadata, nil
	}
	res, err := r.Fetcher.Read(ctx, fn.Spec.Repository.URL, src.head, fn.Spec.Repository.CleanPath(), src.auth, r.Config.Load().GitTimeout)
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
		kc, _, err := r.registryKeychain(ctx, fn)
		if err != nil {
			return "", "", fmt.Errorf("reading the registry Secret: %w", err)
		}
		return registry.Login(kc, image)
	}
}

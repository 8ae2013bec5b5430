package function

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/git"
	"github.com/fnops/func-operator/pkg/rebuild"
	"github.com/fnops/func-operator/pkg/reconciler/function/resources"
	"github.com/fnops/func-operator/pkg/registry"
	"github.com/fnops/func-operator/pkg/rerror"
	"github.com/fnops/func-operator/pkg/tenancy"
)

// reconcileRebuild is the rebuild step: it rebuilds a Function whose middleware is
// outdated (obs.middleware), when policy and the fleet budget allow, through func's
// Tekton pipeline, launched after the status that records the build is written. A
// Function that cannot or need not build now gives its place in the queue up.
func (r *Reconciler) reconcileRebuild(ctx context.Context, fn *v1alpha1.Function, obs *observation) (Result, error) {
	if r.Builds == nil {
		return Result{}, nil
	}
	res, verdict, err := r.rebuild(ctx, fn, obs)
	if verdict == cannotBuildNow {
		r.giveUpPlace(fn)
	}
	return res, err
}

// rebuildVerdict is what the rebuild step concluded of the Function's place in the queue.
type rebuildVerdict int

const (
	// mayBuild: the Function keeps its place in the queue, if it holds one.
	mayBuild rebuildVerdict = iota
	// cannotBuildNow: the Function cannot or need not build now: a queued one gives
	// its place up rather than block the queue's head.
	cannotBuildNow
)

// rebuild is reconcileRebuild's work: the build in flight or just ended, then whether
// a rebuild may start, then the queue.
func (r *Reconciler) rebuild(ctx context.Context, fn *v1alpha1.Function, obs *observation) (Result, rebuildVerdict, error) {
	key := client.ObjectKeyFromObject(fn)
	mw, b := obs.middleware, fn.Status.Build
	if b != nil {
		switch b.Phase {
		case v1alpha1.BuildPhaseStarting, v1alpha1.BuildPhaseRunning:
			fn.Status.MarkRebuilding("build %s %s: PipelineRun %s rebuilds the function to bring %s (running: %s)",
				b.ID, strings.ToLower(b.Phase), orDefault(b.PipelineRun, "(being created)"), b.ToMiddleware, orDefault(b.FromMiddleware, "unknown"))
			return Result{}, mayBuild, nil
		case v1alpha1.BuildPhaseSucceeded:
			if res, decided := r.verifyRebuild(fn, obs); decided {
				return res, mayBuild, nil
			}
			b = fn.Status.Build
		}
	}
	if !mw.rebuildDue {
		return Result{}, cannotBuildNow, nil
	}
	if r.Builds.Launcher.Busy(key) {
		// Launched by this process, and not yet in the status this reconcile read.
		fn.Status.MarkRebuilding("a build of the function is starting")
		return Result{}, mayBuild, nil
	}
	running := orDefault(mw.current, "unknown")
	notPossible := withReason(fn.Status.MarkRebuildNotPossible)
	if !r.Builds.TektonServed() {
		return Result{}, cannotBuildNow, rebuildBlocked(notPossible, mw, v1alpha1.ReasonRebuildNotPossible,
			"the cluster has no Tekton Pipelines API (tekton.dev/v1 PipelineRun): install Tekton Pipelines: the operator picks it up within a minute, without a restart")
	}
	commit, meta, verdict, err := r.buildSource(ctx, fn, obs)
	if err != nil {
		return Result{}, verdict, err
	}
	if err := funclib.CheckBuildable(meta); err != nil {
		return Result{}, cannotBuildNow, rebuildBlocked(notPossible, mw, v1alpha1.ReasonRebuildNotPossible, "func's pipeline cannot build the function: %w", err)
	}

	// func's pipeline deploys with the deployer func.yaml names at the commit it builds:
	// never one that would leave what deployed the function beside what it deploys.
	if err := r.checkDeployer(fn, obs, commit, meta); err != nil {
		return Result{}, cannotBuildNow, err
	}

	// The clone step gets the credentials the check read the repository with.
	var cloneCreds *git.CloneCredentials
	if obs.source.auth != nil {
		cloneCreds, err = obs.source.auth.ForClone()
		if err == nil && cloneCreds != nil {
			err = funclib.CheckGitCredentials(fn.Spec.Repository.URL, gitCredentials(cloneCreds))
		}
		if err != nil {
			return Result{}, cannotBuildNow, rebuildBlocked(notPossible, mw, v1alpha1.ReasonRebuildNotPossible,
				"the repository's credentials cannot be handed to the build's clone step: %w", err)
		}
	}

	cfg := r.Config.Load()
	// Only a Function that may build now holds a place in the queue.
	// A keda function's deploy writes an HTTPScaledObject: a grant of its own.
	keda := funclib.DeployerOf(meta) == funclib.DeployerKeda
	if err := r.Access.CheckFor(ctx, fn.Namespace, cfg.PipelineServiceAccount, keda); err != nil {
		if tenancy.IsNotOnboarded(err) {
			err = fmt.Errorf("%s is available (running: %s) but %w", mw.available, running, err)
			fn.Status.MarkNamespaceNotOnboarded("%s", err)
			return Result{}, cannotBuildNow, err
		}
		return Result{}, mayBuild, err
	}

	now, m := r.now(), r.machine()
	due := m.Next(b, rebuild.Event{Kind: rebuild.Due, At: now})
	if due.Backoff {
		fn.Status.MarkBuildFailed("%s; retry %d at %s", failureSummary(b), b.Failures+1, b.RetryAfter.UTC().Format(time.RFC3339))
		return requeueAfter(due.RequeueAfter), mayBuild, nil
	}
	admitted, position, length := r.Builds.Queue.Admit(key, due.QueuedAt)
	if !admitted {
		r.apply(fn, m.Next(b, rebuild.Event{Kind: rebuild.NoSlot, At: now, QueuedAt: due.QueuedAt, Position: int32(position)}))
		limit := fmt.Sprintf("at most %d rebuilds run at once (ConfigMap %s, key %s)", cfg.MaxConcurrentBuilds, config.ConfigMapName, config.KeyMaxConcurrentBuilds)
		if full, n, perNS := r.Builds.Queue.NamespaceFull(fn.Namespace); full {
			limit = fmt.Sprintf("namespace %s runs %d, and at most %d of a namespace run at once (ConfigMap %s, key %s)",
				fn.Namespace, n, perNS, config.ConfigMapName, config.KeyMaxConcurrentBuildsPerNamespace)
		}
		fn.Status.MarkRebuildQueued("%s is available (running: %s): the rebuild of commit %s waits in the queue at position %d of %d; %s",
			mw.available, running, v1alpha1.ShortCommit(commit), position, length, limit)
		return Result{}, mayBuild, nil
	}
	if err := r.ensurePullSecret(ctx, fn, meta); err != nil {
		r.Builds.Queue.Release(key)
		return Result{}, mayBuild, err
	}
	id := rand.String(10)
	started := m.Next(b, rebuild.Event{Kind: rebuild.Admitted, At: now, QueuedAt: due.QueuedAt, Start: rebuild.Start{
		ID: id, Commit: commit, FromImage: obs.deployment.image,
		FromMiddleware: mw.current, ToMiddleware: mw.available, ServiceUID: obs.deployment.uid,
	}})
	r.apply(fn, started)
	fn.Status.MarkRebuilding("build %s starting: rebuilding commit %s to bring %s (running: %s)",
		id, v1alpha1.ShortCommit(commit), mw.available, running)
	req := resources.BuildRequest(fn, id, commit, meta, cfg.BuilderImages)
	req.StepImages = funclib.StepImages{Bash: cfg.BashImage, Buildah: cfg.BuildahImage}
	req.Labels[resources.LabelServiceUID] = string(obs.deployment.uid)
	req.Credentials = r.registryCredentials(fn)
	req.GitCredentials = gitCredentials(cloneCreds)
	req.WorkDir = r.Builds.WorkDir
	return Result{
		RequeueAfter: started.RequeueAfter,
		// Launched only once the status records the build: a stale read cannot start a second one.
		AfterPatch: func(patched bool) {
			if patched {
				r.Builds.Launcher.Launch(key, id, req)
			} else {
				r.Builds.Queue.Release(key)
			}
		},
	}, mayBuild, nil
}

// checkDeployer stalls a rebuild whose deploy would not go well: func's pipeline
// deploys with func.yaml's deployer at the commit it builds, which must not strand
// what deployed the function (DeployerMismatch), nor switch from the deployer func.yaml
// recorded (func's deploy refuses that itself, in every build); a keda deploy needs
// the KEDA HTTP add-on.
func (r *Reconciler) checkDeployer(fn *v1alpha1.Function, obs *observation, built string, meta funclib.Metadata) error {
	mw := obs.middleware
	commit := v1alpha1.ShortCommit(built)
	mismatch := withReason(fn.Status.MarkDeployerMismatch)
	want, have := funclib.DeployerOf(meta), obs.deployment.found.deployer
	if have != "" {
		if err := funclib.CheckDeployerSwitch(have, want); err != nil {
			return rebuildBlocked(mismatch, mw, v1alpha1.ReasonDeployerMismatch, "func's pipeline would deploy commit %s with func's %s deployer "+
				"(func.yaml's deployer, else deploy.deployer, else func's default), while func's %s deployer deployed the function: the operator does not rebuild it (%w). "+
				"Set func.yaml's deployer to %s, or func delete the function and deploy it again",
				commit, want, have, err, have)
		}
	}
	if err := funclib.CheckRecordedSwitch(meta); err != nil {
		return rebuildBlocked(mismatch, mw, v1alpha1.ReasonDeployerMismatch, "func's deploy would refuse commit %s: its func.yaml asks for func's %s deployer "+
			"and records a deploy with %s (deploy.deployer) (%w). Make the two agree in func.yaml",
			commit, meta.Deployer, meta.DeployedWith, err)
	}
	if want == funclib.DeployerKeda && (r.Workloads == nil || !r.Workloads.KEDAServed()) {
		return rebuildBlocked(withReason(fn.Status.MarkRebuildNotPossible), mw, v1alpha1.ReasonRebuildNotPossible,
			"func's pipeline would deploy commit %s with func's keda deployer, and the cluster serves no HTTPScaledObjects (http.keda.sh/v1alpha1): "+
				"install the KEDA HTTP add-on: the operator picks it up within a minute, without a restart", commit)
	}
	return nil
}

// verifyRebuild follows a successful build until the Knative Service runs its image
// (obs.deployment) with the middleware it was to bring (obs.middleware). It returns
// decided when the build's outcome is settled for this reconcile: still waiting for
// the deploy, or failed; not decided once the rebuild is recorded (or was already).
func (r *Reconciler) verifyRebuild(fn *v1alpha1.Function, obs *observation) (Result, bool) {
	mw, b := fn.Status.Middleware, fn.Status.Build
	t := r.machine().Next(b, rebuild.Event{Kind: rebuild.Deployed, At: r.now(), Deploy: rebuild.Deploy{
		Recorded:   mw.LastRebuild != nil && b.CompletionTime != nil && mw.LastRebuild.Equal(b.CompletionTime),
		ServiceUID: obs.deployment.uid, Image: obs.deployment.image, RollingOut: obs.deployment.rollingOut,
		Current: obs.middleware.current, Available: obs.middleware.available, RebuildDue: obs.middleware.rebuildDue,
	}})
	switch t.Deploy {
	case rebuild.DeployRecorded:
		return Result{}, false
	case rebuild.DeployFailed:
		r.apply(fn, t)
		fn.Status.MarkBuildFailed("%s", failureSummary(fn.Status.Build))
		return Result{}, true
	case rebuild.DeployWaiting:
		fn.Status.MarkRebuilding("PipelineRun %s succeeded: waiting for %s to run the new image", b.PipelineRun, obs.deployment.found)
		return requeueAfter(t.RequeueAfter), true
	}
	r.apply(fn, t)
	b = fn.Status.Build
	mw.LastRebuild = b.CompletionTime.DeepCopy()
	fn.Status.Deployment.ImageBuilt = b.CompletionTime.DeepCopy()
	msg := rebuild.UpdatedMessage(b, obs.middleware.current)
	fn.Status.AddHistory(v1alpha1.HistoryEntry{Time: *b.CompletionTime.DeepCopy(), Message: msg})
	r.Recorder.Eventf(fn, corev1.EventTypeNormal, "Rebuilt", "%s (PipelineRun %s)", msg, b.PipelineRun)
	return Result{}, false
}

// apply records t, the build machine's answer to an event of fn's build: the status,
// then the queue and the launch.
func (r *Reconciler) apply(fn *v1alpha1.Function, t rebuild.Transition) {
	id := ""
	if b := fn.Status.Build; b != nil {
		id = b.ID
	}
	fn.Status.Build = t.Build
	r.Builds.Apply(client.ObjectKeyFromObject(fn), id, t)
}

// machine is the build state machine, with the configured backoff.
func (r *Reconciler) machine() rebuild.Machine {
	return rebuild.Machine{RetryDelay: r.Config.Load().BuildRetryDelay}
}

// giveUpPlace is the one way out of the queue: a Function that cannot or need not be
// rebuilt now leaves it, and its Queued build the status, so that it holds no place a
// slot would wait on (the machine's GaveUp).
func (r *Reconciler) giveUpPlace(fn *v1alpha1.Function) {
	if r.Builds == nil {
		return // no rebuilds, no queue
	}
	r.apply(fn, r.machine().Next(fn.Status.Build, rebuild.Event{Kind: rebuild.GaveUp, At: r.now(),
		Waiting: r.Builds.Queue.IsWaiting(client.ObjectKeyFromObject(fn))}))
}

// gitCredentials are c for the func library's build, nil when anonymous.
func gitCredentials(c *git.CloneCredentials) *funclib.GitCredentials {
	if c == nil {
		return nil
	}
	return &funclib.GitCredentials{Username: c.Username, Password: c.Password,
		SSHPrivateKey: c.SSHPrivateKey, KnownHosts: c.KnownHosts, CABundle: c.CABundle}
}

// buildSource returns the commit a rebuild builds (obs.middleware.from) and func.yaml
// at that commit: the builder, runtime and build envs a build uses are the ones of
// the source it builds. The deployed commit, when it is not the followed one, is
// looked up in the followed reference's history (git.Fetcher.ReadAt), with the
// credentials the check read the repository with.
func (r *Reconciler) buildSource(ctx context.Context, fn *v1alpha1.Function, obs *observation) (string, funclib.Metadata, rebuildVerdict, error) {
	mw, from, followed := obs.middleware, obs.middleware.from, obs.source.head.Commit
	notPossible := withReason(fn.Status.MarkRebuildNotPossible)
	if from.problem != "" {
		return "", funclib.Metadata{}, cannotBuildNow, rebuildBlocked(notPossible, mw, v1alpha1.ReasonRebuildNotPossible,
			"%s: %s", from.problem, from.remedy(followed))
	}
	if from.commit == followed || from.source != v1alpha1.RebuildFromDeployed {
		meta, err := r.buildMetadata(ctx, fn, obs.source)
		return followed, meta, mayBuild, err
	}
	anchor := ""
	if fn.Status.Deployment != nil {
		anchor = fn.Status.Deployment.FollowedAtDeploy
	}
	res, err := r.Fetcher.ReadAt(ctx, fn.Spec.Repository.URL, obs.source.head, from.commit, anchor, fn.Spec.Repository.CleanPath(), obs.source.auth, r.Config.Load().GitTimeout)
	if rerror.IsStalling(err) {
		return "", funclib.Metadata{}, cannotBuildNow, rebuildBlocked(notPossible, mw, v1alpha1.ReasonRebuildNotPossible,
			"commit %s, the one the running image was built from, cannot be rebuilt: %w; %s", v1alpha1.ShortCommit(from.commit), err, from.remedy(followed))
	}
	if err != nil {
		return "", funclib.Metadata{}, mayBuild, fmt.Errorf("reading func.yaml at commit %s, the one the running image was built from, for the build: %w", from.commit, err)
	}
	// Looked up: the status names it in full from now on (decideRebuildFrom keeps it).
	if rf := fn.Status.Middleware.RebuildFrom; rf != nil {
		rf.Commit = res.Commit
	}
	return res.Commit, res.Metadata, mayBuild, nil
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

// rebuildBlocked is the stalling error of a rebuild that cannot start, with reason:
// "<available> is available (running: <current>) but <why>", why formatted with
// args; mark records it on the status (markedBy), so the condition says what the
// error says.
func rebuildBlocked(mark markFunc, mw middlewareVerdict, reason, why string, args ...any) *rerror.Stalling {
	args = append([]any{mw.available, orDefault(mw.current, "unknown")}, args...)
	return markedBy(mark, rerror.NewStalling(reason, "%s is available (running: %s) but "+why, args...))
}

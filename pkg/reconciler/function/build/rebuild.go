package build

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/git"
	"github.com/fnops/func-operator/pkg/rebuild"
	"github.com/fnops/func-operator/pkg/reconciler/function/resources"
	"github.com/fnops/func-operator/pkg/reconciler/function/step"
	"github.com/fnops/func-operator/pkg/registry"
	"github.com/fnops/func-operator/pkg/rerror"
	"github.com/fnops/func-operator/pkg/tenancy"
)

// Rebuild is the rebuild step: it follows a build in flight or just succeeded, and
// rebuilds a Function a Cause makes due (dueCause) when its preconditions hold
// (plan) and the fleet's budget has a slot (admit), through func's Tekton
// pipeline, launched after the status that records the build is written. A Function
// that need not or cannot build now (a stall) gives its place in the queue up.
func (r *Reconciler) Rebuild(ctx context.Context, fn *v1alpha1.Function, obs Observed) (step.Result, error) {
	if !r.Enabled() {
		return step.Result{}, nil
	}
	if res, following := r.unsettled(fn, obs); following {
		return res, nil
	}
	if fn.Status.ManagementDisabled() {
		r.GiveUpPlace(fn)
		r.RefuseRequest(fn, "func.yaml sets deploy.managementDisabled: the operator stands down")
		return step.Result{}, nil
	}
	now := r.now()
	cause := dueCause(fn, obs, now)
	if cause == nil {
		r.GiveUpPlace(fn)
		if oc := obs.OnCommit; oc.Enabled && oc.Changed && now.Before(oc.NotBefore) {
			return step.RequeueAfter(oc.NotBefore.Sub(now)), nil // SourceDeployed says why
		}
		if nb := obs.Base.NotBefore; now.Before(nb) {
			return step.RequeueAfter(nb.Sub(now)), nil // BaseUpToDate says why
		}
		return step.Result{}, nil
	}
	if cfg := r.Config.Load(); cause.Kind == v1alpha1.BuildCauseMiddleware && cfg.Base.Holds(cause.Kind) && !cfg.Base.Window.Open(now) && obs.Base.Due {
		// The window holds middleware rebuilds, not base updates: the base goes now.
		cause = baseMoved(obs.Base, obs.Middleware.Current)
	} else if cause.Kind == v1alpha1.BuildCauseMiddleware && cfg.Base.Holds(cause.Kind) && !cfg.Base.Window.Open(now) {
		// ConfigMap key maintenanceWindowCauses names Middleware: its rebuilds wait too.
		r.GiveUpPlace(fn)
		next := cfg.Base.Window.NextOpen(now)
		fn.Status.MarkMiddlewareOutdated("%s: the rebuild waits for the maintenance window %q, which opens at %s (ConfigMap %s, keys %s and %s)",
			cause, cfg.Base.Window, next.UTC().Format(time.RFC3339), config.ConfigMapName, config.KeyMaintenanceWindow, config.KeyMaintenanceWindowCauses)
		return step.RequeueAfter(next.Sub(now)), nil
	}
	if r.Builds.Launcher.Busy(client.ObjectKeyFromObject(fn)) {
		// Launched by this process, and not yet in the status this reconcile read.
		fn.Status.MarkRebuilding("a build of the function is starting")
		return step.Result{}, nil
	}
	// A request is refused by an Event, not by the conditions: nothing of the running
	// function is wrong because it cannot be rebuilt on request now.
	conditions := fn.Status.Conditions.DeepCopy()
	planFor := r.plan
	if cause.Kind == v1alpha1.BuildCauseBase && cause.Base.Rebase {
		planFor = r.planRebase
	}
	p, err := planFor(ctx, fn, obs, cause)
	if cause.Kind == v1alpha1.BuildCauseSource && rerror.IsStalling(err) {
		// A new commit that cannot be built (its func.yaml switches deployers, asks for
		// a builder func's pipeline lacks...) is no fault of the running function, and
		// holds back no middleware rebuild of the deployed commit: SourceDeployed says
		// so, with severity Warning, and the conditions stay as they were.
		fn.Status.Conditions = conditions
		fn.Status.MarkSourceNotBuildable("%s", err)
		if !obs.Middleware.Due {
			r.GiveUpPlace(fn)
			r.RefuseRequest(fn, err.Error()) // with the policy on, it would build that commit
			return step.Result{}, nil
		}
		cause = outdatedMiddleware(obs.Middleware.Current, obs.Middleware.Available)
		conditions = fn.Status.Conditions.DeepCopy()
		p, err = r.plan(ctx, fn, obs, cause)
	}
	if cause.Kind == v1alpha1.BuildCauseMiddleware && rerror.IsStalling(err) && obs.Base.Due && obs.Base.Rebase {
		// A rebase needs none of what a pipeline build lacks (Tekton, the deployed
		// commit, its func.yaml): a middleware rebuild that cannot start holds back no
		// rebase. MiddlewareUpToDate says why the rebuild cannot start once it is over.
		cause = baseMoved(obs.Base, obs.Middleware.Current)
		fn.Status.Conditions = conditions
		p, err = r.planRebase(ctx, fn, obs, cause)
	}
	var res step.Result
	if err == nil {
		res, err = r.admit(ctx, fn, obs, p)
	}
	if rerror.IsStalling(err) {
		r.GiveUpPlace(fn)
		r.RefuseRequest(fn, err.Error())
		switch cause.Kind {
		case v1alpha1.BuildCauseRequest:
			fn.Status.Conditions = conditions
			return res, nil
		case v1alpha1.BuildCauseBase:
			// A base update that cannot start is no fault of the running function: it
			// does not gate Ready; BaseUpToDate says why, with severity Warning.
			fn.Status.Conditions = conditions
			fn.Status.MarkBaseBlocked(rerror.Reason(err), "%s", err)
			return res, nil
		}
	}
	return res, err
}

// RefuseRequest records fn's pending rebuild request as handled, refused for why,
// with a RebuildRequestRefused Event: a rebuild a user asked for that cannot start is
// not kept waiting for a change that may never come (they ask again).
func (r *Reconciler) RefuseRequest(fn *v1alpha1.Function, why string) {
	req := fn.PendingRebuildRequest()
	if req == "" {
		return
	}
	fn.Status.LastHandledRebuildRequest = req
	r.Recorder.Eventf(fn, corev1.EventTypeWarning, "RebuildRequestRefused", "the rebuild requested (annotation %s: %q) does not start: %s",
		v1alpha1.AnnotationRebuildRequestedAt, req, why)
}

// unsettled words a build in flight, and follows one that succeeded until its image
// serves (verify). It reports true while the build's outcome is not settled.
func (r *Reconciler) unsettled(fn *v1alpha1.Function, obs Observed) (step.Result, bool) {
	b := fn.Status.Build
	switch {
	case b == nil:
	case b.InFlight() && b.Method == v1alpha1.BuildMethodRebase:
		fn.Status.MarkRebuilding("build %s %s: the operator rebases %s onto its new run image", b.ID, strings.ToLower(b.Phase), b.FromImage)
		return step.Result{}, true
	case b.InFlight():
		fn.Status.MarkRebuilding("build %s %s: PipelineRun %s rebuilds the function %s",
			b.ID, strings.ToLower(b.Phase), cmp.Or(b.PipelineRun, "(being created)"), describe(b))
		return step.Result{}, true
	case b.Phase == v1alpha1.BuildPhaseSucceeded:
		return r.verify(fn, obs)
	}
	return step.Result{}, false
}

// plan is a rebuild the preconditions let start: what it builds, and with what.
type plan struct {
	cause  *Cause
	commit string
	// tree is the function directory's git tree at commit, when read (Source).
	tree  string
	meta  funclib.Metadata
	clone *git.CloneCredentials
	// rebase: the running image is rebased in-process; no pipeline, commit or func.yaml.
	rebase bool
}

// plan checks the preconditions of a rebuild for cause: Tekton served, the commit
// to build and its func.yaml, a pipeline func can run, a deployer that will not
// strand what is deployed, credentials the clone step can take, a namespace that
// onboarded the operator. Each unmet one is a stall that words the condition.
func (r *Reconciler) plan(ctx context.Context, fn *v1alpha1.Function, obs Observed, cause *Cause) (plan, error) {
	notPossible := step.WithReason(fn.Status.MarkRebuildNotPossible)
	if !r.Builds.TektonServed() {
		return plan{}, cause.blocked(notPossible, v1alpha1.ReasonRebuildNotPossible,
			"the cluster has no Tekton Pipelines API (tekton.dev/v1 PipelineRun): install Tekton Pipelines: the operator picks it up within a minute, without a restart")
	}
	commit, tree, meta, err := r.source(ctx, fn, obs, cause)
	if err != nil {
		return plan{}, err
	}
	if err := funclib.CheckBuildable(meta); err != nil {
		return plan{}, cause.blocked(notPossible, v1alpha1.ReasonRebuildNotPossible, "func's pipeline cannot build the function: %w", err)
	}
	// func's pipeline deploys with the deployer func.yaml names at the commit it builds:
	// never one that would leave what deployed the function beside what it deploys.
	if err := r.checkDeployer(fn, obs, cause, commit, meta); err != nil {
		return plan{}, err
	}
	// The clone step gets the credentials the check read the repository with.
	var clone *git.CloneCredentials
	if obs.Auth != nil {
		clone, err = obs.Auth.ForClone()
		if err == nil && clone != nil {
			err = funclib.CheckGitCredentials(fn.Spec.Repository.URL, gitCredentials(clone))
		}
		if err != nil {
			return plan{}, cause.blocked(notPossible, v1alpha1.ReasonRebuildNotPossible,
				"the repository's credentials cannot be handed to the build's clone step: %w", err)
		}
	}
	// Only a Function that may build now holds a place in the queue.
	// A keda function's deploy writes an HTTPScaledObject: a grant of its own.
	keda := funclib.DeployerOf(meta) == funclib.DeployerKeda
	if err := r.Access.CheckFor(ctx, fn.Namespace, r.Config.Load().PipelineServiceAccount, keda); err != nil {
		if tenancy.IsNotOnboarded(err) {
			err = fmt.Errorf("%s but %w", cause, err)
			fn.Status.MarkNamespaceNotOnboarded("%s", err)
		}
		return plan{}, err
	}
	return plan{cause: cause, commit: commit, tree: tree, meta: meta, clone: clone}, nil
}

// admit starts p when the machine and the fleet's queue let it: after a failure's
// backoff, with a slot of the budget. The launch waits for the status that records
// the build to be written.
func (r *Reconciler) admit(ctx context.Context, fn *v1alpha1.Function, obs Observed, p plan) (step.Result, error) {
	key, b, cfg := client.ObjectKeyFromObject(fn), fn.Status.Build, r.Config.Load()
	now, m := r.now(), r.machine()
	// A new request does not wait out a failed build's backoff, but for a failed
	// requested build's: a new value each second must not build back to back.
	request := fn.PendingRebuildRequest()
	skipBackoff := (request != "" && (b == nil || b.Cause != v1alpha1.BuildCauseRequest)) || skipsBackoff(b, p.cause, obs.OnCommit.Tried)
	due := m.Next(b, rebuild.Event{Kind: rebuild.Due, At: now, Requested: skipBackoff})
	if due.Backoff {
		fn.Status.MarkBuildFailed("%s; retry %d at %s", failureSummary(b), b.Failures+1, b.RetryAfter.UTC().Format(time.RFC3339))
		return step.RequeueAfter(due.RequeueAfter), nil
	}
	admitted, position, length := r.Builds.Queue.Admit(key, due.QueuedAt)
	if !admitted {
		r.apply(fn, m.Next(b, rebuild.Event{Kind: rebuild.NoSlot, At: now, QueuedAt: due.QueuedAt, Position: int32(position)}))
		limit := fmt.Sprintf("at most %d rebuilds run at once (ConfigMap %s, key %s)", cfg.MaxConcurrentBuilds, config.ConfigMapName, config.KeyMaxConcurrentBuilds)
		if full, n, perNS := r.Builds.Queue.NamespaceFull(fn.Namespace); full {
			limit = fmt.Sprintf("namespace %s runs %d, and at most %d of a namespace run at once (ConfigMap %s, key %s)",
				fn.Namespace, n, perNS, config.ConfigMapName, config.KeyMaxConcurrentBuildsPerNamespace)
		}
		fn.Status.MarkRebuildQueued("%s: the rebuild of commit %s waits in the queue at position %d of %d; %s",
			p.cause, v1alpha1.ShortCommit(p.commit), position, length, limit)
		return step.Result{}, nil
	}
	if p.rebase {
		return r.launchRebase(fn, obs, p, due), nil
	}
	if err := r.ensurePullSecret(ctx, fn, p.meta); err != nil {
		r.Builds.Queue.Release(key)
		return step.Result{}, err
	}
	id := rand.String(10)
	start := rebuild.Start{ID: id, Commit: p.commit, FromImage: obs.Deployed.Image, Cause: p.cause.Kind, BoundUID: obs.Deployed.BoundUID}
	start.FromMiddleware, start.ToMiddleware = p.cause.Running, p.cause.Brings
	started := m.Next(b, rebuild.Event{Kind: rebuild.Admitted, At: now, QueuedAt: due.QueuedAt, Start: start})
	r.apply(fn, started)
	if request != "" {
		fn.Status.LastHandledRebuildRequest = request // one value never builds twice, across restarts
	}
	if st := fn.Status.DeployOnCommit; st != nil && p.cause.Kind == v1alpha1.BuildCauseSource {
		// The interval runs from here; the tree tells the next commit from this one.
		st.LastBuildTime, st.LastBuildCommit, st.LastBuildTree = &metav1.Time{Time: now}, p.commit, p.tree
	}
	fn.Status.MarkRebuilding("build %s starting: rebuilding commit %s %s", id, v1alpha1.ShortCommit(p.commit), describe(fn.Status.Build))
	req := resources.BuildRequest(fn, id, p.commit, p.meta, cfg.BuilderImages)
	req.StepImages = funclib.StepImages{Bash: cfg.BashImage, Buildah: cfg.BuildahImage}
	req.Labels[resources.LabelServiceUID] = string(obs.Deployed.BoundUID)
	req.Credentials = r.registryCredentials(fn)
	req.GitCredentials = gitCredentials(p.clone)
	req.WorkDir = r.Builds.WorkDir
	return step.Result{
		RequeueAfter: started.RequeueAfter,
		// Launched only once the status records the build: a stale read cannot start a second one.
		AfterPatch: func(patched bool) {
			if patched {
				r.Builds.Launcher.Launch(key, id, req)
			} else {
				r.Builds.Queue.Release(key)
			}
		},
	}, nil
}

// describe words what build b brings, by its cause: "to bring <middleware> (running:
// <middleware>)", "as requested (middleware <middleware>)".
func describe(b *v1alpha1.BuildStatus) string {
	switch b.Cause {
	case v1alpha1.BuildCauseRequest:
		return fmt.Sprintf("as requested (middleware %s)", cmp.Or(b.FromMiddleware, "unknown"))
	case v1alpha1.BuildCauseSource:
		return fmt.Sprintf("to deploy it: a new commit of the followed reference changed the function (middleware %s)", cmp.Or(b.ToMiddleware, b.FromMiddleware, "unknown"))
	case v1alpha1.BuildCauseBase:
		return fmt.Sprintf("on its new base: the base the running image was built on moved on (middleware %s)", cmp.Or(b.FromMiddleware, "unknown"))
	default: // v1alpha1.BuildCauseMiddleware, and builds recorded before causes were
		return fmt.Sprintf("to bring %s (running: %s)", b.ToMiddleware, cmp.Or(b.FromMiddleware, "unknown"))
	}
}

// checkDeployer stalls a rebuild whose deploy would not go well: func's pipeline
// deploys with func.yaml's deployer at the commit it builds, which must not strand
// what deployed the function (DeployerMismatch), nor switch from the deployer func.yaml
// recorded (func's deploy refuses that itself, in every build); a keda deploy needs
// the KEDA HTTP add-on.
func (r *Reconciler) checkDeployer(fn *v1alpha1.Function, obs Observed, cause *Cause, built string, meta funclib.Metadata) error {
	commit := v1alpha1.ShortCommit(built)
	mismatch := step.WithReason(fn.Status.MarkDeployerMismatch)
	want, have := funclib.DeployerOf(meta), ""
	if obs.Deployed.Target != nil {
		have = obs.Deployed.Target.Deployer()
	}
	if have != "" {
		if err := funclib.CheckDeployerSwitch(have, want); err != nil {
			return cause.blocked(mismatch, v1alpha1.ReasonDeployerMismatch, "func's pipeline would deploy commit %s with func's %s deployer "+
				"(func.yaml's deployer, else deploy.deployer, else func's default), while func's %s deployer deployed the function: the operator does not rebuild it (%w). "+
				"Set func.yaml's deployer to %s, or func delete the function and deploy it again",
				commit, want, have, err, have)
		}
	}
	if err := funclib.CheckRecordedSwitch(meta); err != nil {
		return cause.blocked(mismatch, v1alpha1.ReasonDeployerMismatch, "func's deploy would refuse commit %s: its func.yaml asks for func's %s deployer "+
			"and records a deploy with %s (deploy.deployer) (%w). Make the two agree in func.yaml",
			commit, meta.Deployer, meta.DeployedWith, err)
	}
	if want == funclib.DeployerKeda && (r.KEDAServed == nil || !r.KEDAServed()) {
		return cause.blocked(step.WithReason(fn.Status.MarkRebuildNotPossible), v1alpha1.ReasonRebuildNotPossible,
			"func's pipeline would deploy commit %s with func's keda deployer, and the cluster serves no HTTPScaledObjects (http.keda.sh/v1alpha1): "+
				"install the KEDA HTTP add-on: the operator picks it up within a minute, without a restart", commit)
	}
	return nil
}

// verify follows a successful build until what func deployed runs its image
// (obs.Deployed) with the middleware it was to bring (obs.Middleware). It returns
// decided when the build's outcome is settled for this reconcile: still waiting for
// the deploy, or failed; not decided once the rebuild is recorded (or was already).
func (r *Reconciler) verify(fn *v1alpha1.Function, obs Observed) (step.Result, bool) {
	mw, b := fn.Status.Middleware, fn.Status.Build
	t := r.machine().Next(b, rebuild.Event{Kind: rebuild.Deployed, At: r.now(), Deploy: rebuild.Deploy{
		Recorded: fn.Status.RebuildRecorded(),
		BoundUID: obs.Deployed.BoundUID, Image: obs.Deployed.Image, RollingOut: obs.Deployed.RollingOut, Failure: obs.Deployed.Failure,
		Current: obs.Middleware.Current, Available: obs.Middleware.Available, RebuildDue: obs.Middleware.Due,
	}})
	switch t.Deploy {
	case rebuild.DeployRecorded:
		return step.Result{}, false
	case rebuild.DeployFailed:
		r.apply(fn, t)
		fn.Status.MarkBuildFailed("%s", failureSummary(fn.Status.Build))
		return step.Result{}, true
	case rebuild.DeployWaiting:
		if b.Method == v1alpha1.BuildMethodRebase {
			fn.Status.MarkRebuilding("rebased image %s deployed: waiting for %s to serve it (the old image serves meanwhile)", b.ToImage, obs.Deployed.Target)
			return step.RequeueAfter(t.RequeueAfter), true
		}
		fn.Status.MarkRebuilding("PipelineRun %s succeeded: waiting for %s to run the new image", b.PipelineRun, obs.Deployed.Target)
		return step.RequeueAfter(t.RequeueAfter), true
	}
	r.apply(fn, t)
	b = fn.Status.Build
	mw.LastRebuild = b.CompletionTime.DeepCopy()
	fn.Status.Deployment.ImageBuilt = b.CompletionTime.DeepCopy()
	recordBaseUpdate(fn, b.CompletionTime)
	msg := rebuild.UpdatedMessage(b, obs.Middleware.Current)
	fn.Status.AddHistory(v1alpha1.HistoryEntry{Time: *b.CompletionTime.DeepCopy(), Message: msg})
	if b.Method == v1alpha1.BuildMethodRebase {
		r.Recorder.Eventf(fn, corev1.EventTypeNormal, "Rebased", "%s", msg)
		return step.Result{}, false
	}
	r.Recorder.Eventf(fn, corev1.EventTypeNormal, "Rebuilt", "%s (PipelineRun %s)", msg, b.PipelineRun)
	return step.Result{}, false
}

// gitCredentials are c for the func library's build, nil when anonymous.
func gitCredentials(c *git.CloneCredentials) *funclib.GitCredentials {
	if c == nil {
		return nil
	}
	return &funclib.GitCredentials{Username: c.Username, Password: c.Password,
		SSHPrivateKey: c.SSHPrivateKey, KnownHosts: c.KnownHosts, CABundle: c.CABundle}
}

// source returns the commit a rebuild builds (obs.From) and func.yaml at that
// commit: the builder, runtime and build envs a build uses are the ones of the source
// it builds. The deployed commit, when it is not the followed one, is looked up in
// the followed reference's history (Sources.ReadAt), with the credentials the check
// read the repository with.
func (r *Reconciler) source(ctx context.Context, fn *v1alpha1.Function, obs Observed, cause *Cause) (string, string, funclib.Metadata, error) {
	from, followed := obs.From, obs.Head.Commit
	notPossible := step.WithReason(fn.Status.MarkRebuildNotPossible)
	// A new commit, or a request while the source policy is on: the followed commit,
	// whose tree the source policy's check read.
	onCommit := cause.Kind == v1alpha1.BuildCauseSource || (cause.Kind == v1alpha1.BuildCauseRequest && obs.OnCommit.Enabled)
	switch {
	case onCommit:
	case from.Problem != "":
		return "", "", funclib.Metadata{}, cause.blocked(notPossible, v1alpha1.ReasonRebuildNotPossible, "%s: %s", from.Problem, from.Remedy)
	case from.Source == "":
		// No step decided which commit: never the followed one by default.
		return "", "", funclib.Metadata{}, cause.blocked(notPossible, v1alpha1.ReasonRebuildNotPossible, "no commit to build was decided: %s", from.Remedy)
	}
	if onCommit || from.Commit == followed || from.Source != v1alpha1.RebuildFromDeployed {
		meta, err := r.metadata(ctx, fn, obs)
		if rerror.IsStalling(err) {
			return "", "", funclib.Metadata{}, cause.blocked(notPossible, v1alpha1.ReasonRebuildNotPossible, "%w", err)
		}
		return followed, obs.OnCommit.Tree, meta, err
	}
	anchor := ""
	if fn.Status.Deployment != nil {
		anchor = fn.Status.Deployment.FollowedAtDeploy
	}
	res, err := r.Sources.ReadAt(ctx, fn.Spec.Repository.URL, obs.Head, from.Commit, anchor, fn.Spec.Repository.CleanPath(), obs.Auth, r.Config.Load().GitTimeout)
	if rerror.IsStalling(err) {
		return "", "", funclib.Metadata{}, cause.blocked(notPossible, v1alpha1.ReasonRebuildNotPossible,
			"commit %s, the one the running image was built from, cannot be rebuilt: %w; %s", v1alpha1.ShortCommit(from.Commit), err, from.Remedy)
	}
	if err != nil {
		return "", "", funclib.Metadata{}, fmt.Errorf("reading func.yaml at commit %s, the one the running image was built from, for the build: %w", from.Commit, err)
	}
	// Looked up: the status names it in full from now on (the middleware step keeps it).
	if rf := fn.Status.Middleware.RebuildFrom; rf != nil {
		rf.Commit = res.Commit
	}
	return res.Commit, res.Tree, res.Metadata, nil
}

// metadata returns func.yaml at obs.Head: as the source step read it, or from the
// Sources' cache (a clone when a restart emptied it).
func (r *Reconciler) metadata(ctx context.Context, fn *v1alpha1.Function, obs Observed) (funclib.Metadata, error) {
	if obs.Metadata != nil {
		return *obs.Metadata, nil
	}
	res, err := r.Sources.Read(ctx, fn.Spec.Repository.URL, obs.Head, fn.Spec.Repository.CleanPath(), obs.Auth, r.Config.Load().GitTimeout)
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
		kc, _, err := r.Keychain(ctx, fn)
		if err != nil {
			return "", "", fmt.Errorf("reading the registry Secret: %w", err)
		}
		return registry.Login(kc, image)
	}
}

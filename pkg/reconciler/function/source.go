package function

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/git"
	"github.com/fnops/func-operator/pkg/lanes"
	"github.com/fnops/func-operator/pkg/metrics"
	"github.com/fnops/func-operator/pkg/netguard"
	"github.com/fnops/func-operator/pkg/reconciler/function/build"
	"github.com/fnops/func-operator/pkg/rerror"
)

// Fetcher reads repositories for the source step, and func.yaml at a commit for a
// build (git.Fetcher).
type Fetcher interface {
	CachedListing(key git.ListingKey, maxAge time.Duration, after uint64) (*git.Listing, bool, error)
	List(ctx context.Context, key git.ListingKey, auth *git.Auth, timeout, maxAge time.Duration, after uint64) (*git.Listing, bool, error)
	build.Sources
}

// reconcileSource reads func.yaml from the Function's repository into obs.source. It
// resolves the Function's ref against the repository's listing, which the Functions
// reading one repository with the same credentials share within a check interval,
// and clones only when the commit (or the spec) is new to the Function and not in the
// Fetcher's cache. The lane of the git host is taken only to reach it.
func (r *Reconciler) reconcileSource(ctx context.Context, fn *v1alpha1.Function, obs *observation) (Result, error) {
	cfg := r.config.Load()
	repo := fn.Spec.Repository

	auth, identity, err := r.repositoryAuth(ctx, fn)
	if err != nil {
		return Result{}, sourceFailed(fn, err)
	}
	key := git.ListingKey{URL: repo.URL, Identity: identity}
	fnKey := types.NamespacedName{Namespace: fn.Namespace, Name: fn.Name}
	r.watch.repositories.Watch(fnKey, key)
	// A push webhook of the Function's namespace named its repository: a listing
	// begun after the push, which the others on the repository then share.
	pushMark := r.watch.repositories.PushMark(fnKey)

	host := lanes.GitHost(repo.URL)
	var leave func(timedOut bool)
	timedOut := false
	defer func() { // also when a library panics
		if leave != nil {
			leave(timedOut)
		}
	}()
	enter := func() error {
		if leave != nil {
			return nil
		}
		l, ok := r.remote.lanes.Enter(host, fn.Namespace)
		if !ok {
			return lanes.Busy(host)
		}
		leave = l
		return nil
	}

	maxAge := checkFloor(cfg.CheckInterval)
	requested := v1alpha1.HandledValue(fn.Annotations[v1alpha1.AnnotationRequestedAt])
	if requested != fn.Status.LastHandledRequestedAt {
		// A check asked for now: a listing made before it does not do.
		maxAge = 0
	}
	var (
		listing *git.Listing
		shared  bool
	)
	if maxAge > 0 {
		listing, shared, err = r.remote.fetcher.CachedListing(key, maxAge, pushMark)
	}
	if !shared {
		if err := enter(); err != nil {
			return Result{}, err
		}
		start := time.Now()
		var asked bool
		listing, asked, err = r.remote.fetcher.List(ctx, key, auth, cfg.GitTimeout, maxAge, pushMark)
		// Handled once the repository was asked (not when its host was busy).
		fn.Status.LastHandledRequestedAt = requested
		if asked {
			r.metrics.GitFetch(metrics.GitListRefs, time.Since(start))
			timedOut = git.IsTimeout(err)
		}
		shared = !asked
	}
	if shared {
		r.metrics.ListingShared()
	}
	if err != nil {
		return r.sourceUnreachable(ctx, fn, err)
	}
	r.watch.repositories.PushSeen(fnKey, pushMark)
	head, err := listing.Resolve(specRef(repo), repo.URL, auth)
	if err != nil {
		sourceReached(fn)
		return Result{}, sourceFailed(fn, err)
	}
	obs.source = sourceArtifact{head: head, auth: auth}
	if sourceUpToDate(fn, head) {
		// Nothing new: no clone, and the status stays as it is (but for what a
		// Function checked by an older operator does not show yet).
		showResolved(fn.Status.Git, head)
		obs.source.name = fn.Status.Name
		if d := fn.Status.Deployment; d != nil {
			obs.source.runtime, obs.source.invoke = d.Runtime, d.Invoke
		}
		sourceReached(fn)
		return Result{}, nil
	}

	if err := enter(); err != nil {
		return Result{}, err
	}
	start := time.Now()
	res, err := r.remote.fetcher.Read(ctx, repo.URL, head, repo.CleanPath(), auth, cfg.GitTimeout)
	timedOut = git.IsTimeout(err)
	if res.Cloned {
		r.metrics.GitFetch(metrics.GitClone, time.Since(start))
	}
	if res.Commit != "" {
		g := fn.Status.Git
		if g == nil || g.ObservedCommit != res.Commit || g.ResolvedBranch != res.Branch || g.ResolvedRef != res.Resolved() ||
			g.ResolvedRevision != res.Revision() || res.Cloned {
			now := metav1.NewTime(r.clock.Now())
			// Both names of what is followed, upstream's older and newer: a console
			// of either reads it.
			fn.Status.Git = &v1alpha1.GitStatus{ResolvedBranch: res.Branch, ResolvedRevision: res.Revision(), ResolvedRef: res.Resolved(),
				ObservedCommit: res.Commit, LastChecked: &now}
		}
	}
	if err != nil {
		return r.sourceUnreachable(ctx, fn, err)
	}

	md := res.Metadata
	obs.source.head, obs.source.metadata = res.Head, &md
	obs.source.tree, obs.source.pipelinesAsCode = res.Tree, res.PipelinesAsCode
	obs.source.name, obs.source.runtime, obs.source.invoke = md.Name, md.Runtime, md.Invoke
	fn.Status.Name = md.Name
	if fn.Status.Deployment == nil {
		fn.Status.Deployment = &v1alpha1.DeploymentStatus{}
	}
	fn.Status.Deployment.Runtime = md.Runtime
	fn.Status.Deployment.Invoke = md.Invoke
	fn.Status.Deployment.RequestedDeployer = requestedIn(md)
	fn.Status.MarkManagementDisabled(md.ManagementDisabled)
	if sm := res.SourceMiddleware; sm.Version != "" || sm.Problem != "" {
		// The middleware of this runtime lives in the function's own source.
		if fn.Status.Middleware == nil {
			fn.Status.Middleware = &v1alpha1.MiddlewareStatus{}
		}
		fn.Status.Middleware.Current, fn.Status.Middleware.CurrentSource = sm.Version, v1alpha1.MiddlewareSourceSource
	}
	fn.Status.MarkSourceReadyAt(res.Kind(), res.Commit)
	sourceReached(fn)
	return Result{}, nil
}

// sourceUnreachable handles a failure to list or clone the repository. A definite
// answer (no such branch, credentials refused) fails the source as always. A failure
// to get an answer at all (network error, timeout, 5xx) is an outage: it shows in
// SourceReachable (severity Warning, not gating Ready) from its start, and while it
// lasts less than outageGrace the last known good state stands. The steps after it do
// not run, so nothing is rebuilt from a source that could not be read.
func (r *Reconciler) sourceUnreachable(ctx context.Context, fn *v1alpha1.Function, err error) (Result, error) {
	if !rerror.IsTransient(err) {
		sourceReached(fn)
		return Result{}, sourceFailed(fn, err)
	}
	cfg, now := r.config.Load(), r.clock.Now()
	if fn.Status.Git == nil {
		fn.Status.Git = &v1alpha1.GitStatus{}
	}
	g := fn.Status.Git
	o := outageOf(&g.UnreachableSince, now, cfg)
	sr := fn.Status.GetCondition(v1alpha1.FunctionConditionSourceReady)
	lastGood := g.ObservedCommit != "" && sr != nil && sr.IsTrue()
	if !lastGood || o.over(now) {
		fn.Status.MarkSourceUnreachable(rerror.Reason(err), "%s; unreachable since %s", err, o.started())
		return Result{}, sourceFailed(fn, err)
	}
	fn.Status.MarkSourceUnreachable(rerror.Reason(err), "%s; unreachable since %s: the last known good source (commit %s) stands until %s (ConfigMap %s, key %s)",
		err, o.started(), v1alpha1.ShortCommit(g.ObservedCommit), o.ends(), config.ConfigMapName, config.KeyOutageGrace)
	log.FromContext(ctx).Info("the repository does not answer: the last known good source stands", "reason", rerror.Reason(err),
		"since", o.since, "grace", cfg.OutageGrace)
	return Result{}, rerror.NewWaiting(rerror.Reason(err), o.recheck, "%s: the last known good source stands", err)
}

// sourceReached records that the repository answered: any outage is over.
func sourceReached(fn *v1alpha1.Function) {
	if fn.Status.Git != nil {
		fn.Status.Git.UnreachableSince = nil
	}
	fn.Status.MarkSourceReachable()
}

// sourceUpToDate is true when the Function already shows a usable source read at
// head for its current spec.
func sourceUpToDate(fn *v1alpha1.Function, head git.Head) bool {
	g := fn.Status.Git
	c := fn.Status.GetCondition(v1alpha1.FunctionConditionSourceReady)
	// An empty resolvedRef is a branch's, from an operator that did not show it.
	refMatches := g != nil && (g.ResolvedRef == head.Resolved() || (g.ResolvedRef == "" && head.Branch != ""))
	return refMatches && g.ObservedCommit == head.Commit && g.ResolvedBranch == head.Branch &&
		c != nil && c.IsTrue() && fn.Status.ObservedGeneration == fn.Generation
}

// showResolved fills in the names of what is followed that a status written by an
// older operator lacks: resolvedRef, and upstream's newer resolvedRevision.
func showResolved(g *v1alpha1.GitStatus, head git.Head) {
	if g.ResolvedRef == "" {
		g.ResolvedRef = head.Resolved()
	}
	if g.ResolvedRevision == "" {
		g.ResolvedRevision = head.Revision()
	}
}

// repositoryAuth reads the Secret named by spec.repository.authSecretRef from the
// Function's own namespace, straight from the API server, and returns the credentials
// and their identity (see git.Auth.Identity).
func (r *Reconciler) repositoryAuth(ctx context.Context, fn *v1alpha1.Function) (*git.Auth, string, error) {
	ref := fn.Spec.Repository.AuthSecretRef
	if ref == nil {
		auth, err := git.AuthFromSecret(fn.Spec.Repository.URL, nil)
		return auth, auth.Identity(), err
	}
	if ref.Name == "" {
		return nil, "", rerror.NewStalling(v1alpha1.ReasonAuthSecretNotFound, "spec.repository.authSecretRef has no name")
	}
	secret, err := r.remote.secrets.Get(ctx, fn.Namespace, ref.Name)
	switch {
	case err != nil:
		return nil, "", err
	case secret == nil:
		return nil, "", rerror.NewStalling(v1alpha1.ReasonAuthSecretNotFound,
			"Secret %q named by spec.repository.authSecretRef does not exist in namespace %q", ref.Name, fn.Namespace)
	}
	auth, err := git.AuthFromSecret(fn.Spec.Repository.URL, secret)
	return auth, auth.Identity(), err
}

// specRef is the ref spec.repository follows: ref, else revision or branch, read
// through Reference (a branch as refs/heads/<branch>, never taken for a tag).
func specRef(repo v1alpha1.Repository) git.Ref {
	if r := repo.Ref; r != nil {
		return git.Ref{Tag: r.Tag, SemVer: r.SemVer, Commit: r.Commit}
	}
	return git.Ref{Revision: repo.Reference()}
}

// sourceFailed records a failure to read the source in SourceReady and returns it:
// a classified failure with its reason, any other as a transient one.
func sourceFailed(fn *v1alpha1.Function, err error) error {
	fn.Status.MarkDownstreamWaitingForSource()
	reason := rerror.Reason(err)
	if reason == "" {
		fn.Status.MarkSourceUnknown(v1alpha1.ReasonReconciling, "reading the source failed: %s", err)
		return err
	}
	fn.Status.MarkSourceFailed(reason, "%s", err)
	return err
}

// requestedIn is the deployer func.yaml names, cut to the status field's bound: a
// name func does not know stays visible, and the rebuild step refuses it
// (funclib.CheckBuildable).
func requestedIn(md funclib.Metadata) string {
	return netguard.CapText(funclib.RequestedDeployer(md), 63)
}

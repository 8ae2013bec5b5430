package build

import (
	"context"
	"fmt"
	"sort"
	"time"

	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/rebuild"
	"github.com/fnops/func-operator/pkg/reconciler/function/resources"
	"github.com/fnops/func-operator/pkg/reconciler/function/step"
	"github.com/fnops/func-operator/pkg/tenancy"
)

// Observe follows the Function's build (status.build) through its PipelineRun,
// mapped back by the build ID the status recorded before the launch (buildRun), and
// records how the run ended. A run the status does not record is never adopted
// (sweepRuns). It runs before every other step, so a
// build is followed even while the source or the Service cannot be read; a build it
// sees fail shows in MiddlewareUpToDate at once, whether or not the rebuild step
// (which words it further) runs after it.
func (r *Reconciler) Observe(ctx context.Context, fn *v1alpha1.Function) (step.Result, error) {
	if b := fn.Status.Build; r.Enabled() && b != nil && b.Method == v1alpha1.BuildMethodRebase {
		return r.observeRebase(ctx, fn)
	}
	if !r.Builds.TektonServed() {
		return step.Result{}, nil // no rebuilds, or none followed without Tekton
	}
	following := fn.Status.Build != nil && fn.Status.Build.Phase != v1alpha1.BuildPhaseFailed
	res, err := r.followBuild(ctx, fn)
	if b := fn.Status.Build; following && b != nil && b.Phase == v1alpha1.BuildPhaseFailed {
		fn.Status.MarkBuildFailed("%s", failureSummary(b))
	}
	r.sweepGitCredentials(ctx, fn)
	return res, err
}

// followBuild is Observe's work on status.build.
func (r *Reconciler) followBuild(ctx context.Context, fn *v1alpha1.Function) (step.Result, error) {
	runs, err := r.pipelineRuns(ctx, fn)
	if err != nil {
		return step.Result{}, err
	}
	if err := r.pruneHistory(ctx, fn, runs); err != nil {
		// Best effort: following the build matters more, and the next reconcile tries again.
		log.FromContext(ctx).Info("finished PipelineRuns over spec.buildHistoryLimit are left until the next reconcile", "reason", err.Error())
	}
	b := fn.Status.Build
	if !rebuild.InFlight(b) {
		return step.Result{}, r.sweepRuns(ctx, fn, runs)
	}

	pr := buildRun(fn, runs)
	if pr == nil {
		return r.observeLaunch(ctx, fn)
	}

	m, now := r.machine(), r.now()
	c := pr.Status.GetCondition(apis.ConditionSucceeded)
	switch {
	case c == nil || c.IsUnknown():
		timeout := r.Config.Load().BuildTimeout
		t := m.Next(b, rebuild.Event{Kind: rebuild.RunSeen, At: now, Run: pr.Name,
			RunStart: startTime(pr), RunCreated: pr.CreationTimestamp, Timeout: timeout})
		r.apply(fn, t)
		if t.Stop {
			return step.Result{}, r.timedOut(ctx, fn, pr, timeout)
		}
		return step.Result{RequeueAfter: t.RequeueAfter}, nil
	case c.IsTrue():
		r.apply(fn, m.Next(b, rebuild.Event{Kind: rebuild.RunSucceeded, At: now, Run: pr.Name, Ended: completionTime(pr, now).Time}))
	default:
		r.apply(fn, m.Next(b, rebuild.Event{Kind: rebuild.RunFailed, At: now, Run: pr.Name, Ended: completionTime(pr, now).Time,
			Failure: rebuild.FailedTask(ctx, r.APIReader, pr)}))
	}
	return step.Result{}, nil
}

// buildRun returns the PipelineRun of fn's build in flight (status.build), nil when
// none shows. Only the build ID proves a run the operator's: the operator records it
// in the status, which only it may write, before it launches the build. Labels and
// owner references are written by whoever may create PipelineRuns in the namespace.
// The ID shows in the status, so a tenant may copy it onto a run of their own; which
// run is the build's is then decided so that the copy can at most stand in for this
// Function's one build (it holds no other slot): once the status recorded the run's
// name, that run alone; before, a run fn controls (the API proxy makes fn the
// controller of every object of a build), then the first created, then by name.
func buildRun(fn *v1alpha1.Function, runs []pipelinev1.PipelineRun) *pipelinev1.PipelineRun {
	b := fn.Status.Build
	var best *pipelinev1.PipelineRun
	for i := range runs {
		pr := &runs[i]
		switch {
		case pr.Labels[resources.LabelBuildID] != b.ID:
		case b.PipelineRun != "":
			if pr.Name == b.PipelineRun {
				return pr
			}
		case best == nil || earlierClaim(fn, pr, best):
			best = pr
		}
	}
	return best
}

// earlierClaim orders two runs of one build ID: one fn controls first, then the first
// created, then by name.
func earlierClaim(fn *v1alpha1.Function, a, b *pipelinev1.PipelineRun) bool {
	if ca, cb := resources.ControlledBy(a, fn), resources.ControlledBy(b, fn); ca != cb {
		return ca
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// sweepRuns looks at fn's unfinished PipelineRuns while its status records no build
// in flight, and adopts none of them. A build the operator starts is recorded in the
// status (Starting, its ID) before it is launched, so each of its runs is followed
// from there, across restarts and lost writes alike (buildRun). An unfinished run
// carrying the operator's labels is then either a leftover of the build whose end
// the status records (stopped, or failed before its run showed up), deleted so that
// it cannot deploy, or not the operator's: a tenant may create PipelineRuns with any
// labels and owner references. Such a run is logged and left alone: it is neither
// followed nor counted in the fleet budget, or a tenant could hold every slot of it.
func (r *Reconciler) sweepRuns(ctx context.Context, fn *v1alpha1.Function, runs []pipelinev1.PipelineRun) error {
	if r.Builds.Launcher.Busy(client.ObjectKeyFromObject(fn)) {
		return nil // launched by this process, and not yet in the status this reconcile read
	}
	b := fn.Status.Build
	for i := range runs {
		pr := &runs[i]
		if pr.IsDone() || !pr.DeletionTimestamp.IsZero() {
			continue
		}
		id := pr.Labels[resources.LabelBuildID]
		if b == nil || b.ID == "" || id != b.ID || !resources.ControlledBy(pr, fn) {
			if r.Builds.Ignored.First(pr.UID) {
				log.FromContext(ctx).Info("ignoring an unfinished PipelineRun labelled as a build of the Function: no build the operator started records it, "+
					"so it is neither followed nor counted in the fleet budget, and it is left alone", "pipelineRun", pr.Name, "build", id)
			}
			continue
		}
		err := r.Client.Delete(ctx, pr, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &pr.UID})
		if apierrors.IsForbidden(err) {
			log.FromContext(ctx).Info("leaving a PipelineRun of an ended build that the namespace does not let the operator delete (ClusterRole "+
				tenancy.NamespaceClusterRole+")", "pipelineRun", pr.Name, "build", b.ID)
			continue
		}
		if client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			return fmt.Errorf("deleting PipelineRun %s/%s of ended build %s: %w", pr.Namespace, pr.Name, b.ID, err)
		}
	}
	return nil
}

// observeLaunch follows a build whose PipelineRun does not exist (yet): launched by
// this process and on its way, failed before its run existed, deleted, or launched by
// a process that is gone.
func (r *Reconciler) observeLaunch(ctx context.Context, fn *v1alpha1.Function) (step.Result, error) {
	key := client.ObjectKeyFromObject(fn)
	b, now, m := fn.Status.Build, r.now(), r.machine()
	launched, ended, launchErr := r.Builds.Launcher.Launched(key, b.ID)
	t := m.Next(b, rebuild.Event{Kind: rebuild.NoRun, At: now, Launch: rebuild.LaunchState{Here: launched, Ended: ended, Err: launchErr,
		Result: r.Builds.Launcher.Result(key, b.ID)}})
	if t.AskLeader {
		earlier, err := r.launchedByEarlierLeader(ctx, fn, now)
		if err != nil {
			return step.Result{}, err
		}
		if !earlier {
			return step.RequeueAfter(t.RequeueAfter), nil
		}
		t = m.Next(b, rebuild.Event{Kind: rebuild.LaunchLost, At: now})
	}
	// The launch's outcome is forgotten once the status records it, not before: a
	// status patch that conflicts would lose it, and the launch is the only record
	// of a rebase's (no PipelineRun): its image pushed and deployed, never counted.
	var res step.Result
	if t.LaunchDone {
		t.LaunchDone = false
		id := b.ID
		res.AfterPatch = func(patched bool) {
			if patched {
				r.Builds.Launcher.Done(key, id)
			}
		}
	}
	r.apply(fn, t)
	if t.RequeueAfter > 0 {
		res.RequeueAfter = t.RequeueAfter // the PipelineRun is on its way
	}
	return res, nil
}

// launchedByEarlierLeader reports a build launched before this process led (start
// times have second precision) whose PipelineRun the API server does not have: the
// earlier leader is gone, so none will come. It waits rebuild.LeaderSettle into the
// leadership, past the time an earlier leader could still act unaware that it lost
// (renew deadline to lease duration), and reads the runs live: the cache may list
// from a lagging watch cache.
func (r *Reconciler) launchedByEarlierLeader(ctx context.Context, fn *v1alpha1.Function, now time.Time) (bool, error) {
	since, ok := r.Builds.Leading.Since()
	if !ok || now.Sub(since) < rebuild.LeaderSettle || !fn.Status.Build.StartTime.Time.Before(since.Add(-time.Second)) {
		return false, nil
	}
	var list pipelinev1.PipelineRunList
	if err := r.APIReader.List(ctx, &list, client.InNamespace(fn.Namespace),
		client.MatchingLabels{resources.LabelFunction: fn.Name, resources.LabelBuildID: fn.Status.Build.ID}); err != nil {
		return false, fmt.Errorf("reading the PipelineRuns of build %s from the API server: %w", fn.Status.Build.ID, err)
	}
	return len(list.Items) == 0, nil
}

// timedOut stops a build that ran past buildTimeout (stopBuild), to be retried after
// the backoff.
func (r *Reconciler) timedOut(ctx context.Context, fn *v1alpha1.Function, pr *pipelinev1.PipelineRun, timeout time.Duration) error {
	left, err := r.stopBuild(ctx, fn)
	if err != nil {
		return err
	}
	msg := fmt.Sprintf("did not finish within %s (ConfigMap %s, key %s): PipelineRun %s deleted", timeout, config.ConfigMapName, config.KeyBuildTimeout, pr.Name)
	if len(left) > 0 {
		msg = fmt.Sprintf("did not finish within %s (ConfigMap %s, key %s), and the namespace does not let the operator delete PipelineRun %s (ClusterRole %s): delete it yourself",
			timeout, config.ConfigMapName, config.KeyBuildTimeout, pr.Name, tenancy.NamespaceClusterRole)
	}
	r.apply(fn, r.machine().Next(fn.Status.Build, rebuild.Event{Kind: rebuild.TimedOut, At: r.now(), Failure: rebuild.Failure{Message: msg}}))
	return nil
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

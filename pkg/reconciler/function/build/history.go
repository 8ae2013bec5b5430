package build

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/reconciler/function/resources"
	"github.com/fnops/func-operator/pkg/tenancy"
)

// pruneHistory deletes the finished PipelineRuns of fn beyond spec.buildHistoryLimit,
// those that finished first first. The run of the build the status records is never
// deleted, nor is one that has not finished, nor one fn does not control: a run
// labelled as fn's by someone else is not the operator's to count or delete.
func (r *Reconciler) pruneHistory(ctx context.Context, fn *v1alpha1.Function, runs []pipelinev1.PipelineRun) error {
	current := ""
	if fn.Status.Build != nil {
		current = fn.Status.Build.ID
	}
	var finished []*pipelinev1.PipelineRun
	for i := range runs {
		pr := &runs[i]
		if pr.IsDone() && pr.DeletionTimestamp.IsZero() && pr.Labels[resources.LabelBuildID] != current && resources.ControlledBy(pr, fn) {
			finished = append(finished, pr)
		}
	}
	limit := fn.Settings().BuildHistoryLimit
	if limit < 0 || len(finished) <= limit { // negative: its annotation is invalid, nothing is deleted
		return nil
	}
	ended := func(pr *pipelinev1.PipelineRun) time.Time {
		if pr.Status.CompletionTime != nil {
			return pr.Status.CompletionTime.Time
		}
		return pr.CreationTimestamp.Time
	}
	slices.SortStableFunc(finished, func(a, b *pipelinev1.PipelineRun) int { return ended(b).Compare(ended(a)) })
	var errs []error
	for _, pr := range finished[limit:] {
		err := r.Client.Delete(ctx, pr, client.PropagationPolicy(metav1.DeletePropagationBackground),
			client.Preconditions{UID: &pr.UID})
		switch {
		case apierrors.IsForbidden(err):
			log.FromContext(ctx).Info("leaving a finished PipelineRun over spec.buildHistoryLimit that the namespace does not let the operator delete (ClusterRole "+
				tenancy.NamespaceClusterRole+")", "pipelineRun", pr.Name)
			return nil
		case client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err):
			errs = append(errs, fmt.Errorf("deleting PipelineRun %s/%s over spec.buildHistoryLimit: %w", pr.Namespace, pr.Name, err))
		}
	}
	return errors.Join(errs...)
}

// sweepGitCredentials deletes the git credentials Secrets of fn's builds that are not
// in flight: a build's Secret goes once the build ended (or never started), whichever
// process launched it, and a delete that failed is tried again at the next reconcile.
// It reads the namespace's Secret watch (an index), not the API server. Only Secrets
// fn owns are deleted.
func (r *Reconciler) sweepGitCredentials(ctx context.Context, fn *v1alpha1.Function) {
	if r.GitCredentials == nil || (r.Builds != nil && r.Builds.Launcher.Busy(client.ObjectKeyFromObject(fn))) {
		return // a launch of this process may be creating one
	}
	inFlight := ""
	if b := fn.Status.Build; b.InFlight() {
		inFlight = b.ID
	}
	for _, m := range r.GitCredentials.GitCredentials(fn.Namespace, fn.Name) {
		if m.Labels[resources.LabelBuildID] == inFlight || !m.DeletionTimestamp.IsZero() || !resources.OwnedBy(m, fn) {
			continue
		}
		uid := m.UID
		err := r.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Name}},
			client.Preconditions{UID: &uid})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			log.FromContext(ctx).Info("the git credentials Secret of an ended build is left until the next reconcile",
				"secret", m.Name, "build", m.Labels[resources.LabelBuildID], "reason", err.Error())
		}
	}
}

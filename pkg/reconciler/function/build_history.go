package function

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
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
		if pr.IsDone() && pr.DeletionTimestamp.IsZero() && pr.Labels[resources.LabelBuildID] != current && controlledBy(pr, fn) {
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
	if r.Secrets == nil || (r.Builds != nil && r.Builds.Launcher.Busy(client.ObjectKeyFromObject(fn))) {
		return // a launch of this process may be creating one
	}
	inFlight := ""
	if b := fn.Status.Build; b.InFlight() {
		inFlight = b.ID
	}
	for _, m := range r.Secrets.GitCredentials(fn.Namespace, fn.Name) {
		if m.Labels[resources.LabelBuildID] == inFlight || !m.DeletionTimestamp.IsZero() || !ownedBy(m, fn) {
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

// controlledBy reports whether fn is o's controller, as the API proxy makes it of
// every object of a build (resources.Owner). Whoever may create objects in the
// namespace may write such a reference too: it tells the operator's objects from
// others only together with a build ID the status recorded.
func controlledBy(o metav1.Object, fn *v1alpha1.Function) bool {
	ref := metav1.GetControllerOfNoCopy(o)
	return fn.UID != "" && ref != nil && ref.UID == fn.UID && isFunctionRef(*ref)
}

// ownedBy reports whether fn owns o.
func ownedBy(o metav1.Object, fn *v1alpha1.Function) bool {
	for _, ref := range o.GetOwnerReferences() {
		if ref.UID == fn.UID && ref.Kind == functionKind {
			return true
		}
	}
	return false
}

// functionKind is the kind of a Function, as owner references name it.
const functionKind = "Function"

// isFunctionRef reports whether ref names a Function, of any version of its group.
func isFunctionRef(ref metav1.OwnerReference) bool {
	return ref.Kind == functionKind && strings.HasPrefix(ref.APIVersion, v1alpha1.SchemeGroupVersion.Group+"/")
}

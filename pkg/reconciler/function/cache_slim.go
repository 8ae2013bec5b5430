package function

import (
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/netguard"
	"github.com/fnops/func-operator/pkg/reconciler/function/resources"
)

// Bounds of what the cache keeps of the Functions and PipelineRuns tenants write: a
// PipelineRun labelled as the operator's can be created by anyone who may create
// one, with up to the API server's 1.5 MiB of params; a Function may carry 256 KiB of
// annotations.
const (
	// maxCachedText bounds a kept condition message or annotation value.
	maxCachedText = 1024
	// maxCachedReason bounds a kept condition reason, a CamelCase word.
	maxCachedReason = 63
	// maxCachedOwners bounds the Function owner references kept of a PipelineRun (the
	// operator's builds have one).
	maxCachedOwners = 2
	// maxCachedChildren bounds the TaskRuns kept of a PipelineRun: func's pipelines
	// have at most four tasks.
	maxCachedChildren = 16
)

// keptRunLabels are the labels of a PipelineRun the operator reads (pipelineRuns,
// the Function mapping, the build ID checks).
var keptRunLabels = []string{resources.LabelFunction, resources.LabelBuildID, resources.LabelManagedBy, resources.LabelServiceUID}

// SlimPipelineRun is the cache's transform of a PipelineRun: it keeps what the
// operator reads of a build's run (its labels, Function owners, the Succeeded
// condition, start and completion times, its TaskRuns' names) and drops the rest:
// the spec with its params, the Pipeline Tekton copies into the status (some 20 KiB
// for func's), provenance, results. A cached run costs about a KiB however large
// the stored one is.
func SlimPipelineRun(o any) (any, error) {
	pr, ok := o.(*pipelinev1.PipelineRun)
	if !ok {
		return cache.TransformStripManagedFields()(o)
	}
	out := &pipelinev1.PipelineRun{TypeMeta: pr.TypeMeta, ObjectMeta: metav1.ObjectMeta{
		Name: pr.Name, Namespace: pr.Namespace, UID: pr.UID, ResourceVersion: pr.ResourceVersion, Generation: pr.Generation,
		CreationTimestamp: pr.CreationTimestamp, DeletionTimestamp: pr.DeletionTimestamp,
		Labels: keptLabels(pr.Labels, keptRunLabels...),
	}}
	for _, ref := range pr.OwnerReferences {
		if len(out.OwnerReferences) == maxCachedOwners {
			break
		}
		if resources.IsFunctionRef(ref) {
			out.OwnerReferences = append(out.OwnerReferences, ref) // names and UIDs: bounded by the API server
		}
	}
	st := &pr.Status
	if c := st.GetCondition(apis.ConditionSucceeded); c != nil {
		out.Status.Conditions = duckv1.Conditions{{Type: c.Type, Status: c.Status, LastTransitionTime: c.LastTransitionTime,
			Reason: netguard.CapText(c.Reason, maxCachedReason), Message: netguard.CapText(c.Message, maxCachedText)}}
	}
	out.Status.ObservedGeneration = st.ObservedGeneration
	out.Status.StartTime, out.Status.CompletionTime = st.StartTime, st.CompletionTime
	for _, c := range st.ChildReferences {
		if len(out.Status.ChildReferences) == maxCachedChildren {
			break
		}
		if c.Kind == "TaskRun" && len(c.Name) <= 253 && len(c.PipelineTaskName) <= 253 {
			out.Status.ChildReferences = append(out.Status.ChildReferences, pipelinev1.ChildStatusReference{
				TypeMeta: c.TypeMeta, Name: c.Name, PipelineTaskName: c.PipelineTaskName})
		}
	}
	return out, nil
}

// keptFunctionAnnotations are the annotations of a Function the operator reads: its
// settings and func's last-deployed. (TestSlimFunction_KeepsEveryAnnotation fails
// when api/v1alpha1 names one that is not here.)
var keptFunctionAnnotations = []string{
	v1alpha1.AnnotationAutoUpdateMiddleware, v1alpha1.AnnotationSuspend, v1alpha1.AnnotationBuildHistoryLimit,
	v1alpha1.AnnotationRebuildCommit, v1alpha1.AnnotationRequestedAt, v1alpha1.AnnotationRebuildRequestedAt, v1alpha1.AnnotationLastDeployed,
	v1alpha1.AnnotationDeployOnCommit, v1alpha1.AnnotationBaseUpdates,
}

// SlimFunction is the cache's transform of a Function: it drops the labels (the
// API server applies a shard's selector; no cached read looks at them) and every
// annotation but keptFunctionAnnotations, each value cut (a cut value is no valid
// setting: the Function reports it invalid). Spec and status are bounded by the
// CRD's schema and the operator.
func SlimFunction(o any) (any, error) {
	o, err := cache.TransformStripManagedFields()(o)
	fn, ok := o.(*v1alpha1.Function)
	if !ok || err != nil {
		return o, err
	}
	kept := keptLabels(fn.Annotations, keptFunctionAnnotations...)
	for k, v := range kept {
		kept[k] = netguard.CapText(v, maxCachedText)
	}
	fn.Labels, fn.Annotations = nil, kept
	return fn, nil
}

// keptLabels returns the entries of keys that m has, or nil.
func keptLabels(m map[string]string, keys ...string) map[string]string {
	var out map[string]string
	for _, k := range keys {
		if v, ok := m[k]; ok {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

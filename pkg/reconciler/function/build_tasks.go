package function

import (
	"context"
	"fmt"

	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"knative.dev/pkg/apis"
)

// failure is where and why a build failed.
type failure struct {
	// task and step name the pipeline task and its step that failed, when known.
	task, step string
	message    string
}

// failedTask finds the task and step that failed a PipelineRun, from its TaskRuns.
// A TaskRun that no longer exists is skipped; failing to read one is an error.
func (r *Reconciler) failedTask(ctx context.Context, pr *pipelinev1.PipelineRun) (failure, error) {
	f := failure{message: "PipelineRun " + pr.Name + " failed"}
	if c := pr.Status.GetCondition(apis.ConditionSucceeded); c != nil && c.Message != "" {
		f.message = fmt.Sprintf("PipelineRun %s failed (%s): %s", pr.Name, c.Reason, c.Message)
	}
	for _, child := range pr.Status.ChildReferences {
		if child.Kind != "TaskRun" {
			continue
		}
		tr := &pipelinev1.TaskRun{}
		err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: pr.Namespace, Name: child.Name}, tr)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return failure{}, fmt.Errorf("reading TaskRun %s/%s: %w", pr.Namespace, child.Name, err)
		}
		c := tr.Status.GetCondition(apis.ConditionSucceeded)
		if c == nil || !c.IsFalse() {
			continue
		}
		failed := failure{task: child.PipelineTaskName, message: fmt.Sprintf("TaskRun %s: %s", tr.Name, c.Message)}
		for _, s := range tr.Status.Steps {
			if s.Terminated != nil && s.Terminated.ExitCode != 0 {
				failed.step = s.Name
				break
			}
		}
		return failed, nil
	}
	return f, nil
}

package rebuild

import (
	"context"
	"fmt"

	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"knative.dev/pkg/apis"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Failure is where and why a build failed.
type Failure struct {
	// Task and Step name the pipeline task and its step that failed, when known.
	Task, Step string
	Message    string
}

// FailedTask finds the task and step that failed a PipelineRun, from its TaskRuns,
// read through reader (the API server: the cache does not hold TaskRuns). A TaskRun
// that no longer exists is skipped. One that cannot be read is named in the message,
// which then is the PipelineRun's own: the build's outcome is recorded, and its slot
// freed, whatever the TaskRuns say.
func FailedTask(ctx context.Context, reader client.Reader, pr *pipelinev1.PipelineRun) Failure {
	f := Failure{Message: "PipelineRun " + pr.Name + " failed"}
	if c := pr.Status.GetCondition(apis.ConditionSucceeded); c != nil && c.Message != "" {
		f.Message = fmt.Sprintf("PipelineRun %s failed (%s): %s", pr.Name, c.Reason, c.Message)
	}
	for _, child := range pr.Status.ChildReferences {
		if child.Kind != "TaskRun" {
			continue
		}
		tr := &pipelinev1.TaskRun{}
		err := reader.Get(ctx, types.NamespacedName{Namespace: pr.Namespace, Name: child.Name}, tr)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			f.Message = fmt.Sprintf("%s (TaskRun %s could not be read: %s)", f.Message, child.Name, err)
			continue
		}
		c := tr.Status.GetCondition(apis.ConditionSucceeded)
		if c == nil || !c.IsFalse() {
			continue
		}
		failed := Failure{Task: child.PipelineTaskName, Message: fmt.Sprintf("TaskRun %s: %s", tr.Name, c.Message)}
		for _, s := range tr.Status.Steps {
			if s.Terminated != nil && s.Terminated.ExitCode != 0 {
				failed.Step = s.Name
				break
			}
		}
		return failed
	}
	return f
}

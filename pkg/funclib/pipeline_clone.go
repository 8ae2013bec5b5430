package funclib

import (
	"errors"
	"fmt"
	"regexp"
	"slices"

	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
)

// func v0.50's pipelines have one inline build task whose first step, fetch-src,
// clones through the Tekton catalog's git-clone StepAction, fetched by the bundles
// resolver from a public registry, with a url and a revision and no credentials.
// Run as is, every build needs that registry, no private repository clones, and the
// clone step would share a pod (and so any credentials) with the build and deploy
// steps. splitClone moves the clone into a pipeline task of its own, which runs the
// embedded git-clone task (tasks/git-clone.yaml) with the build's credentials bound
// to it alone, and makes the build task run after it on the same source workspace.

// The parameters of func's clone step, the only ones the operator's clone task is
// given.
const (
	cloneStepURL      = "url"
	cloneStepRevision = "revision"
	cloneStepOutput   = "output-path"
)

// commitParam is the PipelineRun parameter of func v0.50's pipelines that the
// build writes as the image's org.opencontainers.image.revision label.
const commitParam = "commit"

// splitClone moves the clone step of func's build task into the pipeline task
// cloneTaskName, and fails on any task or step Tekton would resolve.
func splitClone(spec *pipelinev1.PipelineSpec) error {
	if len(spec.Finally) > 0 {
		return errors.New("a Pipeline with finally tasks: func v0.50's has none, check the pipeline after a func bump")
	}
	for _, w := range spec.Workspaces {
		if isCredentialWorkspace(w.Name) {
			return fmt.Errorf("a Pipeline that declares workspace %q itself: the operator binds the build's git credentials there", w.Name)
		}
	}
	optional := map[string]bool{}
	for _, w := range spec.Workspaces {
		optional[w.Name] = w.Optional
	}
	var clones []pipelinev1.PipelineTask
	for i := range spec.Tasks {
		t := &spec.Tasks[i]
		if t.Name == cloneTaskName {
			return fmt.Errorf("a Pipeline with a task named %q already: the operator's clone task has that name; check the pipeline after a func bump", cloneTaskName)
		}
		if t.TaskRef != nil || t.TaskSpec == nil {
			return fmt.Errorf("pipeline task %q refers to a task the cluster would resolve (%s): the operator embeds every task; check the pipeline after a func bump",
				t.Name, describeRef(t.TaskRef))
		}
		for _, w := range t.Workspaces {
			if isCredentialWorkspace(w.Workspace) {
				return fmt.Errorf("pipeline task %q binds workspace %q: only the operator's clone task may see the build's git credentials", t.Name, w.Workspace)
			}
		}
		if t.TaskSpec.APIVersion != "" || t.TaskSpec.Kind != "" || len(t.TaskSpec.Spec.Raw) > 0 {
			return fmt.Errorf("pipeline task %q is a custom task (%s %s), which another controller would run: check the pipeline after a func bump",
				t.Name, t.TaskSpec.APIVersion, t.TaskSpec.Kind)
		}
		clone, err := takeCloneStep(t)
		if err != nil {
			return err
		}
		if clone != nil {
			colocate(clone, t, optional)
			clones = append(clones, *clone)
		}
	}
	switch len(clones) {
	case 0:
		return nil // nothing to clone: sources come another way
	case 1:
	default:
		return fmt.Errorf("a Pipeline that clones in %d tasks: func v0.50's clones once, in its build task; check the pipeline after a func bump", len(clones))
	}
	spec.Tasks = append([]pipelinev1.PipelineTask{clones[0]}, spec.Tasks...)
	for _, ws := range []string{PipelineWorkspaceHTTP, PipelineWorkspaceSSH, PipelineWorkspaceCA} {
		spec.Workspaces = append(spec.Workspaces, pipelinev1.PipelineWorkspaceDeclaration{
			Name: ws, Optional: true, Description: "func-operator: the build's git credentials Secret, bound only to the clone task"})
	}
	return nil
}

// isCredentialWorkspace reports whether name is one of the Pipeline workspaces the
// operator binds the build's git credentials to.
func isCredentialWorkspace(name string) bool {
	return name == PipelineWorkspaceHTTP || name == PipelineWorkspaceSSH || name == PipelineWorkspaceCA
}

// colocate binds to the clone task, after its output workspace and before the
// credentials, every other required workspace the build task binds, in the build
// task's order: func binds its source and cache workspaces to one PVC, and with
// Tekton's default coschedule mode (workspaces) the PVC's affinity assistant is
// named after the last workspace the run binds to it (cache-workspace), and each
// TaskRun's pod must run beside the assistant named after the last PVC workspace its
// task binds. A clone task that bound the source workspace alone would wait for an
// assistant that never exists. The extra workspaces are declared optional in the
// clone task's spec and used by none of its steps. Optional Pipeline workspaces (the
// registry's dockerconfig) are left out: they are no PVC func binds, and may be
// credentials the clone has no use for.
func colocate(clone, build *pipelinev1.PipelineTask, optional map[string]bool) {
	output := clone.Workspaces[0].Workspace
	extra := make([]pipelinev1.WorkspacePipelineTaskBinding, 0, len(build.Workspaces))
	for _, w := range build.Workspaces {
		if w.Workspace == output || w.Workspace == "" || optional[w.Workspace] || isCredentialWorkspace(w.Workspace) {
			continue
		}
		name := colocateWorkspacePrefix + w.Name
		clone.TaskSpec.Workspaces = append(clone.TaskSpec.Workspaces, pipelinev1.WorkspaceDeclaration{Name: name, Optional: true,
			Description: "func-operator: unused; binds what the build task binds, so that Tekton's affinity assistant places both pods alike"})
		extra = append(extra, pipelinev1.WorkspacePipelineTaskBinding{Name: name, Workspace: w.Workspace, SubPath: w.SubPath})
	}
	clone.Workspaces = append(clone.Workspaces[:1], append(extra, clone.Workspaces[1:]...)...)
}

// colocateWorkspacePrefix starts the names of the clone task's workspaces that only
// place its pod (see colocate).
const colocateWorkspacePrefix = "colocate-"

// takeCloneStep removes func's clone step from t and returns the pipeline task that
// clones in its place (nil when t clones not). Any other step that refers to a
// StepAction is refused.
func takeCloneStep(t *pipelinev1.PipelineTask) (*pipelinev1.PipelineTask, error) {
	var clone *pipelinev1.PipelineTask
	steps := t.TaskSpec.Steps[:0:0]
	for i, s := range t.TaskSpec.Steps {
		switch {
		case s.Ref == nil:
			steps = append(steps, s)
			continue
		case i == 0 && isCatalogGitClone(s.Ref):
		default:
			return nil, fmt.Errorf("step %q of pipeline task %q refers to a StepAction the cluster would resolve (%s): the operator embeds every step; check the pipeline after a func bump",
				s.Name, t.Name, describeStepRef(s.Ref))
		}
		c, err := cloneTask(t, s)
		if err != nil {
			return nil, fmt.Errorf("step %q of pipeline task %q: %w", s.Name, t.Name, err)
		}
		clone = c
	}
	if clone == nil {
		return nil, nil
	}
	t.TaskSpec.Steps = steps
	if !slices.Contains(t.RunAfter, cloneTaskName) {
		t.RunAfter = append(t.RunAfter, cloneTaskName)
	}
	return clone, nil
}

// isCatalogGitClone reports whether ref is func's reference to the catalog's
// git-clone StepAction.
func isCatalogGitClone(ref *pipelinev1.Ref) bool {
	if ref.Resolver == "" {
		return false
	}
	kind, name := "", ""
	for _, p := range ref.Params {
		switch p.Name {
		case "kind":
			kind = p.Value.StringVal
		case "name":
			name = p.Value.StringVal
		}
	}
	return kind == "StepAction" && name == "git-clone"
}

func describeStepRef(ref *pipelinev1.Ref) string {
	if ref.Resolver != "" {
		return fmt.Sprintf("resolver %q", ref.Resolver)
	}
	return fmt.Sprintf("StepAction %q", ref.Name)
}

// cloneTask is the pipeline task that clones as step s of pipeline task t did: the
// embedded git-clone task, with s's url and revision and its output workspace,
// expressed in the pipeline's own parameters and workspaces, under s's when
// expressions, and bound to the optional credential workspaces.
func cloneTask(t *pipelinev1.PipelineTask, s pipelinev1.Step) (*pipelinev1.PipelineTask, error) {
	task, err := gitCloneTask()
	if err != nil {
		return nil, err
	}
	var url, revision, output string
	for _, p := range s.Params {
		switch p.Name {
		case cloneStepURL:
			url, err = pipelineParam(t, p.Value.StringVal)
		case cloneStepRevision:
			revision, err = pipelineParam(t, p.Value.StringVal)
		case cloneStepOutput:
			output, err = pipelineWorkspace(t, p.Value.StringVal)
		default:
			err = fmt.Errorf("parameter %q, which the operator's clone task does not take", p.Name)
		}
		if err != nil {
			return nil, err
		}
	}
	if url == "" || output == "" {
		return nil, errors.New("a clone step without a url or an output path")
	}
	when := make(pipelinev1.WhenExpressions, 0, len(s.When))
	for _, w := range s.When {
		if w.CEL != "" {
			return nil, errors.New("a CEL when expression, which the operator does not translate")
		}
		in, err := pipelineParam(t, w.Input)
		if err != nil {
			return nil, fmt.Errorf("its when expression: %w", err)
		}
		w.Input = in
		when = append(when, w)
	}
	params := pipelinev1.Params{
		{Name: "url", Value: *pipelinev1.NewStructuredValues(url)},
		{Name: "revision", Value: *pipelinev1.NewStructuredValues(revision)},
	}
	if img := GitCloneImage(); img != "" {
		params = append(params, pipelinev1.Param{Name: gitCloneImageParam, Value: *pipelinev1.NewStructuredValues(img)})
	}
	return &pipelinev1.PipelineTask{
		Name:     cloneTaskName,
		TaskSpec: &pipelinev1.EmbeddedTask{TaskSpec: task},
		Params:   params,
		When:     when,
		Workspaces: []pipelinev1.WorkspacePipelineTaskBinding{
			{Name: taskWorkspaceOutput, Workspace: output},
			{Name: taskWorkspaceBasic, Workspace: PipelineWorkspaceHTTP},
			{Name: taskWorkspaceSSH, Workspace: PipelineWorkspaceSSH},
			{Name: taskWorkspaceCA, Workspace: PipelineWorkspaceCA},
		},
	}, nil
}

var (
	taskParamRef     = regexp.MustCompile(`^\$\(params\.([A-Za-z0-9_-]+)\)$`)
	taskWorkspaceRef = regexp.MustCompile(`^\$\(workspaces\.([A-Za-z0-9_-]+)\.path\)$`)
)

// pipelineParam returns what task parameter reference v ("$(params.NAME)") of
// pipeline task t is in the pipeline: the string t passes as NAME.
func pipelineParam(t *pipelinev1.PipelineTask, v string) (string, error) {
	m := taskParamRef.FindStringSubmatch(v)
	if m == nil {
		return "", fmt.Errorf("%q is not a reference to one of the task's parameters", v)
	}
	for _, p := range t.Params {
		if p.Name == m[1] && p.Value.Type == pipelinev1.ParamTypeString {
			return p.Value.StringVal, nil
		}
	}
	return "", fmt.Errorf("the task passes no string parameter %q", m[1])
}

// pipelineWorkspace returns the pipeline workspace that workspace path reference v
// ("$(workspaces.NAME.path)") of pipeline task t is bound to.
func pipelineWorkspace(t *pipelinev1.PipelineTask, v string) (string, error) {
	m := taskWorkspaceRef.FindStringSubmatch(v)
	if m == nil {
		return "", fmt.Errorf("%q is not the path of one of the task's workspaces", v)
	}
	for _, w := range t.Workspaces {
		if w.Name == m[1] && w.SubPath == "" {
			return w.Workspace, nil
		}
	}
	return "", fmt.Errorf("the task binds no workspace %q to the pipeline's (without a subPath)", m[1])
}

func describeRef(ref *pipelinev1.TaskRef) string {
	switch {
	case ref == nil:
		return "no task at all"
	case ref.Resolver != "":
		return fmt.Sprintf("resolver %q", ref.Resolver)
	case ref.Kind == "":
		return fmt.Sprintf("Task %q", ref.Name)
	default:
		return fmt.Sprintf("%s %q", ref.Kind, ref.Name)
	}
}

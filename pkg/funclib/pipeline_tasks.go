package funclib

import (
	_ "embed" // the tasks func-operator puts into func's pipeline
	"fmt"
	"sync"

	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"sigs.k8s.io/yaml"
)

// gitCloneTaskYAML is the Tekton catalog's git-clone task, version 0.10, as copied
// into tasks/git-clone.yaml: func v0.50's build task clones with the catalog's
// git-clone StepAction through the bundles resolver, which needs a public registry
// at every build and passes no credentials (see splitClone).
//
//go:embed tasks/git-clone.yaml
var gitCloneTaskYAML []byte

// GitCloneTaskVersion is the catalog version of the embedded git-clone task.
const GitCloneTaskVersion = "0.10"

// Workspaces of the embedded git-clone task, and the optional Pipeline workspaces
// the operator binds them to: a build's git credentials Secret is bound to one of
// them (and to the CA workspace when it holds a CA), nothing else is.
const (
	cloneTaskName         = "fetch-sources"
	taskWorkspaceOutput   = "output"
	taskWorkspaceBasic    = "basic-auth"
	taskWorkspaceSSH      = "ssh-directory"
	taskWorkspaceCA       = "ssl-ca-directory"
	PipelineWorkspaceHTTP = "git-basic-auth"
	PipelineWorkspaceSSH  = "git-ssh-directory"
	PipelineWorkspaceCA   = "git-ssl-ca-directory"
)

// gitCloneImageParam is the git-clone task's parameter naming its image.
const gitCloneImageParam = "gitInitImage"

var (
	gitCloneOnce sync.Once
	gitCloneSpec pipelinev1.TaskSpec
	gitCloneErr  error
)

// gitCloneTask returns a copy of the embedded git-clone task's spec.
func gitCloneTask() (pipelinev1.TaskSpec, error) {
	gitCloneOnce.Do(func() {
		var t pipelinev1.Task
		if err := yaml.UnmarshalStrict(gitCloneTaskYAML, &t); err != nil {
			gitCloneErr = fmt.Errorf("the embedded git-clone task does not decode: %w", err)
			return
		}
		gitCloneSpec = t.Spec
	})
	if gitCloneErr != nil {
		return pipelinev1.TaskSpec{}, gitCloneErr
	}
	return *gitCloneSpec.DeepCopy(), nil
}

var (
	gitCloneImageMu sync.Mutex
	gitCloneImage   string
)

// SetGitCloneImage pins the image of the clone step (the git-clone task's
// gitInitImage); empty keeps the task's default. Call it before any build.
func SetGitCloneImage(image string) {
	gitCloneImageMu.Lock()
	defer gitCloneImageMu.Unlock()
	gitCloneImage = image
}

// GitCloneImage returns the image the clone step runs.
func GitCloneImage() string {
	gitCloneImageMu.Lock()
	defer gitCloneImageMu.Unlock()
	if gitCloneImage != "" {
		return gitCloneImage
	}
	spec, err := gitCloneTask()
	if err != nil {
		return ""
	}
	for _, p := range spec.Params {
		if p.Name == gitCloneImageParam && p.Default != nil {
			return p.Default.StringVal
		}
	}
	return ""
}

package funclib

import (
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
)

// The images func v0.50.1's task templates (pkg/pipelines/tekton/task-*.yaml.tmpl)
// name by tag, in no variable of func's: only the operator's rewrite of the Pipeline
// can pin them. TestPipelineImages_PinnedByDigest fails when a func bump changes them
// or adds another.
const (
	// FuncBashImage runs the pack task's prepare and results steps.
	FuncBashImage = "docker.io/library/bash:5.1"
	// FuncBuildahImage runs the s2i task's build step.
	FuncBuildahImage = "quay.io/buildah/stable:v1.31.0"
)

// StepImages replace, in a build's Pipeline, the images func names by tag in its task
// templates; empty keeps func's. The other images a build runs have settings of their
// own: the func-utils steps (SetDeployerImage), the clone step (SetGitCloneImage) and
// the builder (BuildRequest.BuilderImage, or func.yaml's build.builderImages).
type StepImages struct {
	// Bash replaces FuncBashImage.
	Bash string
	// Buildah replaces FuncBuildahImage.
	Buildah string
}

// replacements maps each of func's images that s pins to its pin.
func (s StepImages) replacements() map[string]string {
	r := map[string]string{}
	for from, to := range map[string]string{FuncBashImage: s.Bash, FuncBuildahImage: s.Buildah} {
		if to != "" {
			r[from] = to
		}
	}
	return r
}

// pinStepImages replaces, in every step, sidecar and stepTemplate of spec's inline
// tasks, an image that pins names by its pin.
func pinStepImages(spec *pipelinev1.PipelineSpec, pins map[string]string) {
	if len(pins) == 0 {
		return
	}
	pin := func(image *string) {
		if to, ok := pins[*image]; ok {
			*image = to
		}
	}
	for _, tasks := range [][]pipelinev1.PipelineTask{spec.Tasks, spec.Finally} {
		for i := range tasks {
			ts := tasks[i].TaskSpec
			if ts == nil {
				continue
			}
			if ts.StepTemplate != nil {
				pin(&ts.StepTemplate.Image)
			}
			for j := range ts.Steps {
				pin(&ts.Steps[j].Image)
			}
			for j := range ts.Sidecars {
				pin(&ts.Sidecars[j].Image)
			}
		}
	}
}

package funclib

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/func/pkg/buildpacks"
	"knative.dev/func/pkg/pipelines"
	"knative.dev/func/pkg/pipelines/tekton"
	"knative.dev/func/pkg/s2i"
	"sigs.k8s.io/yaml"
)

// digestOf is a digest reference of image's repository; no registry is asked.
func digestOf(image string) string {
	repo := image
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	return "127.0.0.1:5000/mirror/" + filepath.Base(repo) + "@sha256:" + strings.Repeat("ab", 32)
}

// TestPipelineImages_PinnedByDigest renders func's own Pipeline and PipelineRun for
// each builder (func's templates, written as func writes them for Pipelines as
// Code: the same Pipeline template the on-cluster path applies), rewrites them as
// the proxy does, and walks every step, sidecar and stepTemplate image of every
// task, and every task parameter naming an image a step pulls, its $(params.…)
// resolved through the task, the Pipeline and the run. With every pin of the
// ConfigMap set to a digest, no image may be named by tag; without pins, func's
// tags are what runs (the walk sees them). A func bump that changes the tags of
// FuncBashImage or FuncBuildahImage, or adds an image, fails here until the image
// has a pin.
func TestPipelineImages_PinnedByDigest(t *testing.T) {
	funcUtils := tekton.FuncUtilImage
	gitClone := GitCloneImage() // the embedded task's, as no test leaves a pin set
	for _, tt := range []struct {
		name    string
		m       Metadata
		builder string // func's builder image of the runtime
		want    []string
	}{
		{name: "pack", m: Metadata{Name: "hello", Runtime: "go", Builder: BuilderPack, Registry: "127.0.0.1:5000/fns"},
			builder: buildpacks.DefaultBuilderImages["go"], want: []string{FuncBashImage}},
		{name: "s2i", m: Metadata{Name: "hello", Runtime: "node", Builder: BuilderS2I, Registry: "127.0.0.1:5000/fns"},
			builder: s2i.DefaultBuilderImages["node"], want: []string{FuncBuildahImage}},
	} {
		tt.want = append(tt.want, funcUtils, gitClone, tt.builder)
		for _, pinned := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/pinned=%t", tt.name, pinned), func(t *testing.T) {
				if got := DeployerImage(); got != funcUtils || strings.Contains(gitClone, "@") {
					t.Fatalf("func-utils %s, clone %s: a test left a pin set", got, gitClone)
				}
				req := BuildRequest{Namespace: "builds", Function: tt.m, GitURL: "https://127.0.0.1:8443/org/fns.git",
					Revision: strings.Repeat("c", 40), ID: "b-" + tt.name, Owner: metav1.OwnerReference{Name: "hello", UID: "uid-1"}}
				want := slices.Clone(tt.want)
				if pinned {
					// What an admin sets: deployerImage and gitCloneImage (read at start-up,
					// hence the package's setters), the builder of the runtime, the step images.
					defer SetDeployerImage(DeployerImage())
					SetDeployerImage(digestOf(funcUtils))
					defer SetGitCloneImage("")
					SetGitCloneImage(digestOf(gitClone))
					req.BuilderImage = digestOf(tt.builder)
					req.StepImages = StepImages{Bash: digestOf(FuncBashImage), Buildah: digestOf(FuncBuildahImage)}
					for i, img := range want {
						want[i] = digestOf(img)
					}
				}
				p, run := funcPipeline(t, req)
				images, err := pipelineImages(p, run)
				if err != nil {
					t.Fatal(err)
				}
				var tags []string
				for _, img := range images {
					if !strings.Contains(img, "@sha256:") {
						tags = append(tags, img)
					}
				}
				if pinned && len(tags) > 0 {
					t.Errorf("with every pin set to a digest, the pipeline still runs %v by tag", tags)
				}
				if !pinned && len(tags) == 0 {
					t.Errorf("without pins the walk saw no image by tag (%v): it does not reach func's steps", images)
				}
				slices.Sort(want)
				if diff := cmp.Diff(want, images); diff != "" {
					t.Errorf("the images of the rewritten %s pipeline (-want +got):\n%s", tt.name, diff)
				}
			})
		}
	}
}

// funcPipeline is the Pipeline and PipelineRun func renders for req, rewritten as the
// proxy rewrites what func sends.
func funcPipeline(t *testing.T, req BuildRequest) (*pipelinev1.Pipeline, *pipelinev1.PipelineRun) {
	t.Helper()
	f, err := buildFunction(req)
	if err != nil {
		t.Fatal(err)
	}
	f.Root = t.TempDir()
	pp := tekton.NewPipelinesProvider(tekton.WithPipelineDecorator(labels{LabelBuildID: req.ID}))
	// func says on stderr which files it wrote: not this test's output.
	stderr := os.Stderr
	os.Stderr, err = os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	err = pp.ConfigurePAC(context.Background(), f, pipelines.PacMetadata{ConfigureLocalResources: true})
	_ = os.Stderr.Close()
	os.Stderr = stderr
	if err != nil {
		t.Fatalf("func rendering its pipeline: %v", err)
	}
	defer register(req.Namespace, req.ID, newRegistration(req))()
	read := func(name string, out any) []byte {
		b, err := os.ReadFile(filepath.Join(f.Root, ".tekton", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		j, err := json.Marshal(out)
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	body, err := rewritePipeline(req.Namespace, "v1", read("pipeline-pac.yaml", &pipelinev1.Pipeline{}))
	if err != nil {
		t.Fatalf("rewriting func's Pipeline: %v", err)
	}
	p := &pipelinev1.Pipeline{}
	if err := json.Unmarshal(body, p); err != nil {
		t.Fatal(err)
	}
	run := &pipelinev1.PipelineRun{}
	read("pipeline-run-pac.yaml", run)
	run.Labels = map[string]string{LabelBuildID: req.ID} // PAC's run template has no decorator labels
	j, err := json.Marshal(run)
	if err != nil {
		t.Fatal(err)
	}
	if body, err = rewritePipelineRun(req.Namespace, "v1", j, "func-operator-builder"); err != nil {
		t.Fatalf("rewriting func's PipelineRun: %v", err)
	}
	run = &pipelinev1.PipelineRun{}
	if err := json.Unmarshal(body, run); err != nil {
		t.Fatal(err)
	}
	return p, run
}

// notPulledImageParams are the task parameters of func's tasks, named for an image,
// that name no image the build pulls: what it writes (the function's image, its
// cache) and the s2i scripts' URL, a path in the builder image.
var notPulledImageParams = map[string]bool{"APP_IMAGE": true, "IMAGE": true, "CACHE_IMAGE": true, "S2I_IMAGE_SCRIPTS_URL": true}

// paramRef is a whole value that is one parameter: $(params.NAME).
var paramRef = regexp.MustCompile(`^\$\(params\.([A-Za-z0-9_.-]+)\)$`)

// pipelineImages returns, sorted and once each, the image of every step, sidecar and
// stepTemplate of p's tasks, and of every task parameter named for an image the
// build pulls, with the parameters they name resolved: a task's own
// (its default), the pipeline task's value, the Pipeline's parameter from run (its
// default). It fails on what it cannot see through: a task or step Tekton would
// resolve, a value that is not one whole parameter, a parameter no one sets.
func pipelineImages(p *pipelinev1.Pipeline, run *pipelinev1.PipelineRun) ([]string, error) {
	if run.Spec.PipelineSpec != nil || run.Spec.TaskRunTemplate.PodTemplate != nil {
		return nil, fmt.Errorf("a run with a pipeline spec or a pod template: images the walk does not read")
	}
	pipelineParam := func(name string) (string, error) {
		for _, rp := range run.Spec.Params {
			if rp.Name == name {
				return rp.Value.StringVal, nil
			}
		}
		for _, ps := range p.Spec.Params {
			if ps.Name == name && ps.Default != nil {
				return ps.Default.StringVal, nil
			}
		}
		return "", fmt.Errorf("pipeline parameter %q is set by no one", name)
	}
	seen := map[string]bool{}
	for _, pt := range append(slices.Clone(p.Spec.Tasks), p.Spec.Finally...) {
		if pt.TaskRef != nil || pt.TaskSpec == nil {
			return nil, fmt.Errorf("task %s is not inline", pt.Name)
		}
		resolve := func(v string) (string, error) {
			m := paramRef.FindStringSubmatch(v)
			if m == nil {
				if strings.Contains(v, "$(") {
					return "", fmt.Errorf("task %s: %q is not one whole parameter", pt.Name, v)
				}
				return v, nil
			}
			for _, tp := range pt.Params {
				if tp.Name == m[1] {
					if pm := paramRef.FindStringSubmatch(tp.Value.StringVal); pm != nil {
						return pipelineParam(pm[1])
					}
					return tp.Value.StringVal, nil
				}
			}
			for _, ps := range pt.TaskSpec.Params {
				if ps.Name == m[1] && ps.Default != nil {
					return ps.Default.StringVal, nil
				}
			}
			return "", fmt.Errorf("task %s: parameter %q is set by no one", pt.Name, m[1])
		}
		var raw []string
		if st := pt.TaskSpec.StepTemplate; st != nil && st.Image != "" {
			raw = append(raw, st.Image)
		}
		for _, s := range pt.TaskSpec.Steps {
			if s.Ref != nil {
				return nil, fmt.Errorf("task %s: step %s refers to a StepAction", pt.Name, s.Name)
			}
			raw = append(raw, s.Image)
		}
		for _, s := range pt.TaskSpec.Sidecars {
			raw = append(raw, s.Image)
		}
		// Images a step pulls by a parameter (s2i's builder, which buildah builds
		// from): every parameter named for an image, but the ones the build writes.
		for _, ps := range pt.TaskSpec.Params {
			if strings.Contains(strings.ToLower(ps.Name), "image") && !notPulledImageParams[ps.Name] {
				img, err := resolve("$(params." + ps.Name + ")")
				if err != nil {
					return nil, err
				}
				if img != "" { // RUN_IMAGE "": the builder's run image
					seen[img] = true
				}
			}
		}
		for _, v := range raw {
			img, err := resolve(v)
			if err != nil {
				return nil, err
			}
			if img == "" {
				return nil, fmt.Errorf("task %s: a step without an image", pt.Name)
			}
			seen[img] = true
		}
	}
	images := make([]string, 0, len(seen))
	for img := range seen {
		images = append(images, img)
	}
	slices.Sort(images)
	return images, nil
}

// TestPinStepImages replaces the images the pins name wherever a task runs one (a
// step, a sidecar, the stepTemplate, in tasks and finally) and nothing else.
func TestPinStepImages(t *testing.T) {
	bash := digestOf(FuncBashImage)
	for _, tt := range []struct {
		name      string
		pins      StepImages
		spec      string
		wantImage []string // step, sidecar and stepTemplate images, in the order of the spec
	}{{
		name:      "no pins: func's images",
		spec:      `tasks: [{name: a, taskSpec: {steps: [{name: s, image: "docker.io/library/bash:5.1"}]}}]`,
		wantImage: []string{FuncBashImage},
	}, {
		name: "bash wherever it runs; other images kept",
		pins: StepImages{Bash: bash},
		spec: `
tasks:
- name: a
  taskSpec:
    stepTemplate: {image: "docker.io/library/bash:5.1"}
    steps: [{name: s1, image: "docker.io/library/bash:5.1"}, {name: s2, image: "docker.io/library/bash:5.2"}, {name: s3, image: "$(params.BUILDER_IMAGE)"}]
    sidecars: [{name: c, image: "docker.io/library/bash:5.1"}]
finally:
- name: f
  taskSpec: {steps: [{name: s, image: "docker.io/library/bash:5.1"}, {name: b, image: "quay.io/buildah/stable:v1.31.0"}]}`,
		wantImage: []string{bash, bash, "docker.io/library/bash:5.2", "$(params.BUILDER_IMAGE)", bash, bash, FuncBuildahImage},
	}, {
		name:      "buildah only",
		pins:      StepImages{Buildah: "mirror.example/buildah@sha256:" + strings.Repeat("1", 64)},
		spec:      `tasks: [{name: a, taskSpec: {steps: [{name: b, image: "quay.io/buildah/stable:v1.31.0"}, {name: p, image: "docker.io/library/bash:5.1"}]}}]`,
		wantImage: []string{"mirror.example/buildah@sha256:" + strings.Repeat("1", 64), FuncBashImage},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			var spec pipelinev1.PipelineSpec
			if err := yaml.UnmarshalStrict([]byte(tt.spec), &spec); err != nil {
				t.Fatal(err)
			}
			pinStepImages(&spec, tt.pins.replacements())
			var got []string
			for _, pt := range append(spec.Tasks, spec.Finally...) {
				if st := pt.TaskSpec.StepTemplate; st != nil {
					got = append(got, st.Image)
				}
				for _, s := range pt.TaskSpec.Steps {
					got = append(got, s.Image)
				}
				for _, s := range pt.TaskSpec.Sidecars {
					got = append(got, s.Image)
				}
			}
			if diff := cmp.Diff(tt.wantImage, got); diff != "" {
				t.Errorf("images (-want +got):\n%s", diff)
			}
		})
	}
}

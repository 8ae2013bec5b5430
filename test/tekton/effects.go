package tekton

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"github.com/tektoncd/pipeline/pkg/result"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The pipeline tasks of func v0.50.1's pipelines as the operator runs them, and the
// steps of the build task whose containers' effects the kubelet simulation plays.
//
// func v0.50.1's pack and s2i pipelines (knative.dev/func pkg/pipelines/tekton,
// templates_pack.go, templates_s2i.go) have one inline task, build, whose first step
// fetch-src clones the source through a StepAction of the bundles resolver. The
// operator removes that step and runs the Tekton catalog's git-clone task as a
// pipeline task of its own, fetch-sources, before build. The build task has no
// results and no deploy task follows it: its steps are
//
//   - pack (task-buildpack.yaml.tmpl): func-scaffold, prepare, create, results,
//     func-deploy;
//   - s2i (task-s2i.yaml.tmpl): func-scaffold, generate, build, func-deploy.
//
// create (pack's lifecycle creator) and build (s2i's buildah) build and push the
// image; func-deploy deploys it.
const (
	fetchTask     = "fetch-sources"
	buildTask     = "build"
	packBuildStep = "create"
	s2iBuildStep  = "build"
	deployStep    = "func-deploy"
)

// Tasks are the pipeline tasks of func's pipelines as the operator runs them, in the
// order they run.
var Tasks = []string{fetchTask, buildTask}

// FunctionLabel is the PipelineRun label func writes the function's name to, which
// is the name of its Knative Service.
const FunctionLabel = "function.knative.dev/name"

// DeployerAnnotation is the annotation func's deployers put on what they deploy,
// naming the deployer (knative, raw, keda).
const DeployerAnnotation = "function.knative.dev/deployer"

// ImageParam is the PipelineRun parameter func writes the image to build to.
const ImageParam = "imageName"

// CommitParam is the PipelineRun parameter func writes the commit of the source to
// (empty when unknown); the build labels the image with it.
const CommitParam = "commit"

// Image config labels func v0.50.1's builds write: the middleware version (from the
// middleware-version file the scaffold step writes) and the commit (COMMIT).
const (
	MiddlewareLabel = "middleware-version"
	RevisionLabel   = "org.opencontainers.image.revision"
)

// startedAtFormat is how Tekton's entrypoint writes a step's StartedAt (timeFormat
// of github.com/tektoncd/pipeline/pkg/entrypoint).
const startedAtFormat = "2006-01-02T15:04:05.000Z07:00"

// buildStepIndex returns the index, in steps (container names), of the step of the
// build task that builds and pushes the image: create (pack), else build (s2i), else
// the task's last step.
func buildStepIndex(steps []string) int {
	for _, s := range []string{packBuildStep, s2iBuildStep} {
		if i := slices.Index(steps, stepPrefix+s); i >= 0 {
			return i
		}
	}
	return len(steps) - 1
}

// effects plays, in order, what the step containers of a pipeline task of func's
// pipelines do besides exiting, up to the step before failAt (every step when
// failAt < 0). It returns the index of the step that fails: failAt, or the step
// whose effect failed (its container would exit 1), or -1. No container runs: these
// are simulations.
//
// Only the build task's steps have effects here:
//
//   - the building step (create for pack, build for s2i; buildStepIndex) builds and
//     pushes the image of the run's imageName parameter: a simulation pushes an
//     image to Options.Registry, labelled middleware-version with the Outcome's
//     MiddlewareVersion (when set) and org.opencontainers.image.revision with the
//     run's commit parameter (when not empty), as func's builds label it;
//   - func-deploy (`deploy <path> <image>` in the func-utils image) points the
//     function's Knative Service at the image just pushed, by digest
//     (<repository of imageName>@<digest>), with the rights of the Pod's
//     ServiceAccount: a simulation updates the Service named by the run's
//     function.knative.dev/name label, impersonating that ServiceAccount.
//
// fetch-sources clones the source into the workspace, which nothing here reads: no
// effect.
func (k *Kubelet) effects(ctx context.Context, pod *corev1.Pod, pr *pipelinev1.PipelineRun, r *run, task string, steps []string, failAt int) int {
	if pr == nil || r == nil || task != buildTask {
		return failAt
	}
	build := buildStepIndex(steps)
	digest := ""
	for i, step := range steps {
		if failAt >= 0 && i >= failAt {
			break
		}
		var err error
		k.observe("running step %s of Pod %s/%s", strings.TrimPrefix(step, stepPrefix), pod.Namespace, pod.Name)
		switch {
		case i == build:
			if digest, err = k.build(pr, r.outcome.MiddlewareVersion); err == nil {
				k.observe("step %s pushed %s@%s (middleware-version %q)", strings.TrimPrefix(step, stepPrefix),
					param(pr, ImageParam), digest, r.outcome.MiddlewareVersion)
			}
		case step == stepPrefix+deployStep:
			if err = k.deploy(ctx, pod, pr, digest); err == nil {
				k.observe("step %s deployed %s@%s to function %s/%s, as ServiceAccount %s", deployStep,
					repository(param(pr, ImageParam)), digest, pr.Namespace, pr.Labels[FunctionLabel], pod.Spec.ServiceAccountName)
			}
		}
		if err != nil {
			k.logf(ctx, "Pod %s/%s: step %s fails: %v", pod.Namespace, pod.Name, step, err)
			return i
		}
	}
	return failAt
}

// param returns the value of a PipelineRun's string parameter ("" when it has none).
func param(pr *pipelinev1.PipelineRun, paramName string) string {
	for _, p := range pr.Spec.Params {
		if p.Name == paramName {
			return p.Value.StringVal
		}
	}
	return ""
}

// repository returns the repository of an image reference (ref itself when it does
// not parse).
func repository(ref string) string {
	r, err := name.ParseReference(ref)
	if err != nil {
		return ref
	}
	return r.Context().Name()
}

// build simulates the building step: it pushes the image and returns its digest.
func (k *Kubelet) build(pr *pipelinev1.PipelineRun, middleware string) (string, error) {
	image := param(pr, ImageParam)
	if image == "" {
		return "", fmt.Errorf("no %s parameter to build", ImageParam)
	}
	if k.opts.Registry == nil {
		return "", fmt.Errorf("no Registry to push %s to", image)
	}
	labels := map[string]string{}
	if middleware != "" {
		labels[MiddlewareLabel] = middleware
	}
	if commit := param(pr, CommitParam); commit != "" {
		labels[RevisionLabel] = commit
	}
	ref, err := k.opts.Registry.PushImage(image, labels)
	if err != nil {
		return "", err
	}
	_, digest, ok := strings.Cut(ref, "@")
	if !ok {
		return "", fmt.Errorf("the registry returned %q, not a reference by digest", ref)
	}
	return digest, nil
}

// deploy simulates func-deploy: it sets the image of the function's Knative Service
// to the repository of the run's imageName (its tag dropped) at digest, as the Pod's
// ServiceAccount.
func (k *Kubelet) deploy(ctx context.Context, pod *corev1.Pod, pr *pipelinev1.PipelineRun, digest string) error {
	svc := types.NamespacedName{Namespace: pr.Namespace, Name: pr.Labels[FunctionLabel]}
	if svc.Name == "" {
		return fmt.Errorf("the PipelineRun has no %s label", FunctionLabel)
	}
	if digest == "" {
		return errors.New("no image was built before the deploy step")
	}
	image, err := name.ParseReference(param(pr, ImageParam))
	if err != nil {
		return fmt.Errorf("the image to deploy: %w", err)
	}
	d, err := name.NewDigest(image.Context().Name() + "@" + digest)
	if err != nil {
		return fmt.Errorf("the image to deploy: %w", err)
	}
	ref := d.String()
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	c, err := k.as(pod.Namespace, sa)
	if err != nil {
		return err
	}
	// Which deployer stands in for func.yaml's: read as the simulation (an admin), not
	// as the ServiceAccount, whose rights only the deploy's writes test.
	if deployer, err := rawDeployer(ctx, k.c, svc); err != nil {
		return fmt.Errorf("deploying %s to function %s as ServiceAccount %s: %w", ref, svc, sa, err)
	} else if deployer != "" {
		if err := deployToDeployment(ctx, c, svc, ref); err != nil {
			return fmt.Errorf("deploying %s with func's %s deployer to Deployment %s as ServiceAccount %s: %w", ref, deployer, svc, sa, err)
		}
		return nil
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ksvc := &servingv1.Service{}
		if err := c.Get(ctx, svc, ksvc); err != nil {
			return err
		}
		containers := ksvc.Spec.Template.Spec.Containers
		if len(containers) == 0 {
			containers = []corev1.Container{{}}
		}
		if containers[0].Image == ref {
			return nil
		}
		containers[0].Image = ref
		ksvc.Spec.Template.Spec.Containers = containers
		return c.Update(ctx, ksvc)
	})
	if err != nil {
		return fmt.Errorf("deploying %s to Knative Service %s as ServiceAccount %s: %w", ref, svc, sa, err)
	}
	return nil
}

// rawDeployer returns the deployer (raw or keda) the function's core Service names
// by func's annotation, "" when it has no such Service: the function is on Knative.
// (func-deploy resolves its deployer from func.yaml; the operator starts a build only
// when that is the deployer on the cluster, or a safe switch from it.)
func rawDeployer(ctx context.Context, c client.Client, fn types.NamespacedName) (string, error) {
	svc := &corev1.Service{}
	if err := c.Get(ctx, fn, svc); err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		return "", err
	}
	switch d := svc.Annotations[DeployerAnnotation]; d {
	case "raw", "keda":
		return d, nil
	}
	return "", nil
}

// deployToDeployment simulates func's raw deployer (which the keda one embeds) on
// an update: the Deployment's user-container runs ref.
func deployToDeployment(ctx context.Context, c client.Client, fn types.NamespacedName, ref string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, fn, d); err != nil {
			return err
		}
		containers := d.Spec.Template.Spec.Containers
		for i := range containers {
			if containers[i].Name == "user-container" {
				if containers[i].Image == ref {
					return nil
				}
				containers[i].Image = ref
				return c.Update(ctx, d)
			}
		}
		return fmt.Errorf("deployment %s has no container user-container", fn)
	})
}

// as returns a client that impersonates ServiceAccount sa of namespace ns, with
// the groups its token carries: it has that ServiceAccount's RBAC.
func (k *Kubelet) as(ns, sa string) (client.Client, error) {
	user := "system:serviceaccount:" + ns + ":" + sa
	if c := k.impersonated[user]; c != nil {
		return c, nil
	}
	if k.cfg == nil {
		return nil, errors.New("no rest.Config to impersonate " + user + " with")
	}
	cfg := rest.CopyConfig(k.cfg)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: user,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
	}
	c, err := newClient(cfg)
	if err != nil {
		return nil, err
	}
	k.impersonated[user] = c
	return c, nil
}

// results returns the results the steps of a succeeding Pod write: every result its
// Task declares, with Options.Result's value or a default. (func v0.50.1's build
// task declares none; the git-clone task of fetch-sources declares commit, url and
// committer-date.)
func (k *Kubelet) results(pr *pipelinev1.PipelineRun, task string, tr *pipelinev1.TaskRun) []result.RunResult {
	if task == "" {
		task = tr.Name
	}
	out := make([]result.RunResult, 0, len(tr.Status.TaskSpec.Results))
	for _, res := range tr.Status.TaskSpec.Results {
		v, ok := "", false
		if k.opts.Result != nil && pr != nil {
			v, ok = k.opts.Result(pr.DeepCopy(), task, res.Name)
		}
		if !ok {
			v = defaultResult(task, res)
		}
		out = append(out, result.RunResult{Key: res.Name, Value: v, ResultType: result.TaskRunResultType})
	}
	return out
}

// defaultResult returns the value of a result no one chose, as the entrypoint
// writes it: the string itself, or JSON for an array or an object.
func defaultResult(task string, res pipelinev1.TaskResult) string {
	switch res.Type {
	case pipelinev1.ResultsTypeArray:
		return "[]"
	case pipelinev1.ResultsTypeObject:
		obj := map[string]string{}
		for key := range res.Properties {
			obj[key] = ""
		}
		content, _ := json.Marshal(obj) //nolint:errcheck // a map of strings always marshals
		return string(content)
	default:
		return task + "." + res.Name
	}
}

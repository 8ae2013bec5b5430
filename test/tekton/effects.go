package tekton

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"github.com/tektoncd/pipeline/pkg/result"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The pipeline tasks of func's pipelines whose containers' effects the kubelet
// simulation plays, the step a failing Outcome fails by default, and the result
// and parameter that carry the image from one to the other.
const (
	buildTask         = "build"
	buildStep         = "build"
	deployTask        = "deploy"
	imageDigestResult = "IMAGE_DIGEST"
	deployImageParam  = "image"
)

// Tasks are the pipeline tasks of func's pipelines (knative.dev/func
// pkg/pipelines/tekton templates), in the order they run.
var Tasks = []string{"fetch-sources", "scaffold", buildTask, deployTask}

// FunctionLabel is the PipelineRun label func writes the function's name to, which
// is the name of its Knative Service.
const FunctionLabel = "function.knative.dev/name"

// ImageParam is the PipelineRun parameter func writes the image to build to.
const ImageParam = "imageName"

// startedAtFormat is how Tekton's entrypoint writes a step's StartedAt (timeFormat
// of github.com/tektoncd/pipeline/pkg/entrypoint).
const startedAtFormat = "2006-01-02T15:04:05.000Z07:00"

// effects plays what the containers of a succeeding pipeline task of func's
// pipelines do besides exiting 0, and returns the results they write:
//
//   - build (func-buildpacks, func-s2i) builds and pushes the image of the run's
//     imageName parameter, and writes its digest as IMAGE_DIGEST: a simulation
//     pushes an image to Options.Registry, labelled with the Outcome's
//     MiddlewareVersion.
//   - deploy (func-deploy: `func deploy` in the func-utils image) points the
//     function's Knative Service at the image of its image parameter
//     ($(params.imageName)@$(tasks.build.results.IMAGE_DIGEST)), with the Pod's
//     ServiceAccount's rights: a simulation updates the Service named by the run's
//     function.knative.dev/name label, impersonating that ServiceAccount.
//
// An error fails the task's last step, as the container would exit 1.
func (k *Kubelet) effects(ctx context.Context, pod *corev1.Pod, pr *pipelinev1.PipelineRun, r *run, task string, tr *pipelinev1.TaskRun) (map[string]string, error) {
	if pr == nil || r == nil {
		return nil, nil
	}
	switch task {
	case buildTask:
		digest, err := k.build(pr, r.outcome.MiddlewareVersion)
		if err != nil {
			return nil, err
		}
		return map[string]string{imageDigestResult: digest}, nil
	case deployTask:
		return nil, k.deploy(ctx, pod, pr, tr)
	}
	return nil, nil
}

// build simulates the build task's containers: it pushes the image and returns
// its digest.
func (k *Kubelet) build(pr *pipelinev1.PipelineRun, label string) (string, error) {
	image := ""
	for _, p := range pr.Spec.Params {
		if p.Name == ImageParam {
			image = p.Value.StringVal
		}
	}
	if image == "" {
		return "", fmt.Errorf("no %s parameter to build", ImageParam)
	}
	if k.opts.Registry == nil {
		return "", fmt.Errorf("no Registry to push %s to", image)
	}
	ref, err := k.opts.Registry.PushImage(image, label)
	if err != nil {
		return "", err
	}
	_, digest, ok := strings.Cut(ref, "@")
	if !ok {
		return "", fmt.Errorf("the registry returned %q, not a reference by digest", ref)
	}
	return digest, nil
}

// deploy simulates `func deploy` in the deploy task's container: it sets the
// image of the function's Knative Service, as the Pod's ServiceAccount. The image
// is the repository of the task's image parameter by digest (its tag dropped).
func (k *Kubelet) deploy(ctx context.Context, pod *corev1.Pod, pr *pipelinev1.PipelineRun, tr *pipelinev1.TaskRun) error {
	svc := types.NamespacedName{Namespace: pr.Namespace, Name: pr.Labels[FunctionLabel]}
	if svc.Name == "" {
		return fmt.Errorf("the PipelineRun has no %s label", FunctionLabel)
	}
	param := ""
	for _, p := range tr.Spec.Params {
		if p.Name == deployImageParam {
			param = p.Value.StringVal
		}
	}
	if param == "" {
		return fmt.Errorf("the TaskRun has no %s parameter to deploy", deployImageParam)
	}
	d, err := name.NewDigest(param)
	if err != nil {
		return fmt.Errorf("the image to deploy: %w", err)
	}
	ref := d.Context().Name() + "@" + d.DigestStr()
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	c, err := k.as(pod.Namespace, sa)
	if err != nil {
		return err
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

// results returns the results the steps of a succeeding pod write: every result
// its Task declares, with the value the effects wrote, or Options.Result's, or a
// default.
func (k *Kubelet) results(pr *pipelinev1.PipelineRun, task string, tr *pipelinev1.TaskRun, written map[string]string) []result.RunResult {
	if task == "" {
		task = tr.Name
	}
	out := make([]result.RunResult, 0, len(tr.Status.TaskSpec.Results))
	for _, res := range tr.Status.TaskSpec.Results {
		v, ok := written[res.Name]
		if !ok && k.opts.Result != nil && pr != nil {
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

package imagedeploy

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/workload"
)

// What func v0.50.1 writes on an update, and what of it edit writes for a new image.
//
// func's deployers regenerate the whole object from func.yaml and the image
// (knative: pkg/knative updateService on the Service read; raw: pkg/k8s
// generateDeployment, sent whole with the read resourceVersion; keda: raw's, then its
// HTTPScaledObject). A rebase changes the image alone, so edit writes only what an
// update with a new image changes, into the object read, and keeps every other field
// as it is (unstructured: fields this operator's types do not know are kept too):
//
//   - the image: knative, the first container of spec.template.spec (knative client's
//     UpdateImage); raw and keda, the container func names, user-container;
//   - BUILT: func's ProcessEnvs writes the variable BUILT, the deploy's time
//     (20060102T150405), first in the container's env on every deploy; edit sets it
//     when the container has it;
//   - knative: spec.template.metadata.name removed, as updateService does, so that
//     Knative names the new Revision: Knative's webhook refuses a changed template
//     under the name it had (a name kn or a user set).
//
// Left out, because a rebase does not change them, or func writes them as a side
// effect of regenerating: labels and annotations (regenerated from an unchanged
// func.yaml to what they are; on a Knative Service func keeps serving.knative.dev/creator),
// env, volumes, probes, security context, resources and scale annotations, the pod's
// ServiceAccount and pull Secrets; raw and keda's replicas (func resets them to 1 or
// scale.min on every deploy, which would scale up a function KEDA scaled down); the
// core Service, keda's bridge Service and HTTPScaledObject, and Triggers; the checks
// (referenced Secrets and ConfigMaps exist, image pull warnings) and the wait for the
// Service to be Ready or the Deployment available: the caller follows
// Written.Generation. func writes no deploy timestamp annotation: a new image is a new
// template, and so a new Revision or rollout, by itself.

// builtEnv is the variable func sets to the deploy's time, and builtLayout its format.
const (
	builtEnv    = "BUILT"
	builtLayout = "20060102T150405"
)

// edit sets image into obj, a Knative Service (deployer knative) or a Deployment (raw,
// keda) as func wrote it, with what func changes beside it (above), at now. It reports
// false, and leaves obj as it was, when obj runs image already.
func edit(deployer string, obj *unstructured.Unstructured, image, replaces string, now time.Time) (bool, error) {
	containers, found, err := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
	if err != nil || !found || len(containers) == 0 {
		return false, errors.New("no containers in spec.template.spec")
	}
	i := 0 // knative: the first
	if deployer != funclib.DeployerKnative {
		i = -1
		for j, c := range containers {
			if m, ok := c.(map[string]any); ok && m["name"] == workload.ContainerName {
				i = j
			}
		}
		if i < 0 {
			return false, fmt.Errorf("no container %s, which func's %s deployer runs the function in", workload.ContainerName, deployer)
		}
	}
	c, ok := containers[i].(map[string]any)
	if !ok {
		return false, fmt.Errorf("container %d is not an object", i)
	}
	if c["image"] == image {
		return false, nil
	}
	if cur, _ := c["image"].(string); replaces != "" && !sameImage(cur, replaces) {
		return false, &SupersededError{Running: cur, Replaces: replaces}
	}
	c["image"] = image
	if env, ok := c["env"].([]any); ok {
		for _, e := range env {
			if v, ok := e.(map[string]any); ok && v["name"] == builtEnv {
				v["value"] = now.UTC().Format(builtLayout)
				delete(v, "valueFrom")
			}
		}
	}
	if err := unstructured.SetNestedSlice(obj.Object, containers, "spec", "template", "spec", "containers"); err != nil {
		return false, err
	}
	if deployer == funclib.DeployerKnative {
		unstructured.RemoveNestedField(obj.Object, "spec", "template", "metadata", "name")
	}
	return true, nil
}

// SupersededError is a Deploy that found the function running another image than
// the one it was to replace: something deployed it since (func deploy, a rebuild),
// and Deploy leaves that deploy be.
type SupersededError struct{ Running, Replaces string }

func (e *SupersededError) Error() string {
	return fmt.Sprintf("the function was deployed anew since (it runs %s, not %s): not overwritten", e.Running, e.Replaces)
}

// sameImage reports whether a and b are one image: equal, or of one digest (a
// Revision names the image it resolved by the repository func wrote, with its digest).
func sameImage(a, b string) bool {
	if a == b {
		return true
	}
	_, da, okA := strings.Cut(a, "@")
	_, db, okB := strings.Cut(b, "@")
	return okA && okB && da == db
}

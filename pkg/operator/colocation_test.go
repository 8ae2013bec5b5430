package operator

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/test/tekton"
)

// affinityAssistantAnnotation is the TaskRun annotation naming the affinity
// assistant (a StatefulSet per PVC workspace) its pod must run beside
// (github.com/tektoncd/pipeline/pkg/workspace AnnotationAffinityAssistantName).
const affinityAssistantAnnotation = "pipeline.tekton.dev/affinity-assistant"

// TestOperator_RebuildTasksShareTheAffinityAssistant runs a rebuild with Tekton's
// default coschedule mode (workspaces), as a real cluster does: func binds its
// source and cache workspaces to one PVC, and Tekton names the PVC's affinity
// assistant after the last workspace bound to it; the clone task the operator adds
// must be pinned to that same assistant as the build task, or its pod would wait
// for an assistant that never exists. Shown on the real Tekton controller: both
// TaskRuns carry the same assistant, and Tekton created it (a StatefulSet).
// (envtest runs no StatefulSet controller or scheduler: no pod is placed here.)
func TestOperator_RebuildTasksShareTheAffinityAssistant(t *testing.T) {
	setCoschedule(t, "workspaces")
	ns := newNamespace(t)
	f := newRebuildFixture(t, ns, "hello")
	// Tekton deletes a run's assistants once it ends: the pods are held until the
	// assistant exists, and its name is recorded.
	var assistant atomic.Value
	tekton.StartKubelet(t, restConfig, tekton.Options{Namespaces: []string{ns}, Registry: f.reg, Decide: succeed(t),
		Hold: func(*pipelinev1.PipelineRun) bool {
			var list appsv1.StatefulSetList
			if err := k8sClient.List(context.Background(), &list, client.InNamespace(ns)); err != nil || len(list.Items) == 0 {
				return false
			}
			assistant.Store(list.Items[0].Name)
			return true
		}})
	startOperatorWith(t, rebuildConfig(1), ns)
	f.createFunction(t, "hello", nil)
	eventually(t, 60*time.Second, rebuilt(t, ns, "hello"))

	var trs pipelinev1.TaskRunList
	if err := k8sClient.List(context.Background(), &trs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	assistants := map[string]string{}
	for _, tr := range trs.Items {
		assistants[tr.Labels["tekton.dev/pipelineTask"]] = tr.Annotations[affinityAssistantAnnotation]
	}
	if len(assistants) != len(tekton.Tasks) || assistants["fetch-sources"] == "" || assistants["fetch-sources"] != assistants["build"] {
		t.Fatalf("affinity assistants by pipeline task = %v, want one, the same, for each of %v", assistants, tekton.Tasks)
	}
	if got, _ := assistant.Load().(string); got != assistants["build"] {
		t.Errorf("Tekton created affinity assistant %q, both tasks are pinned to %q", got, assistants["build"])
	}
}

// setCoschedule sets Tekton's coschedule feature flag for the test, and puts back
// the suite's value after it; it returns once the controller applies the new value
// to a PipelineRun (it reads the ConfigMap through a watch).
func setCoschedule(t *testing.T, value string) {
	t.Helper()
	key := types.NamespacedName{Namespace: "tekton-pipelines", Name: "feature-flags"}
	set := func(v string) error {
		var cm corev1.ConfigMap
		if err := k8sClient.Get(context.Background(), key, &cm); err != nil {
			return err
		}
		old := cm.Data["coschedule"]
		cm.Data["coschedule"] = v
		if err := k8sClient.Update(context.Background(), &cm); err != nil {
			return err
		}
		if old == v {
			return fmt.Errorf("coschedule was %q already", v)
		}
		return nil
	}
	var cm corev1.ConfigMap
	if err := k8sClient.Get(context.Background(), key, &cm); err != nil {
		t.Fatal(err)
	}
	previous := cm.Data["coschedule"]
	if err := set(value); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := set(previous); err != nil {
			t.Errorf("restoring Tekton's coschedule flag: %v", err)
		}
		time.Sleep(2 * time.Second) // the controller's watch applies it
	})
	time.Sleep(2 * time.Second) // the controller's watch applies it
}

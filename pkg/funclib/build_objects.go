package funclib

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	pipelinev1beta1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"
)

// LabelBuildID is the label of every object of a build naming the build (the
// Function's status.build.id): the API proxy finds a build's owner and credentials
// by it.
const LabelBuildID = "functions.dev/build-id"

// registration is what the API proxy knows of a build while func's provider creates
// its objects: who owns them, and the git credentials Secret its run binds.
type registration struct {
	owner     metav1.OwnerReference
	gitSecret string
	gitAuth   *gitAuth
}

// builds are the builds being run, by namespace and build ID.
var builds = struct {
	sync.Mutex
	m map[string]*registration
}{m: map[string]*registration{}}

// register makes the objects func creates for build id in namespace owned and bound
// as reg says, until the returned function is called.
func register(namespace, id string, reg *registration) (unregister func()) {
	k := namespace + "/" + id
	builds.Lock()
	builds.m[k] = reg
	builds.Unlock()
	return func() {
		builds.Lock()
		delete(builds.m, k)
		builds.Unlock()
	}
}

// registered returns the build an object of namespace with labels belongs to.
func registered(namespace string, labels map[string]string) (*registration, error) {
	id := labels[LabelBuildID]
	if id == "" {
		return nil, fmt.Errorf("an object without label %s: func writes only the objects of a build the operator runs", LabelBuildID)
	}
	builds.Lock()
	defer builds.Unlock()
	reg, ok := builds.m[namespace+"/"+id]
	if !ok {
		return nil, fmt.Errorf("an object of build %q in namespace %q, which the operator does not run", id, namespace)
	}
	return reg, nil
}

// owned sets reg's owner as the only owner of meta.
func owned(meta *metav1.ObjectMeta, reg *registration) {
	meta.OwnerReferences = []metav1.OwnerReference{reg.owner}
}

// rewriteCore sets the owner on a Secret or PersistentVolumeClaim func writes.
func rewriteCore(namespace, resource string, body []byte) ([]byte, error) {
	var obj interface {
		GetLabels() map[string]string
	}
	var meta *metav1.ObjectMeta
	var secret *corev1.Secret
	switch resource {
	case resourceSecrets:
		secret = &corev1.Secret{}
		obj, meta = secret, &secret.ObjectMeta
	case resourcePVCs:
		pvc := &corev1.PersistentVolumeClaim{}
		obj, meta = pvc, &pvc.ObjectMeta
	default:
		return nil, fmt.Errorf("func writes no %s", resource)
	}
	if err := strictly(body, obj); err != nil {
		return nil, err
	}
	// func writes one Opaque Secret (the registry's): never a ServiceAccount token or
	// another type the API server or a controller acts on.
	if secret != nil && secret.Type != "" && secret.Type != corev1.SecretTypeOpaque {
		return nil, fmt.Errorf("a Secret of type %s: func writes only Opaque ones", secret.Type)
	}
	reg, err := registered(namespace, obj.GetLabels())
	if err != nil {
		return nil, err
	}
	owned(meta, reg)
	return json.Marshal(obj)
}

// toV1 decodes into out (a tekton.dev/v1 object of kind) the object of API version
// version in body: as it is when v1, converted with Tekton's own conversion from beta
// when v1beta1 (func v0.44 writes v1beta1).
func toV1(kind, version string, body []byte, beta interface {
	ConvertTo(context.Context, apis.Convertible) error
}, out apis.Convertible) error {
	switch version {
	case "v1beta1":
		if err := strictly(body, beta); err != nil {
			return err
		}
		if err := beta.ConvertTo(context.Background(), out); err != nil {
			return fmt.Errorf("converting the %s to tekton.dev/v1: %w", kind, err)
		}
		return nil
	case "v1":
		return strictly(body, out)
	default:
		return fmt.Errorf("a %s of tekton.dev/%s: the proxy knows v1beta1 and v1", kind, version)
	}
}

// rewritePipeline returns, in tekton.dev/v1, the Pipeline func writes, owned by its
// Function, with the Tekton Hub git-clone task replaced by the embedded one bound to
// the optional credential workspaces, and fails on any other task Tekton would
// resolve from outside the cluster.
func rewritePipeline(namespace, version string, body []byte) ([]byte, error) {
	p := &pipelinev1.Pipeline{}
	if err := toV1("Pipeline", version, body, &pipelinev1beta1.Pipeline{}, p); err != nil { //nolint:staticcheck // func v0.44 writes v1beta1
		return nil, err
	}
	p.APIVersion, p.Kind = pipelinev1.SchemeGroupVersion.String(), "Pipeline"
	reg, err := registered(namespace, p.Labels)
	if err != nil {
		return nil, err
	}
	owned(&p.ObjectMeta, reg)
	if err := embedGitClone(&p.Spec); err != nil {
		return nil, err
	}
	return json.Marshal(p)
}

// embedGitClone puts the embedded git-clone task in place of func's hub reference.
func embedGitClone(spec *pipelinev1.PipelineSpec) error {
	if len(spec.Finally) > 0 {
		return errors.New("a Pipeline with finally tasks: func v0.44's has none, check the pipeline after a func bump")
	}
	cloned := false
	for i := range spec.Tasks {
		t := &spec.Tasks[i]
		switch {
		case t.TaskRef == nil && t.TaskSpec != nil:
			continue // func's own tasks, inline
		case t.Name == cloneTaskName && isHubGitClone(t.TaskRef):
			task, err := gitCloneTask()
			if err != nil {
				return err
			}
			t.TaskRef = nil
			t.TaskSpec = &pipelinev1.EmbeddedTask{TaskSpec: task}
			if img := GitCloneImage(); img != "" {
				t.Params = append(t.Params, pipelinev1.Param{Name: gitCloneImageParam, Value: *pipelinev1.NewStructuredValues(img)})
			}
			t.Workspaces = append(t.Workspaces,
				pipelinev1.WorkspacePipelineTaskBinding{Name: taskWorkspaceBasic, Workspace: PipelineWorkspaceHTTP},
				pipelinev1.WorkspacePipelineTaskBinding{Name: taskWorkspaceSSH, Workspace: PipelineWorkspaceSSH},
				pipelinev1.WorkspacePipelineTaskBinding{Name: taskWorkspaceCA, Workspace: PipelineWorkspaceCA})
			cloned = true
		default:
			return fmt.Errorf("pipeline task %q refers to a task the cluster would resolve (%s): the operator embeds every task; check the pipeline after a func bump",
				t.Name, describeRef(t.TaskRef))
		}
	}
	if cloned {
		for _, ws := range []string{PipelineWorkspaceHTTP, PipelineWorkspaceSSH, PipelineWorkspaceCA} {
			spec.Workspaces = append(spec.Workspaces, pipelinev1.PipelineWorkspaceDeclaration{
				Name: ws, Optional: true, Description: "func-operator: the build's git credentials Secret, bound only to the clone task"})
		}
	}
	return nil
}

// isHubGitClone reports whether ref is func's Tekton Hub reference to git-clone.
func isHubGitClone(ref *pipelinev1.TaskRef) bool {
	if ref == nil || ref.Resolver != "hub" {
		return false
	}
	for _, p := range ref.Params {
		if p.Name == "name" && p.Value.StringVal == "git-clone" {
			return true
		}
	}
	return false
}

func describeRef(ref *pipelinev1.TaskRef) string {
	switch {
	case ref == nil:
		return "no task at all"
	case ref.Resolver != "":
		return fmt.Sprintf("resolver %q", ref.Resolver)
	default:
		return fmt.Sprintf("%s %q", orTask(string(ref.Kind)), ref.Name)
	}
}

func orTask(kind string) string {
	if kind == "" {
		return "Task"
	}
	return kind
}

// rewritePipelineRun returns, in tekton.dev/v1, the PipelineRun func creates: owned
// by its Function, run as sa, with the build's git credentials Secret bound to the
// clone task's workspaces. A run that asks for a pod template is refused.
func rewritePipelineRun(namespace, version string, body []byte, sa string) ([]byte, error) {
	run := &pipelinev1.PipelineRun{}
	if err := toV1("PipelineRun", version, body, &pipelinev1beta1.PipelineRun{}, run); err != nil { //nolint:staticcheck // func v0.44 writes v1beta1
		return nil, err
	}
	run.APIVersion, run.Kind = pipelinev1.SchemeGroupVersion.String(), "PipelineRun"
	if run.Spec.TaskRunTemplate.PodTemplate != nil {
		return nil, errors.New("a PipelineRun with a pod template")
	}
	reg, err := registered(namespace, run.Labels)
	if err != nil {
		return nil, err
	}
	owned(&run.ObjectMeta, reg)
	if run.Spec.PipelineRef == nil || run.Spec.PipelineRef.Resolver != "" || run.Spec.PipelineSpec != nil {
		return nil, errors.New("a PipelineRun that does not run the Pipeline func applied")
	}
	run.Spec.TaskRunTemplate.ServiceAccountName = sa
	for i := range run.Spec.TaskRunSpecs {
		if run.Spec.TaskRunSpecs[i].PodTemplate != nil {
			return nil, errors.New("a PipelineRun with a task pod template")
		}
		run.Spec.TaskRunSpecs[i].ServiceAccountName = ""
	}
	for _, w := range run.Spec.Workspaces {
		switch w.Name {
		case PipelineWorkspaceHTTP, PipelineWorkspaceSSH, PipelineWorkspaceCA:
			return nil, fmt.Errorf("a PipelineRun that binds workspace %q itself", w.Name)
		}
	}
	if reg.gitAuth != nil {
		run.Spec.Workspaces = append(run.Spec.Workspaces, reg.gitAuth.bindings(reg.gitSecret)...)
	}
	return json.Marshal(run)
}

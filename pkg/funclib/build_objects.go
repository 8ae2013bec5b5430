package funclib

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
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
	// revision is the commit the build clones: the run's commit parameter, which
	// func's build labels the image with (org.opencontainers.image.revision).
	revision string
	// stepImages are the pins of the images func's tasks name by tag (StepImages).
	stepImages map[string]string
}

// newRegistration is what the proxy knows of req's build before its credentials.
func newRegistration(req BuildRequest) *registration {
	return &registration{owner: req.Owner, revision: req.Revision, stepImages: req.StepImages.replacements()}
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

// rewriteCore sets the owner on a Secret or PersistentVolumeClaim func writes, sent
// as JSON or, when proto, as protobuf (client-go's default for built-in types).
func rewriteCore(namespace, resource string, body []byte, proto bool) ([]byte, error) {
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
	if proto {
		if err := fromProtobuf(body, obj.(runtime.Object)); err != nil {
			return nil, err
		}
	} else if err := strictly(body, obj); err != nil {
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

// protobufCodec decodes the built-in types func's clients send as protobuf.
var protobufCodec = protobuf.NewSerializer(clientgoscheme.Scheme, clientgoscheme.Scheme)

// fromProtobuf decodes body, a Kubernetes protobuf envelope, into obj, and fails
// unless it holds an object of obj's kind. What protobuf carries has no spelling
// of its own (fields are numbered): the JSON sent on is obj's.
func fromProtobuf(body []byte, obj runtime.Object) error {
	gvks, _, err := clientgoscheme.Scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return fmt.Errorf("the proxy knows no kind for %T", obj)
	}
	want := gvks[0]
	_, gvk, err := protobufCodec.Decode(body, &want, obj)
	if err != nil {
		return fmt.Errorf("the object is not protobuf: %w", err)
	}
	if *gvk != want {
		return fmt.Errorf("a %s sent as a %s", gvk.Kind, want.Kind)
	}
	obj.GetObjectKind().SetGroupVersionKind(want)
	return nil
}

// decodeV1 strictly decodes body, a tekton.dev object of API version version, into
// out. func v0.50 writes tekton.dev/v1 only (v0.44 wrote v1beta1, which the proxy
// converted): any other version is refused, since no func the operator links
// writes it.
func decodeV1(kind, version string, body []byte, out any) error {
	if version != "v1" {
		return fmt.Errorf("a %s of tekton.dev/%s: func writes tekton.dev/v1", kind, version)
	}
	return strictly(body, out)
}

// rewritePipeline returns the Pipeline func writes, owned by its Function, with the
// clone step of func's build task moved into a pipeline task of its own that runs
// the embedded git-clone task bound to the optional credential workspaces (see
// splitClone), the images func's tasks name by tag replaced by the build's pins
// (StepImages), and fails on anything else Tekton would resolve from outside the
// cluster.
func rewritePipeline(namespace, version string, body []byte) ([]byte, error) {
	p := &pipelinev1.Pipeline{}
	if err := decodeV1("Pipeline", version, body, p); err != nil {
		return nil, err
	}
	p.APIVersion, p.Kind = pipelinev1.SchemeGroupVersion.String(), "Pipeline"
	reg, err := registered(namespace, p.Labels)
	if err != nil {
		return nil, err
	}
	owned(&p.ObjectMeta, reg)
	if err := splitClone(&p.Spec); err != nil {
		return nil, err
	}
	pinStepImages(&p.Spec, reg.stepImages)
	return json.Marshal(p)
}

// rewritePipelineRun returns, in tekton.dev/v1, the PipelineRun func creates: owned
// by its Function, run as sa, with the build's git credentials Secret bound to the
// clone task's workspaces, and the commit it builds as its commit parameter. A run
// that asks for a pod template is refused.
func rewritePipelineRun(namespace, version string, body []byte, sa string) ([]byte, error) {
	run := &pipelinev1.PipelineRun{}
	if err := decodeV1("PipelineRun", version, body, run); err != nil {
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
	// func v0.50 reads the commit from the function root's git repository, and the
	// operator's root is an empty scratch directory: the operator knows the commit.
	for i := range run.Spec.Params {
		if run.Spec.Params[i].Name == commitParam && reg.revision != "" {
			run.Spec.Params[i].Value = *pipelinev1.NewStructuredValues(reg.revision)
		}
	}
	return json.Marshal(run)
}

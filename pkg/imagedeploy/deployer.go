package imagedeploy

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"

	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/text"
)

// Target is what func deployed for a function.
type Target struct {
	// Deployer is the func deployer that deployed it: funclib.DeployerKnative,
	// DeployerRaw or DeployerKeda.
	Deployer string
	// Namespace and Name are the Knative Service's (knative) or the Deployment's (raw,
	// keda); func names either after the function.
	Namespace, Name string
	// UID, when set, is the object's: one replaced since under the same name is not
	// written (a *SupersededError).
	UID types.UID
	// Replaces, when set, is the image the function must still run (the template's,
	// or of its digest): a deploy since is never overwritten (a *SupersededError).
	Replaces string
}

// Written is what Deploy wrote.
type Written struct {
	// Image is what the function's container runs now: the image Deploy was given.
	Image string
	// Generation is the object's metadata.generation after the write: the Knative
	// Service's new Revision, or the Deployment's rollout, is of it (the object's
	// status.observedGeneration reaches it).
	Generation int64
	// ResourceVersion is the object's after the write.
	ResourceVersion string
	// Changed is false when the object ran image already: nothing was written.
	Changed bool
}

// FieldManager is the manager of the fields Deploy writes, in the object's
// managedFields.
const FieldManager = "func-operator-imagedeploy"

// Deployer deploys images into what func deployed, as the namespaces' build
// ServiceAccounts.
type Deployer struct {
	// Config is the operator's. Each Deploy copies it and impersonates the build
	// ServiceAccount of the target's namespace, in place of any impersonation Config has.
	Config *rest.Config

	// clock dates func's BUILT variable; the real clock when nil.
	clock clock.PassiveClock
}

// The resources func's deployers write.
var (
	knativeServices = schema.GroupVersionResource{Group: "serving.knative.dev", Version: "v1", Resource: "services"}
	deployments     = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

// ServiceAccountUser is ServiceAccount serviceAccount of namespace as the API server
// names it: the user Deploy impersonates.
func ServiceAccountUser(namespace, serviceAccount string) string {
	return "system:serviceaccount:" + namespace + ":" + serviceAccount
}

// Deploy sets the function's container image to image (a digest reference) as
// system:serviceaccount:<namespace>:<serviceAccount>, the way func's deployer writes
// it on an update (see edit.go), and returns what it wrote. It reads the object and
// updates it (the build grant has get and update, not patch), again on a conflict; an
// object that runs image already is not written. A refusal, of the impersonation or of
// the ServiceAccount's read or write, is a *ForbiddenError.
func (d *Deployer) Deploy(ctx context.Context, t Target, serviceAccount, image string) (Written, error) {
	if err := check(t, serviceAccount, image); err != nil {
		return Written{}, err
	}
	if d.Config == nil {
		return Written{}, errors.New("imagedeploy: no rest.Config")
	}
	gvr, kind := deployments, "Deployment"
	if t.Deployer == funclib.DeployerKnative {
		gvr, kind = knativeServices, "Knative Service"
	}
	cfg := rest.CopyConfig(d.Config)
	// No groups: the API server gives an impersonated ServiceAccount its own
	// (system:serviceaccounts, system:serviceaccounts:<namespace>, system:authenticated).
	cfg.Impersonate = rest.ImpersonationConfig{UserName: ServiceAccountUser(t.Namespace, serviceAccount)}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return Written{}, fmt.Errorf("a client impersonating %s: %w", cfg.Impersonate.UserName, err)
	}
	objects := dyn.Resource(gvr).Namespace(t.Namespace)
	var clk clock.PassiveClock = clock.RealClock{}
	if d.clock != nil {
		clk = d.clock
	}
	what := fmt.Sprintf("%s %s/%s as ServiceAccount %s", kind, t.Namespace, t.Name, serviceAccount)
	var written Written
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := objects.Get(ctx, t.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading %s: %w", what, refused(err, t.Namespace, serviceAccount, gvr, "get"))
		}
		if obj.GetDeletionTimestamp() != nil {
			// As func's knative deployer (knative client's UpdateServiceWithRetry).
			return fmt.Errorf("not deploying to %s: it is being deleted", what)
		}
		if err := checkDeployer(t, obj); err != nil {
			return err
		}
		if t.UID != "" && obj.GetUID() != t.UID {
			return fmt.Errorf("%s: %w", what, &SupersededError{Running: "another object (UID " + string(obj.GetUID()) + ")", Replaces: "UID " + string(t.UID)})
		}
		changed, err := edit(t.Deployer, obj, image, t.Replaces, clk.Now())
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if !changed {
			written = Written{Image: image, Generation: obj.GetGeneration(), ResourceVersion: obj.GetResourceVersion()}
			return nil
		}
		// The status is not the writer's (the main resource's update ignores it anyway).
		unstructured.RemoveNestedField(obj.Object, "status")
		out, err := objects.Update(ctx, obj, metav1.UpdateOptions{FieldManager: FieldManager})
		if err != nil {
			return fmt.Errorf("updating %s: %w", what, refused(err, t.Namespace, serviceAccount, gvr, "update"))
		}
		written = Written{Image: image, Generation: out.GetGeneration(), ResourceVersion: out.GetResourceVersion(), Changed: true}
		return nil
	})
	if err != nil {
		return Written{}, err
	}
	return written, nil
}

// check refuses a target, ServiceAccount or image Deploy cannot write.
func check(t Target, serviceAccount, image string) error {
	if !funclib.KnownDeployer(t.Deployer) {
		return fmt.Errorf("imagedeploy: deployer %q is none of func's %v", t.Deployer, funclib.Deployers())
	}
	if t.Namespace == "" || t.Name == "" || serviceAccount == "" {
		return fmt.Errorf("imagedeploy: namespace %q, name %q and ServiceAccount %q: none may be empty", t.Namespace, t.Name, serviceAccount)
	}
	// A digest, never a tag: what runs is then what was rebased, whatever the tag
	// points to later, as func deploys a build's image by digest.
	if _, err := name.NewDigest(image); err != nil {
		return fmt.Errorf("imagedeploy: image %q is not a digest reference: %w", image, err)
	}
	return nil
}

// checkDeployer refuses an object that func's deployer t.Deployer did not write, by
// func's annotation (funclib.DeployerAnnotation): the function was redeployed with
// another deployer since the caller looked.
func checkDeployer(t Target, obj *unstructured.Unstructured) error {
	got, ok := obj.GetAnnotations()[funclib.DeployerAnnotation]
	if t.Deployer == funclib.DeployerKnative && (!ok || got == funclib.DeployerKnative) {
		return nil // func before v0.47 annotated no Knative Service
	}
	switch {
	case !ok:
		return fmt.Errorf("not deploying to %s %s/%s: it has no annotation %s, which func's %s deployer writes",
			obj.GetKind(), t.Namespace, t.Name, funclib.DeployerAnnotation, t.Deployer)
	case got != t.Deployer:
		// The annotation is anyone's text who may write the object: cut.
		return fmt.Errorf("not deploying to %s %s/%s: func's %q deployer wrote it (annotation %s), not its %s deployer",
			obj.GetKind(), t.Namespace, t.Name, text.Cut(got, 63, "…"), funclib.DeployerAnnotation, t.Deployer)
	}
	return nil
}

package sharedmain

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/test/envtest"
)

// ModuleDir returns the directory of a module the repository requires, as the go
// command resolves it from the repository's go.mod.
func ModuleDir(module string) (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module)
	cmd.Dir = envtest.RepoRoot()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list -m %s: %w: %s", module, err, stderr.String())
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", fmt.Errorf("go list -m %s: the module is not in the module cache", module)
	}
	return dir, nil
}

// Container is how a release runs a controller: its container's arguments and
// environment.
type Container struct {
	Args, Env []string
}

// ReleaseContainer reads container of Deployment deployment, in namespace, from the
// release's YAML file and returns its arguments and environment: the literal values
// (but those skip names), SYSTEM_NAMESPACE as namespace and POD_NAME as the
// Deployment's name with a suffix (the release takes both from the Pod); any other
// variable from elsewhere is an error.
func ReleaseContainer(file, namespace, deployment, container string, skip map[string]bool) (Container, error) {
	objs, err := envtest.Read(file)
	if err != nil {
		return Container{}, err
	}
	var ctr *corev1.Container
	for _, o := range objs {
		if o.GetKind() != "Deployment" || o.GetName() != deployment {
			continue
		}
		d := &appsv1.Deployment{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, d); err != nil {
			return Container{}, fmt.Errorf("decoding Deployment %s of %s: %w", deployment, file, err)
		}
		if d.Namespace != namespace {
			return Container{}, fmt.Errorf("%s: Deployment %s runs in namespace %q, not %s", file, deployment, d.Namespace, namespace)
		}
		for i := range d.Spec.Template.Spec.Containers {
			if d.Spec.Template.Spec.Containers[i].Name == container {
				ctr = &d.Spec.Template.Spec.Containers[i]
			}
		}
	}
	if ctr == nil {
		return Container{}, fmt.Errorf("%s: no container %s in Deployment %s", file, container, deployment)
	}
	run := Container{Args: append([]string(nil), ctr.Args...)}
	for _, e := range ctr.Env {
		switch {
		case e.Name == "SYSTEM_NAMESPACE":
			run.Env = append(run.Env, e.Name+"="+namespace)
		case e.Name == "POD_NAME":
			run.Env = append(run.Env, e.Name+"="+deployment+"-test")
		case skip[e.Name]:
		case e.ValueFrom != nil:
			return Container{}, fmt.Errorf("%s: the controller's variable %s comes from %+v, which is not known here", file, e.Name, e.ValueFrom)
		default:
			run.Env = append(run.Env, e.Name+"="+e.Value)
		}
	}
	return run, nil
}

// ConfigMaps decodes the ConfigMaps of the YAML files, in namespace.
func ConfigMaps(namespace string, files ...string) ([]*corev1.ConfigMap, error) {
	objs, err := envtest.Read(files...)
	if err != nil {
		return nil, err
	}
	var cms []*corev1.ConfigMap
	for _, o := range objs {
		if o.GetKind() != "ConfigMap" {
			continue
		}
		cm := &corev1.ConfigMap{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, cm); err != nil {
			return nil, fmt.Errorf("decoding ConfigMap %s: %w", o.GetName(), err)
		}
		cm.Namespace = namespace
		cms = append(cms, cm)
	}
	return cms, nil
}

// Install creates the namespace and the ConfigMaps in it; those that exist are left
// as they are.
func Install(ctx context.Context, cfg *rest.Config, namespace string, cms []*corev1.ConfigMap) error {
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return fmt.Errorf("creating a client: %w", err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", namespace, err)
	}
	for _, cm := range cms {
		if err := c.Create(ctx, cm.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
		}
	}
	return nil
}

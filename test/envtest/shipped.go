package envtest

import (
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ShippedDeployment reads the operator's Deployment of DeploymentFile, as config/
// ships it, for the tests that run the binary as its container does.
func ShippedDeployment() (*appsv1.Deployment, error) {
	objs, err := Read(DeploymentFile)
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		d := &appsv1.Deployment{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, d); err != nil {
			return nil, fmt.Errorf("decoding the Deployment of %s: %w", DeploymentFile, err)
		}
		return d, nil
	}
	return nil, fmt.Errorf("%s holds no Deployment", DeploymentFile)
}

// EnvValue is what the kubelet gives container c of Deployment d as env var e: its
// value, or what its Downward API source names that a test can stand in for (the
// pod's namespace, as the Deployment's; the container's memory limit, in bytes). An
// error names any other source.
func EnvValue(d *appsv1.Deployment, c corev1.Container, e corev1.EnvVar) (string, error) {
	switch f := e.ValueFrom; {
	case f == nil:
		return e.Value, nil
	case f.FieldRef != nil && f.FieldRef.FieldPath == "metadata.namespace":
		return d.Namespace, nil
	case f.ResourceFieldRef != nil && f.ResourceFieldRef.Resource == "limits.memory" && f.ResourceFieldRef.Divisor.IsZero():
		return strconv.FormatInt(c.Resources.Limits.Memory().Value(), 10), nil
	}
	return "", fmt.Errorf("env %s comes from %+v, which a test cannot stand in for", e.Name, e.ValueFrom)
}

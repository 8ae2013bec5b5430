//go:build scale

package scale

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	httpv1alpha1 "github.com/kedacore/http-add-on/operator/apis/http/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/test/envtest"
)

// This file makes the mixed fleet: of each repository's function directories, the
// first share RAW are deployed by func's raw deployer, the next share KEDA by its keda
// deployer, the rest by its knative deployer (as before). Every repository holds the
// same directories, so the deployer goes by the directory, and func.yaml names it.

// deployerOf is the deployer of the function directory fnName(i), of most directories.
func (p params) deployerOf(i, most int) string {
	raw := int(math.Round(p.raw * float64(most)))
	keda := int(math.Round(p.keda * float64(most)))
	switch {
	case i < raw:
		return funclib.DeployerRaw
	case i < raw+keda:
		return funclib.DeployerKeda
	}
	return funclib.DeployerKnative
}

// mostPerRepo is how many function directories the largest repository holds.
func (p params) mostPerRepo() int { return (p.n + p.r - 1) / p.r }

// fleet counts the Functions of each deployer.
func (b *bench) fleet() map[string]int {
	out := map[string]int{}
	most := b.p.mostPerRepo()
	for _, r := range b.repos {
		for i := 0; i < r.fns; i++ {
			out[b.p.deployerOf(i, most)]++
		}
	}
	return out
}

// funcYAML is the func.yaml of function directory name, naming its deployer (at the
// top, what was asked for, and under deploy, what func recorded it deployed with), as
// func deploy --deployer writes it; the knative ones name none (func's default).
func (b *bench) funcYAML(name, deployer string) string {
	y := fmt.Sprintf("specVersion: 0.36.0\nname: %s\nruntime: go\nregistry: %s/scale\nbuild:\n  builder: pack\n", name, b.reg.Host)
	if deployer != funclib.DeployerKnative {
		y += fmt.Sprintf("deployer: %s\ndeploy:\n  deployer: %s\n", deployer, deployer)
	}
	return y
}

// deploy creates what func's deployer of function directory name deploys in ns, with
// the status its controllers would report once it serves.
func (b *bench) deploy(ctx context.Context, ns, name, deployer string) error {
	switch deployer {
	case funclib.DeployerRaw, funclib.DeployerKeda:
		return b.createWorkload(ctx, ns, name, deployer)
	}
	if err := b.createService(ctx, ns, name); err != nil {
		return err
	}
	if b.p.knativeObjects {
		return b.simulateKnativeServing(ctx, ns, name)
	}
	return nil
}

// queueImage is the image of Knative Serving's queue-proxy, by digest.
const queueImage = "gcr.io/knative-releases/knative.dev/serving/cmd/queue@sha256:7b5d5fb2b8a8c7c1f0e4d1b2a3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6"

// simulateKnativeServing creates what Knative Serving (v0.50) makes of a function's
// Knative Service that carries func's labels, and so lands in the operator's
// Deployment and Service caches (workload.CacheSelector): func labels the Service's
// template too, so its first Revision's Deployment (makeLabels: the Revision's labels)
// and the ServerlessService's public and private Services (the PodAutoscaler's labels,
// the Revision's) carry function.knative.dev/name, and so does the Route's placeholder
// Service, named as the function (the Route's labels, the Service's). Every retained
// Revision of a function costs the first three again. A simulation: no Knative
// controller runs here; the Deployment's status is the deployment controller's.
func (b *bench) simulateKnativeServing(ctx context.Context, ns, name string) error {
	rev := name + "-00001"
	revLabels := funcLabels(name)
	for k, v := range map[string]string{
		"app": rev, "serving.knative.dev/configuration": name, "serving.knative.dev/configurationGeneration": "1",
		"serving.knative.dev/configurationUID": string(uuid.NewUUID()), "serving.knative.dev/revision": rev,
		"serving.knative.dev/revisionUID": string(uuid.NewUUID()), "serving.knative.dev/service": name,
		"serving.knative.dev/serviceUID": string(uuid.NewUUID()),
	} {
		revLabels[k] = v
	}
	revAnnotations := map[string]string{"serving.knative.dev/creator": "system:serviceaccount:fns:func", "serving.knative.dev/routes": name,
		"serving.knative.dev/routingStateModified": time.Now().UTC().Format(time.RFC3339)}
	env := func(kv ...string) []corev1.EnvVar {
		out := make([]corev1.EnvVar, 0, len(kv)/2)
		for i := 0; i+1 < len(kv); i += 2 {
			out = append(out, corev1.EnvVar{Name: kv[i], Value: kv[i+1]})
		}
		return out
	}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: rev + "-deployment", Labels: revLabels, Annotations: revAnnotations},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"serving.knative.dev/revisionUID": revLabels["serving.knative.dev/revisionUID"]}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: revLabels, Annotations: revAnnotations},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "user-container", Image: b.image,
					Ports: []corev1.ContainerPort{{Name: "user-port", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
					Env:   env("PORT", "8080", "K_REVISION", rev, "K_CONFIGURATION", name, "K_SERVICE", name),
				}, {
					Name: "queue-proxy", Image: queueImage,
					Ports: []corev1.ContainerPort{{Name: "http-queueadm", ContainerPort: 8022}, {Name: "http-autometric", ContainerPort: 9090},
						{Name: "http-usermetric", ContainerPort: 9091}, {Name: "queue-port", ContainerPort: 8012}, {Name: "https-port", ContainerPort: 8112}},
					Env: env("SERVING_NAMESPACE", ns, "SERVING_SERVICE", name, "SERVING_CONFIGURATION", name, "SERVING_REVISION", rev,
						"QUEUE_SERVING_PORT", "8012", "QUEUE_SERVING_TLS_PORT", "8112", "CONTAINER_CONCURRENCY", "0", "REVISION_TIMEOUT_SECONDS", "300",
						"USER_PORT", "8080", "SYSTEM_NAMESPACE", "knative-serving", "SERVING_LOGGING_LEVEL", "", "SERVING_REQUEST_LOG_TEMPLATE", "",
						"SERVING_ENABLE_PROBE_REQUEST_LOG", "false", "METRICS_DOMAIN", "knative.dev/internal/serving", "SERVING_READINESS_PROBE",
						`{"tcpSocket":{"port":8080,"host":"127.0.0.1"},"successThreshold":1}`, "ENABLE_PROFILING", "false"),
				}}},
			},
		},
	}
	if err := b.admin.Create(ctx, d); err != nil {
		return fmt.Errorf("creating the Revision's Deployment (Knative Serving simulation): %w", err)
	}
	if err := b.simulateDeploymentController(ctx, d); err != nil {
		return err
	}
	sksLabels := func(serviceType string) map[string]string {
		out := map[string]string{"networking.internal.knative.dev/serverlessservice": rev, "networking.internal.knative.dev/serviceType": serviceType}
		for k, v := range revLabels {
			out[k] = v
		}
		return out
	}
	for _, svc := range []*corev1.Service{{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: rev, Labels: sksLabels("Public")},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8012), Protocol: corev1.ProtocolTCP},
			{Name: "https", Port: 443, TargetPort: intstr.FromInt32(8112), Protocol: corev1.ProtocolTCP}}},
	}, {
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: rev + "-private", Labels: sksLabels("Private")},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"serving.knative.dev/revisionUID": revLabels["serving.knative.dev/revisionUID"]},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8012), Protocol: corev1.ProtocolTCP},
				{Name: "https", Port: 443, TargetPort: intstr.FromInt32(8112), Protocol: corev1.ProtocolTCP},
				{Name: "http-autometric", Port: 9090, TargetPort: intstr.FromInt32(9090), Protocol: corev1.ProtocolTCP},
				{Name: "http-usermetric", Port: 9091, TargetPort: intstr.FromInt32(9091), Protocol: corev1.ProtocolTCP},
				{Name: "http-queueadm", Port: 8022, TargetPort: intstr.FromInt32(8022), Protocol: corev1.ProtocolTCP}}},
	}, {
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{
			"function.knative.dev/name": name, "serving.knative.dev/service": name, "serving.knative.dev/route": name}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "kourier-internal.kourier-system.svc.cluster.local",
			Ports: []corev1.ServicePort{{Name: "http2", Port: 80, TargetPort: intstr.FromInt32(80), Protocol: corev1.ProtocolTCP}}},
	}} {
		if err := b.admin.Create(ctx, svc); err != nil {
			return fmt.Errorf("creating Service %s (Knative Serving simulation): %w", svc.Name, err)
		}
	}
	return nil
}

// funcContainer is the container func v0.50.1's deployers run a function of the
// default settings in: func's env (BUILT, ADDRESS), probes and security context; the
// raw deployer names it and its port, the knative one leaves them to Knative Serving.
func funcContainer(image string, raw bool) corev1.Container {
	var port intstr.IntOrString
	c := corev1.Container{
		Image: image,
		Env: []corev1.EnvVar{
			{Name: "BUILT", Value: time.Now().UTC().Format("20060102T150405")},
			{Name: "ADDRESS", Value: "0.0.0.0"},
		},
		SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot:             ptr.To(true),
			AllowPrivilegeEscalation: ptr.To(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	}
	if raw {
		c.Name, port = "user-container", intstr.FromInt32(8080)
		c.Ports = []corev1.ContainerPort{{ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}
	}
	c.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health/liveness", Port: port}}}
	c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health/readiness", Port: port}}}
	return c
}

// funcLabels are the labels func's deployers (deployer.GenerateCommonLabels of func
// v0.50.1) put on everything they deploy of a Go function without labels of its own.
func funcLabels(name string) map[string]string {
	return map[string]string{"boson.dev/function": "true", "function.knative.dev/name": name, "function.knative.dev/runtime": "go"}
}

// createWorkload creates what func v0.50.1's raw deployer (pkg/k8s, generateDeployment
// and generateService) writes for a function of the default settings — a Deployment
// running the image by digest in user-container, with func's env, probes and security
// context, and a ClusterIP Service owned by it — and, for the keda deployer (pkg/keda),
// its ExternalName bridge Service to KEDA's interceptor and its HTTPScaledObject. It
// then writes the statuses their controllers would (simulateDeploymentController,
// simulateKEDAHTTPAddOn): nothing runs them here.
func (b *bench) createWorkload(ctx context.Context, ns, name, deployer string) error {
	w := envtest.NewFuncWorkload(ns, name, b.image, deployer)
	w.Deployment.Spec.Template.Spec.Containers = []corev1.Container{funcContainer(b.image, true)}
	if err := w.Create(ctx, b.admin); err != nil {
		return err
	}
	if err := b.simulateDeploymentController(ctx, w.Deployment); err != nil {
		return err
	}
	if w.ScaledObject == nil {
		return nil
	}
	return b.simulateKEDAHTTPAddOn(ctx, w.ScaledObject)
}

// simulateDeploymentController writes the status the deployment controller reports
// of a Deployment of one replica once it has rolled out (the ReplicaSet's pod running
// and ready): a simulation, as no kube-controller-manager or kubelet runs here (at
// this scale they would cost the 2 cores more than the operator does).
func (b *bench) simulateDeploymentController(ctx context.Context, d *appsv1.Deployment) error {
	now := metav1.Now()
	d.Status = appsv1.DeploymentStatus{
		ObservedGeneration: d.Generation,
		Replicas:           1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
		Conditions: []appsv1.DeploymentCondition{{
			Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, LastUpdateTime: now, LastTransitionTime: now,
			Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability.",
		}, {
			Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, LastUpdateTime: now, LastTransitionTime: now,
			Reason: "NewReplicaSetAvailable", Message: fmt.Sprintf("ReplicaSet %q has successfully progressed.", d.Name+"-5d4b8c7f9"),
		}},
	}
	if err := b.admin.Status().Update(ctx, d); err != nil {
		return fmt.Errorf("writing the Deployment's status (deployment controller simulation): %w", err)
	}
	return nil
}

// simulateKEDAHTTPAddOn writes what the KEDA HTTP add-on's operator (v0.12.0) writes
// on an HTTPScaledObject it made a KEDA ScaledObject for: its finalizer, and its
// status with Ready True (envtest.KEDAHTTPScaledObjectStatus). A simulation, once per
// object (envtest.SimulateKEDAHTTPAddOn would resync every object every second).
func (b *bench) simulateKEDAHTTPAddOn(ctx context.Context, hso *httpv1alpha1.HTTPScaledObject) error {
	hso.Finalizers = append(hso.Finalizers, envtest.KEDAHTTPFinalizer)
	if err := b.admin.Update(ctx, hso); err != nil {
		return fmt.Errorf("setting the KEDA HTTP add-on's finalizer (simulation): %w", err)
	}
	hso.Status = envtest.KEDAHTTPScaledObjectStatus(hso, true)
	if err := b.admin.Status().Update(ctx, hso); err != nil {
		return fmt.Errorf("writing the HTTPScaledObject's status (KEDA HTTP add-on simulation): %w", err)
	}
	return nil
}

// checkBound fails the test unless every Function is bound to what its deployer
// deployed: status.deployment.deployer, counted over the fleet, as fleet() counts it.
func (b *bench) checkBound(t *testing.T) {
	t.Helper()
	got := map[string]int{}
	list := &v1alpha1.FunctionList{}
	opts := []client.ListOption{client.Limit(500)}
	for {
		if err := b.admin.List(context.Background(), list, opts...); err != nil {
			t.Fatal(err)
		}
		for i := range list.Items {
			if d := list.Items[i].Status.Deployment; d != nil {
				got[d.Deployer]++
			} else {
				got[""]++
			}
		}
		if list.Continue == "" {
			break
		}
		opts = []client.ListOption{client.Limit(500), client.Continue(list.Continue)}
	}
	if diff := cmp.Diff(b.fleet(), got); diff != "" {
		t.Errorf("the Functions' status.deployment.deployer, counted (-want +got):\n%s", diff)
	}
}

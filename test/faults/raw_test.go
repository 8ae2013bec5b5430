package faults

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/test/envtest"
)

// What func's raw deployer (knative.dev/func pkg/k8s, v0.50.1) writes, spelled out
// here as func spells it, not taken from the operator: the fixture must not agree
// with the operator by construction.
const (
	// rawFuncYAML is what a raw function's func.yaml adds: the deployer asked for.
	rawFuncYAML = "deployer: raw\n"
	// rawDeployer is the deployer annotation's value, and status.deployment.deployer's.
	rawDeployer = "raw"
	// rawContainer is the container func's raw deployer runs the function in.
	rawContainer = "user-container"
	// rawPort is the port func's function listens on (pkg/k8s DefaultHTTPPort).
	rawPort = 8080
)

// workloads drives raw functions' Deployments as a cluster would: the real
// deployment, replicaset and garbage collector controllers of kube-controller-manager,
// and a kubelet simulation for their pods, which holds the pods of a function marked
// unavailable Running but not ready (a failing readiness probe).
type workloads struct {
	pods *envtest.Kubelet

	mu          sync.Mutex
	unavailable map[string]bool // namespace/name of functions whose pods are held not ready
	// held counts the answers that held a pod not ready: the control that the fault
	// took.
	held atomic.Int64
}

// startWorkloads starts the workload controllers and the kubelet simulation for the
// rest of the suite (stopped, kube-controller-manager by its pid, when it ends).
func (s *suite) startWorkloads(t *testing.T) {
	t.Helper()
	began := time.Now()
	s.env.StartControllersT(s.top, envtest.WorkloadControllers()...)
	w := &workloads{unavailable: map[string]bool{}}
	w.pods = envtest.SimulateKubeletT(s.top, s.env.Config, envtest.KubeletOptions{NotReady: w.notReady})
	s.workloads = w
	t.Logf("workload controllers and kubelet simulation started in %s", time.Since(began).Round(time.Millisecond))
}

// notReady is the kubelet simulation's knob: a pod of a function marked unavailable.
func (w *workloads) notReady(p *corev1.Pod) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.unavailable[p.Namespace+"/"+p.Labels["function.knative.dev/name"]] {
		return false
	}
	w.held.Add(1)
	return true
}

// setUnavailable holds the pods of the function key not ready (on), or lets them go,
// at once.
func (w *workloads) setUnavailable(key string, on bool) {
	w.mu.Lock()
	w.unavailable[key] = on
	w.mu.Unlock()
	w.pods.Resync()
}

// createRawFunctions pushes each raw function's image, running the newest
// middleware, and deploys it as func's raw deployer does.
func (s *suite) createRawFunctions(t *testing.T, f *fleet) {
	t.Helper()
	for _, name := range f.raw {
		s.createRaw(t, f.ns, name, s.reg.Push(t, f.ns+"/"+name, s.middleware))
	}
}

// createRaw creates what func's raw deployer deploys for function name of ns running
// image (by digest, as func deploys a build's image): a Deployment of one replica and
// a ClusterIP Service the Deployment owns, both labelled with the function's name
// and annotated with the deployer (pkg/k8s generateDeployment, generateService).
func (s *suite) createRaw(t *testing.T, ns, name, image string) {
	t.Helper()
	labels := map[string]string{"boson.dev/function": "true", "function.knative.dev/name": name, "function.knative.dev/runtime": "go"}
	annotations := map[string]string{"function.knative.dev/deployer": rawDeployer}
	replicas := int32(1)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, Annotations: annotations},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: rawContainer, Image: image,
					Ports: []corev1.ContainerPort{{ContainerPort: rawPort, Protocol: corev1.ProtocolTCP}},
				}}},
			},
		},
	}
	if err := s.admin.Create(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))}},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: labels,
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(rawPort), Protocol: corev1.ProtocolTCP}},
		},
	}
	if err := s.admin.Create(context.Background(), svc); err != nil {
		t.Fatal(err)
	}
}

// deployment reads a Deployment, nil while the API server does not answer.
func (s *suite) deployment(ns, name string) *appsv1.Deployment {
	d := &appsv1.Deployment{}
	if err := s.admin.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, d); err != nil {
		return nil
	}
	return d
}

// rawReady says why the raw function is not Ready, bound to its Deployment as func's
// raw deployer's, "" once it is: the positive control that the operator took the raw
// path (not a Knative Service's).
func (s *suite) rawReady(ns, name string) string {
	if msg := s.ready(ns, name); msg != "" {
		return msg
	}
	fn, d := s.function(ns, name), s.deployment(ns, name)
	if fn == nil || d == nil {
		return "not read"
	}
	if dep, svc := fn.Status.Deployment, fn.Status.Service; dep == nil || dep.Deployer != rawDeployer || svc == nil || svc.UID != d.UID ||
		dep.Image != d.Spec.Template.Spec.Containers[0].Image {
		return fmt.Sprintf("%s/%s: status.deployment %+v, status.service %+v; want func's raw deployer's Deployment %s (UID %s, image %s)",
			ns, name, dep, svc, d.Name, d.UID, d.Spec.Template.Spec.Containers[0].Image)
	}
	return ""
}

// rawUnavailable is the raw functions' own fault, their counterpart of a Knative
// Service that stops being Ready: the kubelet holds the pod of a raw function not
// ready, as a failing readiness probe would, so that its Deployment is unavailable.
// The Function says so in the Deployment's words (ServiceReady, and Ready, False with
// the reason of its Available condition) while it lasts, and is Ready again once the
// pod is. It is the one fault of the suite that makes a function unhealthy: the
// observer counts its Ready going down apart, not as a flap.
func (s *suite) rawUnavailable(t *testing.T) {
	f := s.newNamespace(t, "unavailable", 0, 0, false)
	f.raw = []string{"raw-0"}
	s.populate(t, f)
	s.fleets = append(s.fleets, f)
	name, key := f.raw[0], f.key(f.raw[0])
	until(t, 2*time.Minute, "the raw function Ready", func() string { return s.rawReady(f.ns, name) })
	s.obs.expectUnhealthy(key, true)
	held := s.workloads.held.Load()
	s.workloads.setUnavailable(key, true)
	defer s.workloads.setUnavailable(key, false) // at once below; this when the test fails first
	var reason string
	seen := until(t, time.Minute, "ServiceReady False in the Deployment's words", func() string {
		d := s.deployment(f.ns, name)
		if d == nil {
			return "Deployment not read"
		}
		var available *appsv1.DeploymentCondition
		for i := range d.Status.Conditions {
			if d.Status.Conditions[i].Type == appsv1.DeploymentAvailable {
				available = &d.Status.Conditions[i]
			}
		}
		if available == nil || available.Status != corev1.ConditionFalse {
			return fmt.Sprintf("Deployment %s: Available %+v, status %+v", name, available, d.Status)
		}
		fn := s.function(f.ns, name)
		if fn == nil {
			return "not read"
		}
		c, ready := fn.Status.GetCondition(v1alpha1.FunctionConditionServiceReady), fn.Status.GetCondition(v1alpha1.FunctionConditionReady)
		if c == nil || !c.IsFalse() || c.Reason != available.Reason || ready == nil || !ready.IsFalse() {
			return fmt.Sprintf("ServiceReady %+v, Ready %+v; want both False, reason %s, as the Deployment's status says: %+v", c, ready, available.Reason, d.Status)
		}
		reason = c.Reason
		return ""
	})
	if n := s.workloads.held.Load() - held; n == 0 {
		t.Error("the kubelet simulation held no pod of the raw function not ready: the fault did not take")
	}
	s.workloads.setUnavailable(key, false)
	ended := time.Now()
	until(t, time.Minute, "the raw function Ready again", func() string { return s.rawReady(f.ns, name) })
	recovered := time.Since(ended)
	until(t, 30*time.Second, "the observer seeing it go down once and come back", func() string {
		if downs, ready := s.obs.readyDowns(key); downs != 1 || !ready {
			return fmt.Sprintf("Ready went down %d times, Ready now %v; want once, and Ready", downs, ready)
		}
		return ""
	})
	s.obs.expectUnhealthy(key, false)
	s.record(t, "a raw function's Deployment unavailable (the kubelet holds its pod not ready)",
		fmt.Sprintf("ServiceReady and Ready False (`%s`, the Deployment's Available reason) within %s; Ready again once the pod is", reason, seen.Round(100*time.Millisecond)),
		recovered, 0)
}

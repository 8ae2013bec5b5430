package envtest

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	httpv1alpha1 "github.com/kedacore/http-add-on/operator/apis/http/v1alpha1"
	kedaclient "github.com/kedacore/http-add-on/operator/generated/clientset/versioned"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
)

// workloadTimeout bounds each wait on the workload controllers: they act within a
// second once the kubelet simulation reports the pods.
const workloadTimeout = 30 * time.Second

// TestControllers_DeploymentAvailable runs kube-controller-manager's deployment,
// replicaset and garbage collector controllers with the kubelet simulation: a
// Deployment gets a ReplicaSet, pods, and is Available with every replica; one whose
// pods the kubelet holds not ready (the negative control) gets its pods but stays
// unavailable, until they are let go. A new image rolls out (old pods gone), and
// deleting the Deployment deletes its ReplicaSets and pods.
func TestControllers_DeploymentAvailable(t *testing.T) {
	env := StartT(t)
	began := time.Now()
	env.StartControllersT(t, WorkloadControllers()...)
	t.Logf("workload controllers ready in %v", time.Since(began).Round(time.Millisecond))
	ns := NewNamespace(t, env.Config, "workload-", false)
	var hold atomic.Bool
	hold.Store(true)
	kubelet := SimulateKubeletT(t, env.Config, KubeletOptions{Namespace: ns, NotReady: func(p *corev1.Pod) bool {
		return p.Labels["app"] == "held" && hold.Load()
	}})
	c := kubernetes.NewForConfigOrDie(env.Config)
	ctx := context.Background()

	digest := "sha256:" + strings.Repeat("c", 64)
	ready := workload(ns, "ready", 2, "127.0.0.1:5000/fns/ready@"+digest)
	held := workload(ns, "held", 1, "127.0.0.1:5000/fns/held:latest")
	for _, d := range []*appsv1.Deployment{ready, held} {
		if _, err := c.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	created := time.Now()
	got := waitDeployment(t, c, ns, "ready", func(d *appsv1.Deployment) bool { return available(d) && d.Status.AvailableReplicas == 2 })
	t.Logf("Deployment available %v after its creation", time.Since(created).Round(time.Millisecond))
	if got.Status.ReadyReplicas != 2 || got.Status.UpdatedReplicas != 2 || got.Status.UnavailableReplicas != 0 {
		t.Errorf("Deployment status %+v, want 2 ready, updated and available", got.Status)
	}
	pods := podsOf(t, c, ready)
	if len(pods) != 2 {
		t.Fatalf("%d pods, want 2", len(pods))
	}
	for _, p := range pods {
		if p.Status.Phase != corev1.PodRunning || len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].ImageID != "127.0.0.1:5000/fns/ready@"+digest {
			t.Errorf("pod %s: phase %s, container statuses %+v; want Running with the image's digest", p.Name, p.Status.Phase, p.Status.ContainerStatuses)
		}
	}

	// The negative control: its pod runs, not ready, so the Deployment has no
	// available replica (checked once the controllers counted the running pod).
	waitDeployment(t, c, ns, "held", func(d *appsv1.Deployment) bool {
		return d.Status.Replicas == 1 && len(podsOf(t, c, held)) == 1 && podsOf(t, c, held)[0].Status.Phase == corev1.PodRunning &&
			d.Status.ObservedGeneration == d.Generation
	})
	time.Sleep(time.Second) // what the controllers would do with it, they have done
	got = getDeployment(t, c, ns, "held")
	if available(got) || got.Status.AvailableReplicas != 0 || got.Status.ReadyReplicas != 0 {
		t.Errorf("Deployment whose pod is held not ready: Available %v, status %+v; want unavailable, 0 ready", available(got), got.Status)
	}
	hold.Store(false)
	kubelet.Resync()
	waitDeployment(t, c, ns, "held", func(d *appsv1.Deployment) bool { return available(d) && d.Status.AvailableReplicas == 1 })

	// A new image rolls out: a new ReplicaSet, whose pods replace the old ones.
	newDigest := "sha256:" + strings.Repeat("d", 64)
	d := getDeployment(t, c, ns, "ready")
	d.Spec.Template.Spec.Containers[0].Image = "127.0.0.1:5000/fns/ready@" + newDigest
	if _, err := c.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitDeployment(t, c, ns, "ready", func(d *appsv1.Deployment) bool {
		if !available(d) || d.Status.ObservedGeneration != d.Generation || d.Status.UpdatedReplicas != 2 || d.Status.Replicas != 2 || d.Status.AvailableReplicas != 2 {
			return false
		}
		pods := podsOf(t, c, d)
		return len(pods) == 2 && pods[0].Spec.Containers[0].Image == d.Spec.Template.Spec.Containers[0].Image &&
			pods[1].Spec.Containers[0].Image == d.Spec.Template.Spec.Containers[0].Image
	})

	// The garbage collector deletes what the Deployment owns.
	if err := c.AppsV1().Deployments(ns).Delete(ctx, "ready", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	Until(t, "the deleted Deployment's ReplicaSets and pods go", func() bool {
		rs, err := c.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=ready"})
		return err == nil && len(rs.Items) == 0 && len(podsOf(t, c, ready)) == 0
	})
}

// TestControllers_ReadyOnProbe starts each workload controller alone: the probe
// that tells when it works needs none of the others.
func TestControllers_ReadyOnProbe(t *testing.T) {
	env := StartT(t)
	c := kubernetes.NewForConfigOrDie(env.Config)
	for _, set := range [][]string{{DeploymentController}, {ReplicaSetController}} {
		began := time.Now()
		stop, err := env.StartControllers(set...)
		if err != nil {
			t.Fatalf("%v: %v", set, err)
		}
		t.Logf("%v ready in %v", set, time.Since(began).Round(time.Millisecond))
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		// The probe is gone.
		list, err := c.AppsV1().ReplicaSets(probeNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: probeLabel})
		if err != nil || len(list.Items) != 0 {
			t.Errorf("%v: the probe's ReplicaSets after the start: %d, %v", set, len(list.Items), err)
		}
		if _, err := c.AppsV1().Deployments(probeNamespace).Get(context.Background(), probeName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%v: the probe Deployment after the start: %v, want not found", set, err)
		}
	}
	if _, err := env.StartControllers(); err == nil {
		t.Error("StartControllers with no controller: no error")
	}
	if _, err := env.StartControllers("*"); err == nil {
		t.Error("StartControllers(\"*\"): no error")
	}
}

// TestKEDAHTTPAddOnSimulation installs the HTTPScaledObject CRD from the pinned
// http-add-on module and plays its operator: an HTTPScaledObject gets the finalizer
// and is Ready for its generation; one held not ready (the negative control) is
// Ready False; deleting one removes it (the finalizer taken off).
func TestKEDAHTTPAddOnSimulation(t *testing.T) {
	env := StartT(t, KEDAHTTPCRDs)
	ns := NewNamespace(t, env.Config, "keda-", false)
	addOn := SimulateKEDAHTTPAddOnT(t, env.Config, KEDAHTTPAddOnOptions{Namespace: ns, NotReady: func(h *httpv1alpha1.HTTPScaledObject) bool {
		return h.Name == "held"
	}})
	c := kedaclient.NewForConfigOrDie(env.Config)
	ctx := context.Background()
	for _, name := range []string{"hello", "held"} {
		hso := &httpv1alpha1.HTTPScaledObject{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: httpv1alpha1.HTTPScaledObjectSpec{
				Hosts:          []string{name + "-interceptor-bridge." + ns + ".svc"},
				ScaleTargetRef: httpv1alpha1.ScaleTargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: name, Service: name, Port: 80},
			},
		}
		if _, err := c.HttpV1alpha1().HTTPScaledObjects(ns).Create(ctx, hso, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	get := func(name string) *httpv1alpha1.HTTPScaledObject {
		t.Helper()
		hso, err := c.HttpV1alpha1().HTTPScaledObjects(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return hso
	}
	Until(t, "the HTTPScaledObjects have a Ready condition", func() bool {
		return meta.FindStatusCondition(get("hello").Status.Conditions, httpv1alpha1.ConditionTypeReady) != nil &&
			meta.FindStatusCondition(get("held").Status.Conditions, httpv1alpha1.ConditionTypeReady) != nil
	})
	hello := get("hello")
	if c := meta.FindStatusCondition(hello.Status.Conditions, httpv1alpha1.ConditionTypeReady); c.Status != metav1.ConditionTrue ||
		c.ObservedGeneration != hello.Generation || c.Reason != httpv1alpha1.ConditionReasonReconciled {
		t.Errorf("Ready condition %+v, want True, Reconciled, for generation %d", c, hello.Generation)
	}
	if hello.Status.TargetWorkload != "apps/v1/Deployment/hello" || hello.Status.TargetService != "hello:80" || len(hello.Finalizers) != 1 || hello.Finalizers[0] != KEDAHTTPFinalizer {
		t.Errorf("status %+v, finalizers %v; want the target workload, service and the add-on's finalizer", hello.Status, hello.Finalizers)
	}
	if c := meta.FindStatusCondition(get("held").Status.Conditions, httpv1alpha1.ConditionTypeReady); c.Status != metav1.ConditionFalse {
		t.Errorf("held not ready: Ready condition %+v, want False", c)
	}

	if err := c.HttpV1alpha1().HTTPScaledObjects(ns).Delete(ctx, "hello", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	Until(t, "the deleted HTTPScaledObject goes", func() bool {
		_, err := c.HttpV1alpha1().HTTPScaledObjects(ns).Get(ctx, "hello", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	addOn.Stop()
}

// workload is a Deployment of replicas pods of image, labelled app=name.
func workload(ns, name string, replicas int32, image string) *appsv1.Deployment {
	lbl := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbl},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbl},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "user-container", Image: image}}},
			},
		},
	}
}

// available tells a Deployment's Available condition True.
func available(d *appsv1.Deployment) bool {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func getDeployment(t *testing.T, c kubernetes.Interface, ns, name string) *appsv1.Deployment {
	t.Helper()
	d, err := c.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// waitDeployment waits for the Deployment to be as ok says, and returns it.
func waitDeployment(t *testing.T, c kubernetes.Interface, ns, name string, ok func(*appsv1.Deployment) bool) *appsv1.Deployment {
	t.Helper()
	var d *appsv1.Deployment
	deadline := time.Now().Add(workloadTimeout)
	for {
		d = getDeployment(t, c, ns, name)
		if ok(d) {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("Deployment %s/%s not as wanted within %v: status %+v", ns, name, workloadTimeout, d.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// podsOf lists the Deployment's pods.
func podsOf(t *testing.T, c kubernetes.Interface, d *appsv1.Deployment) []corev1.Pod {
	t.Helper()
	pods, err := c.CoreV1().Pods(d.Namespace).List(context.Background(), metav1.ListOptions{LabelSelector: labels.FormatLabels(d.Spec.Selector.MatchLabels)})
	if err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

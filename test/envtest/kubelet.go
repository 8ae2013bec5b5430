package envtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// KubeletAddress is the pod and host IP the kubelet simulation reports: loopback,
// since nothing connects to a pod that runs nowhere.
const KubeletAddress = "127.0.0.1"

// kubeletResync is how often the kubelet simulation looks at every pod again,
// whatever changed: the longest a changed KubeletOptions.NotReady answer waits
// (Kubelet.Resync is at once).
const kubeletResync = time.Second

// KubeletOptions configure the kubelet simulation.
type KubeletOptions struct {
	// Namespace limits the simulation to the pods of one namespace; empty for every
	// namespace.
	Namespace string
	// NotReady, when set, holds the pods it returns true for Running but not ready
	// (their containers run, unready), as a failing readiness probe would: their
	// ReplicaSet, and Deployment, count them unavailable. It is asked again at each
	// resync (every second, or Kubelet.Resync), so a pod it lets go becomes Ready.
	NotReady func(*corev1.Pod) bool
	// Pull, when set, is asked whether each container's image can be pulled: a
	// container whose image it refuses waits, unready, with reason ImagePullBackOff
	// and the error as message, as a kubelet reports an image it cannot pull (the
	// pod stays Pending). Asked again at each resync.
	Pull func(image string) error
	// Logf, when set, logs what the simulation could not write (it retries).
	Logf func(format string, args ...any)
}

// Kubelet is a running kubelet simulation, for the workload controllers of
// kube-controller-manager (StartControllers with WorkloadControllers) in envtest,
// where no node runs.
//
// It plays only what a node's kubelet does with the pods the ReplicaSet controller
// creates (a controller ownerReference to a ReplicaSet): it reports them Running,
// each container running, started and ready (Ready, ContainersReady, Initialized and
// PodScheduled True), with KubeletAddress as their pod and host IP, and as image
// ID the image's digest when it is by digest (name@sha256:...), else a digest made
// up from the image's name. The deployment and replicaset controllers count a pod
// available from its Ready condition alone (and minReadySeconds): no Node object,
// and no spec.nodeName, is needed — measured with kube-controller-manager 1.35. No
// scheduler binds the pods, so none has a spec.nodeName: the API server deletes an
// unscheduled pod at once (no graceful termination for a kubelet to finish), as the
// ReplicaSet controller scales an old ReplicaSet down. The simulation writes as the
// user of the rest.Config it was given.
type Kubelet struct {
	opts KubeletOptions
	c    kubernetes.Interface
	sim  *simulation
}

// SimulateKubelet starts the kubelet simulation and returns once it watches the
// pods; it runs until ctx ends or Stop.
func SimulateKubelet(ctx context.Context, cfg *rest.Config, opts KubeletOptions) (*Kubelet, error) {
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubelet simulation: creating a client: %w", err)
	}
	k := &Kubelet{opts: opts, c: c}
	factory := informers.NewSharedInformerFactoryWithOptions(c, kubeletResync, informers.WithNamespace(opts.Namespace))
	pods := factory.Core().V1().Pods().Informer()
	k.sim, err = startSimulation(ctx, "kubelet simulation", pods, factory.Start, factory.Shutdown, func(ctx context.Context, obj any) error {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return nil
		}
		return k.sync(ctx, pod)
	}, opts.Logf)
	if err != nil {
		return nil, err
	}
	return k, nil
}

// SimulateKubeletT starts the kubelet simulation for one test (SimulateKubelet),
// logging what it could not write, and stops it when the test ends.
func SimulateKubeletT(t testing.TB, cfg *rest.Config, opts KubeletOptions) *Kubelet {
	t.Helper()
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	k, err := SimulateKubelet(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Stop)
	return k
}

// Resync looks at every pod again now: after a change of what NotReady answers.
func (k *Kubelet) Resync() { k.sim.resync() }

// Stop stops the simulation and waits for it; it may be called more than once.
func (k *Kubelet) Stop() { k.sim.stop() }

// sync writes the status a kubelet would report for pod, when it differs.
func (k *Kubelet) sync(ctx context.Context, pod *corev1.Pod) error {
	if !ownedByReplicaSet(pod) || pod.DeletionTimestamp != nil ||
		pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return nil
	}
	ready := k.opts.NotReady == nil || !k.opts.NotReady(pod.DeepCopy())
	status := KubeletPodStatus(pod, ready, metav1.Now())
	if k.opts.Pull != nil {
		status = k.pullFailures(pod, status)
	}
	if equality.Semantic.DeepEqual(status, pod.Status) {
		return nil
	}
	updated := pod.DeepCopy()
	updated.Status = status
	if _, err := k.c.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("writing the status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// pullFailures turns the containers whose image Pull refuses into waiting ones
// (ImagePullBackOff), and the pod Pending and unready with them.
func (k *Kubelet) pullFailures(pod *corev1.Pod, status corev1.PodStatus) corev1.PodStatus {
	var waiting []string
	for i := range status.ContainerStatuses {
		cs := &status.ContainerStatuses[i]
		err := k.opts.Pull(cs.Image)
		if err == nil {
			continue
		}
		waiting = append(waiting, cs.Name)
		cs.Ready, cs.Started, cs.ImageID, cs.ContainerID = false, ptr.To(false), "", ""
		cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason: "ImagePullBackOff", Message: fmt.Sprintf("Back-off pulling image %q: %v", cs.Image, err)}}
	}
	if len(waiting) == 0 {
		return status
	}
	status.Phase = corev1.PodPending
	now := metav1.Now()
	message := fmt.Sprintf("containers with unready status: [%s]", strings.Join(waiting, " "))
	for _, t := range []corev1.PodConditionType{corev1.PodReady, corev1.ContainersReady} {
		status.Conditions = setPodCondition(status.Conditions, corev1.PodCondition{
			Type: t, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: message}, now)
	}
	// The status written before keeps its times while the failure lasts.
	for _, c := range pod.Status.Conditions {
		for i := range status.Conditions {
			if status.Conditions[i].Type == c.Type && status.Conditions[i].Status == c.Status {
				status.Conditions[i].LastTransitionTime = c.LastTransitionTime
			}
		}
	}
	return status
}

// ownedByReplicaSet tells a pod the ReplicaSet controller made.
func ownedByReplicaSet(pod *corev1.Pod) bool {
	owner := metav1.GetControllerOf(pod)
	return owner != nil && owner.Kind == "ReplicaSet" && owner.APIVersion == appsv1.SchemeGroupVersion.String()
}

// KubeletPodStatus returns the status a kubelet reports for pod once its
// containers run: Running, with its containers running and started, ready or not as
// ready says. Times already in pod's status (start time, a condition's last
// transition, a container's start) are kept while what they date is unchanged;
// others are now.
func KubeletPodStatus(pod *corev1.Pod, ready bool, now metav1.Time) corev1.PodStatus {
	status := *pod.Status.DeepCopy()
	status.Phase = corev1.PodRunning
	status.HostIP, status.HostIPs = KubeletAddress, []corev1.HostIP{{IP: KubeletAddress}}
	status.PodIP, status.PodIPs = KubeletAddress, []corev1.PodIP{{IP: KubeletAddress}}
	if status.StartTime == nil {
		status.StartTime = &now
	}
	var unready []string
	if !ready {
		for _, c := range pod.Spec.Containers {
			unready = append(unready, c.Name)
		}
	}
	readiness := corev1.ConditionTrue
	reason, message := "", ""
	if !ready {
		readiness = corev1.ConditionFalse
		reason, message = "ContainersNotReady", fmt.Sprintf("containers with unready status: [%s]", strings.Join(unready, " "))
	}
	for _, c := range []corev1.PodCondition{
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue},
		{Type: corev1.PodReady, Status: readiness, Reason: reason, Message: message},
		{Type: corev1.ContainersReady, Status: readiness, Reason: reason, Message: message},
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
	} {
		status.Conditions = setPodCondition(status.Conditions, c, now)
	}

	previous := map[string]corev1.ContainerStatus{}
	for _, cs := range pod.Status.ContainerStatuses {
		previous[cs.Name] = cs
	}
	status.ContainerStatuses = make([]corev1.ContainerStatus, 0, len(pod.Spec.Containers))
	for _, c := range pod.Spec.Containers {
		startedAt := now
		if prev, ok := previous[c.Name]; ok && prev.State.Running != nil {
			startedAt = prev.State.Running.StartedAt
		}
		started := true
		status.ContainerStatuses = append(status.ContainerStatuses, corev1.ContainerStatus{
			Name:        c.Name,
			Image:       c.Image,
			ImageID:     KubeletImageID(c.Image),
			ContainerID: "containerd://" + digestOf(string(pod.UID)+"/"+c.Name),
			Ready:       ready,
			Started:     &started,
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: startedAt}},
		})
	}
	previousInit := map[string]corev1.ContainerStatus{}
	for _, cs := range pod.Status.InitContainerStatuses {
		previousInit[cs.Name] = cs
	}
	status.InitContainerStatuses = nil
	for _, c := range pod.Spec.InitContainers {
		ended := corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: now, FinishedAt: now}
		if prev, ok := previousInit[c.Name]; ok && prev.State.Terminated != nil {
			ended = *prev.State.Terminated
		}
		started := false
		status.InitContainerStatuses = append(status.InitContainerStatuses, corev1.ContainerStatus{
			Name:        c.Name,
			Image:       c.Image,
			ImageID:     KubeletImageID(c.Image),
			ContainerID: "containerd://" + digestOf(string(pod.UID)+"/"+c.Name),
			Ready:       true,
			Started:     &started,
			State:       corev1.ContainerState{Terminated: &ended},
		})
	}
	return status
}

// setPodCondition sets c in conditions, keeping the last transition time of one of
// the same type and status (else now).
func setPodCondition(conditions []corev1.PodCondition, c corev1.PodCondition, now metav1.Time) []corev1.PodCondition {
	c.LastTransitionTime = now
	for i := range conditions {
		if conditions[i].Type != c.Type {
			continue
		}
		if conditions[i].Status == c.Status {
			c.LastTransitionTime = conditions[i].LastTransitionTime
		}
		c.LastProbeTime = conditions[i].LastProbeTime
		conditions[i] = c
		return conditions
	}
	return append(conditions, c)
}

// KubeletImageID returns the image ID the kubelet simulation reports for image: the
// repository and digest of an image by digest (name@sha256:...), as a container
// runtime reports its repo digest; for an image by tag, its repository at a digest
// made up from the image's name (the same for the same name).
func KubeletImageID(image string) string {
	if name, digest, ok := strings.Cut(image, "@"); ok {
		return name + "@" + digest
	}
	repository := image
	if colon := strings.LastIndex(image, ":"); colon > strings.LastIndex(image, "/") {
		repository = image[:colon]
	}
	return repository + "@sha256:" + digestOf(image)
}

// digestOf is the hex SHA-256 of s.
func digestOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

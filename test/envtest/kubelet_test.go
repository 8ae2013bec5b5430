package envtest

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestKubeletPodStatus is the status the kubelet simulation writes: Running, ready
// or held not ready, keeping the times of what did not change.
func TestKubeletPodStatus(t *testing.T) {
	earlier := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	now := metav1.NewTime(earlier.Add(time.Minute))
	digest := "sha256:" + strings.Repeat("a", 64)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: "u1"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "user-container", Image: "127.0.0.1:5000/fns/hello@" + digest}}},
		Status:     corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBestEffort},
	}
	started := true
	running := func(ready bool, at metav1.Time) []corev1.ContainerStatus {
		return []corev1.ContainerStatus{{
			Name: "user-container", Image: "127.0.0.1:5000/fns/hello@" + digest, ImageID: "127.0.0.1:5000/fns/hello@" + digest,
			ContainerID: "containerd://" + digestOf("u1/user-container"), Ready: ready, Started: &started,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at}},
		}}
	}
	conditions := func(ready corev1.ConditionStatus, readyAt metav1.Time, reason, message string) []corev1.PodCondition {
		return []corev1.PodCondition{
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodReady, Status: ready, LastTransitionTime: readyAt, Reason: reason, Message: message},
			{Type: corev1.ContainersReady, Status: ready, LastTransitionTime: readyAt, Reason: reason, Message: message},
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
		}
	}
	base := func(startTime metav1.Time, cs []corev1.ContainerStatus, conds []corev1.PodCondition) corev1.PodStatus {
		return corev1.PodStatus{
			Phase: corev1.PodRunning, QOSClass: corev1.PodQOSBestEffort, StartTime: &startTime,
			HostIP: "127.0.0.1", HostIPs: []corev1.HostIP{{IP: "127.0.0.1"}}, PodIP: "127.0.0.1", PodIPs: []corev1.PodIP{{IP: "127.0.0.1"}},
			Conditions: conds, ContainerStatuses: cs,
		}
	}
	heldStatus := base(earlier, running(false, earlier), conditions(corev1.ConditionFalse, earlier, "ContainersNotReady", "containers with unready status: [user-container]"))
	heldPod := pod.DeepCopy()
	heldPod.Status = heldStatus
	for i := range heldPod.Status.Conditions {
		heldPod.Status.Conditions[i].LastTransitionTime = earlier
	}
	for _, tc := range []struct {
		name  string
		pod   *corev1.Pod
		ready bool
		want  corev1.PodStatus
	}{{
		name: "new pod, ready", pod: pod, ready: true,
		want: base(now, running(true, now), conditions(corev1.ConditionTrue, now, "", "")),
	}, {
		name: "new pod, held not ready", pod: pod, ready: false,
		want: base(now, running(false, now), conditions(corev1.ConditionFalse, now, "ContainersNotReady", "containers with unready status: [user-container]")),
	}, {
		name: "held pod let go: Ready moves, the rest keeps its times", pod: heldPod, ready: true,
		want: func() corev1.PodStatus {
			s := base(earlier, running(true, earlier), conditions(corev1.ConditionTrue, now, "", ""))
			s.Conditions[0].LastTransitionTime, s.Conditions[3].LastTransitionTime = earlier, earlier
			return s
		}(),
	}, {
		name: "held pod still held: unchanged", pod: heldPod, ready: false,
		want: func() corev1.PodStatus {
			s := heldStatus.DeepCopy()
			for i := range s.Conditions {
				s.Conditions[i].LastTransitionTime = earlier
			}
			return *s
		}(),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := KubeletPodStatus(tc.pod, tc.ready, now)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("KubeletPodStatus (-want +got):\n%s", diff)
			}
		})
	}
}

// TestKubeletImageID: an image by digest reports its digest; one by tag a digest
// made up from its name, the same each time.
func TestKubeletImageID(t *testing.T) {
	digest := "sha256:" + strings.Repeat("b", 64)
	for _, tc := range []struct{ image, want string }{
		{"127.0.0.1:5000/fns/hello@" + digest, "127.0.0.1:5000/fns/hello@" + digest},
		{"127.0.0.1:5000/fns/hello:latest", "127.0.0.1:5000/fns/hello@sha256:" + digestOf("127.0.0.1:5000/fns/hello:latest")},
		{"127.0.0.1:5000/fns/hello", "127.0.0.1:5000/fns/hello@sha256:" + digestOf("127.0.0.1:5000/fns/hello")},
		{"hello:v1", "hello@sha256:" + digestOf("hello:v1")},
	} {
		if got := KubeletImageID(tc.image); got != tc.want {
			t.Errorf("KubeletImageID(%q) = %q, want %q", tc.image, got, tc.want)
		}
	}
}

package envtest

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

const (
	// probeNamespace holds the probe: a namespace the API server makes itself.
	probeNamespace = metav1.NamespaceSystem
	// probeName names the probe Deployment or ReplicaSet.
	probeName = "envtest-workload-controllers-probe"
	// probeLabel labels the probe and what the controllers make of it.
	probeLabel = "envtest.func-operator.dev/probe"
)

// probeWorkloadControllers tells when the deployment and replicaset controllers
// asked for work: a Deployment of no replicas (a ReplicaSet, when only the replicaset
// controller runs) is made in kube-system, and the controllers' writes awaited — the
// deployment controller's observedGeneration on the Deployment, a ReplicaSet of it,
// the replicaset controller's observedGeneration on that. The probe is deleted then
// (no pod was ever made). exited closing fails it at once.
func probeWorkloadControllers(ctx context.Context, cfg *rest.Config, deployment, replicaSet bool, exited <-chan struct{}) error {
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("probing the workload controllers: creating a client: %w", err)
	}
	zero := int32(0)
	selector := map[string]string{probeLabel: "true"}
	template := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: selector},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Image: "probe.invalid/none"}}},
	}
	meta := metav1.ObjectMeta{Namespace: probeNamespace, Name: probeName, Labels: selector}
	deployments, replicaSets := c.AppsV1().Deployments(probeNamespace), c.AppsV1().ReplicaSets(probeNamespace)
	defer func() {
		// The probe goes, whether or not the garbage collector runs (ReplicaSets
		// explicitly). A fresh context: ctx may have ended.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = deployments.Delete(ctx, probeName, metav1.DeleteOptions{})
		_ = replicaSets.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: labels.FormatLabels(selector)})
	}()
	if deployment {
		d := &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{
			Replicas: &zero, Selector: &metav1.LabelSelector{MatchLabels: selector}, Template: template,
		}}
		if _, err := deployments.Create(ctx, d, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating the probe Deployment: %w", err)
		}
	} else {
		rs := &appsv1.ReplicaSet{ObjectMeta: meta, Spec: appsv1.ReplicaSetSpec{
			Replicas: &zero, Selector: &metav1.LabelSelector{MatchLabels: selector}, Template: template,
		}}
		if _, err := replicaSets.Create(ctx, rs, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating the probe ReplicaSet: %w", err)
		}
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		done, err := probed(ctx, c, deployment, replicaSet)
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		select {
		case <-exited:
			return errors.New("it exited")
		case <-ctx.Done():
			return fmt.Errorf("its controllers did not handle the probe %s/%s: %w", probeNamespace, probeName, ctx.Err())
		case <-tick.C:
		}
	}
}

// probed tells whether the controllers running have handled the probe.
func probed(ctx context.Context, c kubernetes.Interface, deployment, replicaSet bool) (bool, error) {
	if deployment {
		d, err := c.AppsV1().Deployments(probeNamespace).Get(ctx, probeName, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Errorf("reading the probe Deployment: %w", err)
		}
		if d.Status.ObservedGeneration < d.Generation {
			return false, nil
		}
	}
	list, err := c.AppsV1().ReplicaSets(probeNamespace).List(ctx, metav1.ListOptions{LabelSelector: probeLabel})
	if err != nil {
		return false, fmt.Errorf("listing the probe's ReplicaSets: %w", err)
	}
	if len(list.Items) == 0 {
		return false, nil
	}
	if !replicaSet {
		return true, nil
	}
	for _, rs := range list.Items {
		if rs.Status.ObservedGeneration >= rs.Generation {
			return true, nil
		}
	}
	return false, nil
}

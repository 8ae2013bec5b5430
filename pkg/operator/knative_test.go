package operator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"knative.dev/pkg/apis"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/knative"
	"github.com/fnops/func-operator/test/gitserver"
	"github.com/fnops/func-operator/test/registrytest"
)

// condition returns "" when the Function's condition t has the status and reason wanted.
func condition(ns, name string, t apis.ConditionType, status corev1.ConditionStatus, reason string) func() string {
	return func() string {
		fn := &v1alpha1.Function{}
		if err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, fn); err != nil {
			return err.Error()
		}
		c := fn.Status.GetCondition(t)
		if c == nil || c.Status != status || c.Reason != reason {
			return fmt.Sprintf("%s = %+v, want %s/%s", t, c, status, reason)
		}
		return ""
	}
}

// TestOperator_KnativeServing: the Function follows its Knative Service as the real
// Knative Serving controller reports it (test/knative; the pods played by the kubelet
// simulation): Ready on its first Revision; Unknown while a new image rolls out, then
// True on the new Revision; False with Knative's own reason when a Revision never
// becomes ready (an image that cannot be pulled) while the old one serves; Ready at
// zero; NotDeployed once the Service is deleted, and bound again to one recreated.
func TestOperator_KnativeServing(t *testing.T) {
	root := gitserver.NewRepoRoot(t)
	srv := gitserver.StartHTTP(t, root)
	repo := gitserver.CreateRepo(t, root, "hello")
	repo.Commit(t, "main", map[string]string{"func.yaml": funcYAML("hello", "go")}, "first")

	// The function's images, in a registry of the test's own, with the newest middleware.
	reg := registrytest.Start(t)
	image1 := reg.Push(t, "fns/hello", availableGoMiddleware(t))
	image2 := reg.Push(t, "fns/hello-two", availableGoMiddleware(t))
	bad := reg.Host + "/fns/hello@sha256:" + strings.Repeat("d", 64) // not in the registry
	failPulls(t, func(image string) error {
		if image == bad {
			return errors.New("manifest unknown")
		}
		return nil
	})

	ns := newNamespace(t)
	logOnFailure(t, ns)
	startOperator(t, time.Hour, ns) // no periodic check: only the watches act
	ctx := context.Background()
	if err := k8sClient.Create(ctx, &v1alpha1.Function{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fn"},
		Spec:       v1alpha1.FunctionSpec{Repository: v1alpha1.Repository{URL: srv.URL("hello")}},
	}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, condition(ns, "fn", v1alpha1.FunctionConditionDeployed, corev1.ConditionFalse, v1alpha1.ReasonNotDeployed))

	// func deploy creates the Service: the Function follows it to Ready.
	newService := func(image string) *servingv1.Service {
		return &servingv1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hello", Labels: map[string]string{"function.knative.dev/name": "hello"}},
			Spec: servingv1.ServiceSpec{ConfigurationSpec: servingv1.ConfigurationSpec{Template: servingv1.RevisionTemplateSpec{
				Spec: servingv1.RevisionSpec{PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Image: image}}}},
			}}},
		}
	}
	if err := k8sClient.Create(ctx, newService(image1)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, condition(ns, "fn", v1alpha1.FunctionConditionDeployed, corev1.ConditionTrue, v1alpha1.ReasonDeployed))
	eventually(t, 60*time.Second, servedBy(t, ns, "hello-00001", image1))
	first := getFunction(t, ns, "fn").Status.Service
	if want := "http://hello." + ns + ".svc.cluster.local"; first.URL != want {
		t.Errorf("status.service.url = %q, want Knative's %q", first.URL, want)
	}

	// A new image, its pods held not ready: Unknown while it rolls out, the old
	// Revision serving; then True on the new one.
	var hold atomic.Bool
	hold.Store(true)
	holdPods(t, ns, func(p *corev1.Pod) bool { return hold.Load() && p.Spec.Containers[0].Image == image2 })
	setServiceImage(t, ns, "hello", image2)
	eventually(t, 30*time.Second, func() string {
		fn := getFunction(t, ns, "fn")
		c := fn.Status.GetCondition(v1alpha1.FunctionConditionServiceReady)
		if c == nil || c.Status != corev1.ConditionUnknown || fn.Status.Service.LatestReadyRevision != "hello-00001" || fn.Status.Deployment.Image != image1 {
			return fmt.Sprintf("ServiceReady %+v, status.service %+v, deployment %+v; want Unknown with hello-00001 serving", c, fn.Status.Service, fn.Status.Deployment)
		}
		return ""
	})
	hold.Store(false)
	resyncPods()
	eventually(t, 60*time.Second, servedBy(t, ns, "hello-00002", image2))

	// An image that cannot be pulled: Knative fails the Revision once its progress
	// deadline passes; ServiceReady False with Knative's reason; the old one serves.
	setServiceImage(t, ns, "hello", bad)
	eventually(t, 120*time.Second, func() string {
		fn := getFunction(t, ns, "fn")
		c := fn.Status.GetCondition(v1alpha1.FunctionConditionServiceReady)
		if c == nil || c.Status != corev1.ConditionFalse || c.Reason != "RevisionFailed" || !strings.Contains(c.Message, "Back-off pulling image") {
			return fmt.Sprintf("ServiceReady %+v, want False RevisionFailed naming the pull", c)
		}
		if r := fn.Status.GetCondition(apis.ConditionReady); r == nil || r.Status != corev1.ConditionFalse || r.Reason != "RevisionFailed" {
			return fmt.Sprintf("Ready %+v, want False RevisionFailed", r)
		}
		if fn.Status.Service.LatestReadyRevision != "hello-00002" || fn.Status.Deployment.Image != image2 {
			return fmt.Sprintf("status.service %+v, deployment %+v; want hello-00002 (%s) still serving", fn.Status.Service, fn.Status.Deployment, image2)
		}
		return ""
	})
	if svc := getService(t, ns, "hello"); len(svc.Status.Traffic) != 1 || svc.Status.Traffic[0].RevisionName != "hello-00002" {
		t.Errorf("the Service's traffic %+v, want all on hello-00002", svc.Status.Traffic)
	}
	if c := getFunction(t, ns, "fn").Status.GetCondition(v1alpha1.FunctionConditionMiddlewareUpToDate); !c.IsTrue() {
		t.Errorf("MiddlewareUpToDate = %+v, want True: the serving image carries the newest middleware", c)
	}

	// Back to a good image, then scaled to zero: still Ready.
	setServiceImage(t, ns, "hello", image2)
	eventually(t, 60*time.Second, servedBy(t, ns, "hello-00004", image2))
	serving.Autoscaler.ScaleToZero(ns, "hello-00004")
	eventually(t, 30*time.Second, func() string {
		rev := &servingv1.Revision{}
		if err := k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "hello-00004"}, rev); err != nil {
			return err.Error()
		}
		if a := rev.Status.GetCondition(servingv1.RevisionConditionActive); a == nil || a.Status != corev1.ConditionFalse || a.Reason != "NoTraffic" {
			return fmt.Sprintf("Revision hello-00004 Active %+v, want False NoTraffic", a)
		}
		return ""
	})
	holds(t, 3*time.Second, servedBy(t, ns, "hello-00004", image2))

	// Deleted: NotDeployed. Recreated by func deploy: bound to the new Service.
	if err := k8sClient.Delete(ctx, getService(t, ns, "hello")); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, condition(ns, "fn", v1alpha1.FunctionConditionDeployed, corev1.ConditionFalse, v1alpha1.ReasonNotDeployed))
	// Knative's Configuration and Route go with it (the garbage collector).
	eventually(t, 30*time.Second, func() string {
		var cfgs servingv1.ConfigurationList
		if err := k8sClient.List(ctx, &cfgs, client.InNamespace(ns)); err != nil || len(cfgs.Items) > 0 {
			return fmt.Sprintf("%d Configurations left (%v)", len(cfgs.Items), err)
		}
		return ""
	})
	if err := k8sClient.Create(ctx, newService(image1)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, servedBy(t, ns, "hello-00001", image1))
	if uid := getFunction(t, ns, "fn").Status.Service.UID; uid == first.UID || uid != getService(t, ns, "hello").UID {
		t.Errorf("status.service.uid = %s, want the new Service's (the first was %s)", uid, first.UID)
	}
}

// servedBy returns "" once Function fn is Ready, its ServiceReady True, on Revision
// rev of its Knative Service running image.
func servedBy(t *testing.T, ns, rev, image string) func() string {
	return func() string {
		fn := getFunction(t, ns, "fn")
		c := fn.Status.GetCondition(v1alpha1.FunctionConditionServiceReady)
		if c == nil || !c.IsTrue() || c.Reason != v1alpha1.ReasonServiceReady || !fn.Status.IsReady() {
			return fmt.Sprintf("ServiceReady %+v, Ready %+v; want both True", c, fn.Status.GetCondition(apis.ConditionReady))
		}
		if s := fn.Status.Service; s == nil || s.LatestReadyRevision != rev || !s.Ready.IsTrue() || fn.Status.Deployment.Image != image {
			return fmt.Sprintf("status.service %+v, deployment %+v; want Revision %s running %s", s, fn.Status.Deployment, rev, image)
		}
		return ""
	}
}

func getService(t *testing.T, ns, name string) *servingv1.Service {
	t.Helper()
	svc := &servingv1.Service{}
	if err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, svc); err != nil {
		t.Fatal(err)
	}
	return svc
}

// setServiceImage points the Knative Service at image, as func deploy does.
func setServiceImage(t *testing.T, ns, name, image string) {
	t.Helper()
	updateService(t, ns, name, func(svc *servingv1.Service) { svc.Spec.Template.Spec.Containers[0].Image = image })
}

// updateService changes the Knative Service as func deploy or kubectl would, again
// when the Knative Serving controller's status writes came in between.
func updateService(t *testing.T, ns, name string, change func(*servingv1.Service)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		svc := getService(t, ns, name)
		change(svc)
		return k8sClient.Update(context.Background(), svc)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// knativeServes returns "" once the Knative Serving controller serves the Service's
// newest template: Ready at its generation, on its latest created Revision.
func knativeServes(t *testing.T, ns, name string) func() string {
	return func() string {
		s := getService(t, ns, name)
		if !knative.Serves(s) {
			return fmt.Sprintf("Knative Service %s/%s: generation %d, status %+v", ns, name, s.Generation, s.Status)
		}
		return ""
	}
}

// availableGoMiddleware is the func-go version a rebuild of an http Go function brings.
func availableGoMiddleware(t *testing.T) string {
	t.Helper()
	pin, err := funclib.AvailableMiddleware("go", "http")
	if err != nil {
		t.Fatal(err)
	}
	return pin.Version
}

package knative_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"knative.dev/pkg/apis"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/test/envtest"
	"github.com/fnops/func-operator/test/knative"
)

const (
	goodImage  = "127.0.0.1:5000/fn/hello@sha256:1111111111111111111111111111111111111111111111111111111111111111"
	goodImage2 = "127.0.0.1:5000/fn/hello@sha256:2222222222222222222222222222222222222222222222222222222222222222"
	badImage   = "127.0.0.1:5000/fn/hello@sha256:dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"
)

// TestServing: a Knative Service as func deploy writes it (no defaults) goes Ready
// through the real controller; a new image rolls out; an image that cannot be
// pulled fails its Revision with Knative's reason while the old one serves; a
// Revision scaled to zero leaves the Service Ready; a Service deleted and
// recreated under its name is Ready again.
func TestServing(t *testing.T) {
	env := envtest.StartT(t, knative.CRDs...)
	serving := knative.StartT(t, env, knative.Options{
		ProgressDeadline: 5 * time.Second,
		Pull: func(image string) error {
			if image == badImage {
				return errors.New("manifest unknown")
			}
			return nil
		},
	})
	c := newClient(t, env)
	ns := envtest.NewNamespace(t, env.Config, "serving-", false)
	ctx := context.Background()

	svc := &servingv1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hello"},
		Spec: servingv1.ServiceSpec{ConfigurationSpec: servingv1.ConfigurationSpec{Template: servingv1.RevisionTemplateSpec{
			Spec: servingv1.RevisionSpec{PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Image: goodImage}}}},
		}}},
	}
	if err := c.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	// Knative's defaults, applied on the way in.
	got := get(t, c, ns, "hello")
	if name := got.Spec.Template.Spec.Containers[0].Name; name != "user-container" {
		t.Errorf("container name %q, want Knative's default user-container", name)
	}
	if got.Annotations["serving.knative.dev/creator"] == "" {
		t.Errorf("annotations %v, want Knative's creator", got.Annotations)
	}
	first := waitReady(t, c, ns, goodImage)

	// A new image: Unknown while it rolls out, then Ready on the new Revision.
	setImage(t, c, ns, "hello", goodImage2)
	second := waitReady(t, c, ns, goodImage2)
	if second == first {
		t.Fatalf("Revision %s serves the new image, want a new Revision", second)
	}

	// A bad image: the Revision fails, the Service is not Ready, the old one serves.
	setImage(t, c, ns, "hello", badImage)
	waitFor(t, 60*time.Second, func() string {
		s := get(t, c, ns, "hello")
		r := s.Status.GetCondition(apis.ConditionReady)
		if s.Status.ObservedGeneration != s.Generation || r == nil || r.Status != corev1.ConditionFalse {
			return fmt.Sprintf("Ready %+v at generation %d/%d, want False", r, s.Status.ObservedGeneration, s.Generation)
		}
		if r.Reason != "RevisionFailed" || !strings.Contains(r.Message, "ImagePullBackOff") && !strings.Contains(r.Message, "manifest unknown") {
			return fmt.Sprintf("Ready %+v, want RevisionFailed naming the pull", r)
		}
		if s.Status.LatestReadyRevisionName != second || len(s.Status.Traffic) != 1 || s.Status.Traffic[0].RevisionName != second {
			return fmt.Sprintf("latest ready %s, traffic %+v, want all on %s", s.Status.LatestReadyRevisionName, s.Status.Traffic, second)
		}
		return ""
	})
	// Back to the good image.
	setImage(t, c, ns, "hello", goodImage2)
	third := waitReady(t, c, ns, goodImage2)

	// Scaled to zero: Ready stays, the Revision is inactive.
	serving.Autoscaler.ScaleToZero(ns, third)
	waitFor(t, 30*time.Second, func() string {
		rev := &servingv1.Revision{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: third}, rev); err != nil {
			return err.Error()
		}
		if a := rev.Status.GetCondition(servingv1.RevisionConditionActive); a == nil || a.Status != corev1.ConditionFalse || a.Reason != "NoTraffic" {
			return fmt.Sprintf("Active %+v, want False NoTraffic", a)
		}
		if !get(t, c, ns, "hello").IsReady() {
			return "the Service is not Ready at zero"
		}
		return ""
	})

	// Deleted, then recreated under its name: Ready again, on a Revision of its own.
	if err := c.Delete(ctx, get(t, c, ns, "hello")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, func() string {
		var cfgs servingv1.ConfigurationList
		if err := c.List(ctx, &cfgs, client.InNamespace(ns)); err != nil {
			return err.Error()
		}
		if len(cfgs.Items) > 0 {
			return fmt.Sprintf("%d Configurations left", len(cfgs.Items))
		}
		return ""
	})
	svc.ResourceVersion = ""
	svc.Spec.Template.Spec.Containers[0].Image = goodImage
	if err := c.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	waitReady(t, c, ns, goodImage)
}

func newClient(t *testing.T, env *envtest.Environment) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := servingv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func get(t *testing.T, c client.Client, ns, name string) *servingv1.Service {
	t.Helper()
	s := &servingv1.Service{}
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, s); err != nil {
		t.Fatal(err)
	}
	return s
}

func setImage(t *testing.T, c client.Client, ns, name, image string) {
	t.Helper()
	s := get(t, c, ns, name)
	s.Spec.Template.Spec.Containers[0].Image = image
	if err := c.Update(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

// waitReady waits until Service hello is Ready on a Revision of image, with all the
// traffic, and returns that Revision's name.
func waitReady(t *testing.T, c client.Client, ns, image string) string {
	t.Helper()
	var rev string
	waitFor(t, 60*time.Second, func() string {
		s := get(t, c, ns, "hello")
		if s.Status.ObservedGeneration != s.Generation || !s.IsReady() {
			return fmt.Sprintf("generation %d/%d, conditions %+v", s.Status.ObservedGeneration, s.Generation, s.Status.Conditions)
		}
		rev = s.Status.LatestReadyRevisionName
		if rev == "" || rev != s.Status.LatestCreatedRevisionName || len(s.Status.Traffic) != 1 || s.Status.Traffic[0].RevisionName != rev {
			return fmt.Sprintf("latest ready %s, created %s, traffic %+v", rev, s.Status.LatestCreatedRevisionName, s.Status.Traffic)
		}
		r := &servingv1.Revision{}
		if err := c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: rev}, r); err != nil {
			return err.Error()
		}
		if cs := r.Status.ContainerStatuses; len(cs) == 0 || cs[0].ImageDigest != image {
			return fmt.Sprintf("Revision %s container statuses %+v, want digest %s", rev, cs, image)
		}
		return ""
	})
	return rev
}

func waitFor(t *testing.T, timeout time.Duration, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		msg := cond()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", timeout, msg)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

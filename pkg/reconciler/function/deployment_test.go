package function

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"knative.dev/pkg/apis"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/test/gitserver"
	"github.com/fnops/func-operator/test/registrytest"
)

func TestReconcile_Deployment(t *testing.T) {
	root := gitserver.NewRepoRoot(t)
	srv := gitserver.StartHTTP(t, root)
	repo := gitserver.CreateRepo(t, root, "hello")
	repo.Commit(t, "main", map[string]string{"func.yaml": funcYAML("hello", "go")}, "hello")

	// The images are in a registry of the test's own, with the newest middleware.
	pin, err := funclib.AvailableMiddleware("go", "http")
	if err != nil {
		t.Fatal(err)
	}
	reg := registrytest.Start(t)
	imageDigest := reg.Push(t, "fns/hello", pin.Version)
	imageTag := reg.Host + "/fns/hello:latest"
	readyTrue := &apis.Condition{Type: apis.ConditionReady, Status: corev1.ConditionTrue}
	type cond struct {
		Status  corev1.ConditionStatus
		Reason  string
		Message string
	}
	tests := []struct {
		name        string
		service     *knativeService // nil: not deployed
		want        map[apis.ConditionType]cond
		wantDeploy  *v1alpha1.DeploymentStatus
		wantService *v1alpha1.ServiceStatus
	}{{
		name: "not deployed",
		want: map[apis.ConditionType]cond{
			v1alpha1.FunctionConditionDeployed:           {corev1.ConditionFalse, v1alpha1.ReasonNotDeployed, `no Knative Service, and no Deployment and Service of func's raw or keda deployer, named "hello" in namespace "%s": deploy the function (func deploy)`},
			v1alpha1.FunctionConditionServiceReady:       {corev1.ConditionUnknown, v1alpha1.ReasonNotDeployed, "the function is not deployed"},
			v1alpha1.FunctionConditionMiddlewareUpToDate: {corev1.ConditionUnknown, v1alpha1.ReasonNotDeployed, "the function is not deployed"},
			apis.ConditionReady:                          {corev1.ConditionFalse, v1alpha1.ReasonNotDeployed, `no Knative Service, and no Deployment and Service of func's raw or keda deployer, named "hello" in namespace "%s": deploy the function (func deploy)`},
		},
		wantDeploy: &v1alpha1.DeploymentStatus{Runtime: "go", Invoke: "http"},
	}, {
		name:    "deployed and ready: the image by the ready Revision's digest",
		service: &knativeService{ready: readyTrue, readyRevision: "hello-00001", revisionDigest: imageDigest},
		want: map[apis.ConditionType]cond{
			v1alpha1.FunctionConditionDeployed:     {corev1.ConditionTrue, v1alpha1.ReasonDeployed, "Knative Service hello runs " + imageDigest},
			v1alpha1.FunctionConditionServiceReady: {corev1.ConditionTrue, v1alpha1.ReasonServiceReady, "Knative Service hello is ready"},
			apis.ConditionReady:                    {corev1.ConditionTrue, "", ""},
		},
		wantDeploy:  &v1alpha1.DeploymentStatus{Runtime: "go", Invoke: "http", Image: imageDigest, Deployer: "knative"},
		wantService: &v1alpha1.ServiceStatus{URL: "http://hello.%s.example.com", Ready: v1alpha1.ServiceReadyTrue, LatestReadyRevision: "hello-00001"},
	}, {
		name: "service failing: Knative's reason and message carried over",
		service: &knativeService{image: imageTag, ready: &apis.Condition{Type: apis.ConditionReady, Status: corev1.ConditionFalse,
			Reason: "RevisionMissing", Message: `Configuration "hello" does not have any ready Revision.`}},
		want: map[apis.ConditionType]cond{
			v1alpha1.FunctionConditionDeployed:     {corev1.ConditionTrue, v1alpha1.ReasonDeployed, "Knative Service hello runs " + imageTag},
			v1alpha1.FunctionConditionServiceReady: {corev1.ConditionFalse, "RevisionMissing", `Configuration "hello" does not have any ready Revision.`},
			apis.ConditionReady:                    {corev1.ConditionFalse, "RevisionMissing", `Configuration "hello" does not have any ready Revision.`},
		},
		wantDeploy:  &v1alpha1.DeploymentStatus{Runtime: "go", Invoke: "http", Image: imageTag, Deployer: "knative"},
		wantService: &v1alpha1.ServiceStatus{URL: "http://hello.%s.example.com", Ready: v1alpha1.ServiceReadyFalse},
	}, {
		name:    "Knative has not observed the latest spec: Ready is not trusted",
		service: &knativeService{image: imageTag, ready: readyTrue, staleGeneration: true},
		want: map[apis.ConditionType]cond{
			v1alpha1.FunctionConditionServiceReady: {corev1.ConditionUnknown, v1alpha1.ReasonServiceReconciling, "Knative has not yet observed generation 1 of Service hello"},
		},
		wantDeploy:  &v1alpha1.DeploymentStatus{Runtime: "go", Invoke: "http", Image: imageTag, Deployer: "knative"},
		wantService: &v1alpha1.ServiceStatus{URL: "http://hello.%s.example.com", Ready: v1alpha1.ServiceReadyUnknown},
	}, {
		name: "Knative still deploying",
		service: &knativeService{image: imageTag, ready: &apis.Condition{Type: apis.ConditionReady, Status: corev1.ConditionUnknown,
			Reason: "Deploying", Message: "waiting for the Revision"}},
		want: map[apis.ConditionType]cond{
			v1alpha1.FunctionConditionServiceReady: {corev1.ConditionUnknown, "Deploying", "waiting for the Revision"},
		},
		wantDeploy:  &v1alpha1.DeploymentStatus{Runtime: "go", Invoke: "http", Image: imageTag, Deployer: "knative"},
		wantService: &v1alpha1.ServiceStatus{URL: "http://hello.%s.example.com", Ready: v1alpha1.ServiceReadyUnknown},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ns := newNamespace(t)
			if tc.service != nil {
				tc.service.create(t, ns)
			}
			mustCreate(t, newFunction(ns, "fn", v1alpha1.Repository{URL: srv.URL("hello")}))
			r, _ := newTestReconciler(t, 10)
			if res, err := reconcileOnce(t, r, ns, "fn"); err != nil || res.RequeueAfter <= 0 {
				t.Fatalf("Reconcile = (%+v, %v), want a requeue after the check interval", res, err)
			}
			got := getFunction(t, ns, "fn")
			for ty, want := range tc.want {
				c := got.Status.GetCondition(ty)
				if c == nil {
					t.Errorf("no %s condition", ty)
					continue
				}
				want.Message = sprintfNS(want.Message, ns)
				if diff := cmp.Diff(want, cond{c.Status, c.Reason, c.Message}); diff != "" {
					t.Errorf("%s (-want +got):\n%s", ty, diff)
				}
			}
			wantDeploy := tc.wantDeploy
			if wantDeploy != nil && wantDeploy.Image != "" {
				// The image is new to the Function: stamped with the commit this check followed.
				w := *wantDeploy
				w.FollowedAtDeploy = got.Status.Git.ObservedCommit
				wantDeploy = &w
			}
			if diff := cmp.Diff(wantDeploy, got.Status.Deployment); diff != "" {
				t.Errorf("status.deployment (-want +got):\n%s", diff)
			}
			if tc.wantService != nil {
				tc.wantService.URL = sprintfNS(tc.wantService.URL, ns)
				// Bound to the Service the test made.
				svc := &servingv1.Service{}
				if err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "hello"}, svc); err != nil {
					t.Fatal(err)
				}
				tc.wantService.UID = svc.UID
			}
			if diff := cmp.Diff(tc.wantService, got.Status.Service); diff != "" {
				t.Errorf("status.service (-want +got):\n%s", diff)
			}
		})
	}
}

// sprintfNS puts the test's namespace into s where it has a %s.
func sprintfNS(s, ns string) string {
	if !strings.Contains(s, "%s") {
		return s
	}
	return fmt.Sprintf(s, ns)
}

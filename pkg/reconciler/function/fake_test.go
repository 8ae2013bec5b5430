package function

import (
	"context"
	"fmt"
	"sync"
	"testing"

	kedav1alpha1 "github.com/kedacore/http-add-on/operator/apis/http/v1alpha1"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	eventingv1 "knative.dev/eventing/pkg/apis/eventing/v1"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/tenancy"
)

// fakeAPI, while a step table runs on controller-runtime's fake client
// (onFakeClient), is that client's cluster; nil otherwise.
var fakeAPI *fakeCluster

// fakeCluster is controller-runtime's fake client with the kinds the steps read, their
// status subresources and the Function field indexes, and the namespaces a test made:
// what a step table needs of an API server, in the quick tier. Admission, RBAC,
// optimistic locking under load and garbage collection are the control plane's
// (apiServer): the tests of those stay on it.
type fakeCluster struct {
	client.WithWatch
	mu         sync.Mutex
	namespaces int
	// onboarded and keda: the namespaces that granted the operator a build's RBAC,
	// and a keda function's too (onboard, onboardKEDA).
	onboarded, keda map[string]bool
}

// onFakeClient puts the test on a fake cluster of its own: k8sClient is its client
// until the test ends, and newNamespace, mustCreate and the fixtures use it. The
// tests of this package do not run in parallel, which this relies on.
func onFakeClient(t *testing.T) {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, servingv1.AddToScheme,
		eventingv1.AddToScheme, pipelinev1.AddToScheme, kedav1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	c := fake.NewClientBuilder().WithScheme(s).
		WithStatusSubresource(&v1alpha1.Function{}, &pipelinev1.PipelineRun{}, &pipelinev1.TaskRun{}, &servingv1.Service{},
			&servingv1.Revision{}, &appsv1.Deployment{}, &kedav1alpha1.HTTPScaledObject{}).
		WithIndex(&v1alpha1.Function{}, secretRefIndex, secretRefs).
		WithIndex(&v1alpha1.Function{}, functionNameIndex, functionName).
		Build()
	prevAPI, prevClient := fakeAPI, k8sClient
	fakeAPI = &fakeCluster{WithWatch: c, onboarded: map[string]bool{}, keda: map[string]bool{}}
	k8sClient = fakeAPI
	t.Cleanup(func() { fakeAPI, k8sClient = prevAPI, prevClient })
}

// Create creates o as an API server would: with a UID of its own, a creation time and
// generation 1, and a Secret's stringData merged into its data. (Generations do not
// move on updates here: the tests of a spec change run on the control plane.)
func (f *fakeCluster) Create(ctx context.Context, o client.Object, opts ...client.CreateOption) error {
	o.SetUID(uuid.NewUUID())
	o.SetCreationTimestamp(metav1.Now())
	o.SetGeneration(1)
	if s, ok := o.(*corev1.Secret); ok && len(s.StringData) > 0 {
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		for k, v := range s.StringData {
			s.Data[k] = []byte(v)
		}
		s.StringData = nil
	}
	return f.WithWatch.Create(ctx, o, opts...)
}

// namespace creates a namespace, onboarded or not.
func (f *fakeCluster) namespace(t *testing.T, onboarded bool) string {
	t.Helper()
	f.mu.Lock()
	f.namespaces++
	name := fmt.Sprintf("fn-test-%d", f.namespaces)
	f.onboarded[name] = onboarded
	f.mu.Unlock()
	if err := f.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	return name
}

// CheckFor simulates tenancy.NamespaceAccess: a namespace made onboarded has granted
// the operator a build's RBAC, and one onboardKEDA made a keda function's too (the
// real check, SelfSubjectRulesReview, needs the API server's authorizer; pkg/tenancy
// tests it).
func (f *fakeCluster) CheckFor(_ context.Context, namespace, _ string, keda bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case !f.onboarded[namespace]:
		return tenancy.NotOnboarded(namespace, "namespace "+namespace+" has not onboarded func-operator (simulated)")
	case keda && !f.keda[namespace]:
		return tenancy.NotOnboarded(namespace, "namespace "+namespace+" has not onboarded func-operator for keda functions (simulated)")
	}
	return nil
}

// CheckForRebase is CheckFor: the fake's onboarding grants the impersonation too.
func (f *fakeCluster) CheckForRebase(ctx context.Context, namespace, serviceAccount string) error {
	return f.CheckFor(ctx, namespace, serviceAccount, false)
}

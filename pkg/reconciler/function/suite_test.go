package function

import (
	"fmt"
	"os"
	"testing"

	kedav1alpha1 "github.com/kedacore/http-add-on/operator/apis/http/v1alpha1"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"

	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	eventingv1 "knative.dev/eventing/pkg/apis/eventing/v1"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/test/envtest"
)

// controlPlane is the API server shared by the tests of this package that need one:
// started by the first of them (newNamespace, newBareNamespace or apiServer), so that
// the pure tests run without it, and skipped under -short (make test-unit).
var controlPlane = envtest.Shared{
	CRDs: []string{envtest.KnativeServingCRDs, envtest.KnativeEventingCRDs, envtest.TektonCRDs, envtest.KEDAHTTPCRDs},
	RBAC: true,
	Setup: func(env *envtest.Environment) (err error) {
		restConfig = env.Config
		k8sClient, err = env.Client(clientgoscheme.AddToScheme, v1alpha1.AddToScheme, servingv1.AddToScheme, eventingv1.AddToScheme, pipelinev1.AddToScheme, kedav1alpha1.AddToScheme)
		return err
	},
}

// k8sClient talks to the control plane as its admin; set by apiServer.
var (
	k8sClient  client.Client
	restConfig *rest.Config // the admin's
)

func TestMain(m *testing.M) {
	code := m.Run()
	if err := controlPlane.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// apiServer starts the package's control plane if no test did yet (k8sClient and
// restConfig are set from then on), and skips the test under -short. On the fake
// client (onFakeClient), it does nothing.
func apiServer(t *testing.T) {
	t.Helper()
	if fakeAPI != nil {
		return
	}
	controlPlane.Get(t)
}

// newNamespace creates a namespace of its own for a test, onboarded to the operator
// as config/namespace/onboard.yaml does it.
func newNamespace(t *testing.T) string {
	t.Helper()
	if fakeAPI != nil {
		return fakeAPI.namespace(t, true)
	}
	apiServer(t)
	return envtest.NewNamespace(t, restConfig, "fn-test-", true)
}

// newBareNamespace creates a namespace of its own for a test, not onboarded.
func newBareNamespace(t *testing.T) string {
	t.Helper()
	if fakeAPI != nil {
		return fakeAPI.namespace(t, false)
	}
	apiServer(t)
	return envtest.NewNamespace(t, restConfig, "fn-test-", false)
}

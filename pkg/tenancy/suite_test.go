package tenancy

import (
	"fmt"
	"os"
	"testing"

	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/test/envtest"
)

// controlPlane is the API server shared by the tests of this package that need one:
// started by the first of them (apiServer, newNamespace, newBareNamespace), so that
// the pure tests run without it, and skipped under -short (make test-unit).
var controlPlane = envtest.Shared{
	RBAC: true,
	Setup: func(env *envtest.Environment) (err error) {
		restConfig = env.Config
		k8sClient, err = env.Client(clientgoscheme.AddToScheme, v1alpha1.AddToScheme)
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
// restConfig are set from then on), and skips the test under -short.
func apiServer(t *testing.T) { t.Helper(); controlPlane.Get(t) }

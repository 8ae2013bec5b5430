package rebuild

import (
	"fmt"
	"os"
	"testing"

	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/test/envtest"
)

// controlPlane is the API server of the tests of this package that need one (the
// seeder's): started by the first of them, skipped under -short (make test-unit). The
// machine's and the queue's tests need none.
var controlPlane = envtest.Shared{
	CRDs: []string{envtest.TektonCRDs},
	Setup: func(env *envtest.Environment) (err error) {
		restConfig = env.Config
		k8sClient, err = env.Client(clientgoscheme.AddToScheme, v1alpha1.AddToScheme, pipelinev1.AddToScheme)
		return err
	},
}

// k8sClient talks to the control plane as its admin; set by newNamespace.
var (
	k8sClient  client.Client
	restConfig *rest.Config
)

func TestMain(m *testing.M) {
	code := m.Run()
	if err := controlPlane.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// newNamespace starts the package's control plane if no test did yet, and creates a
// namespace of its own for a test.
func newNamespace(t *testing.T) string {
	t.Helper()
	controlPlane.Get(t)
	return envtest.NewNamespace(t, restConfig, "rebuild-test-", false)
}

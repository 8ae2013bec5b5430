package imagedeploy

import (
	"fmt"
	"os"
	"testing"

	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/fnops/func-operator/test/envtest"
)

// controlPlane is the API server of this package's tests, with Knative Serving's CRDs
// and config/'s RBAC: started by the first test that needs it, skipped under -short.
var controlPlane = envtest.Shared{
	CRDs: []string{envtest.KnativeServingCRDs},
	RBAC: true,
	Setup: func(env *envtest.Environment) (err error) {
		adminConfig = env.Config
		if admin, err = env.Client(clientgoscheme.AddToScheme, servingv1.AddToScheme); err != nil {
			return err
		}
		// The operator's own credentials, as its ServiceAccount's token would be: a
		// user of the API server (a client certificate) of that name and groups, with
		// only the RBAC of config/. Not the admin impersonating it: Deploy impersonates,
		// and a request impersonates one user only.
		user, err := env.AddUser(ctrlenvtest.User{Name: envtest.OperatorUser,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:func-operator"}})
		if err != nil {
			return err
		}
		operatorConfig = user.Config()
		return nil
	},
}

var (
	admin          client.Client // the control plane's admin
	adminConfig    *rest.Config
	operatorConfig *rest.Config // the operator's ServiceAccount's identity
)

func TestMain(m *testing.M) {
	code := m.Run()
	if err := controlPlane.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// apiServer starts the package's control plane if no test did yet, and skips the test
// under -short.
func apiServer(t *testing.T) { t.Helper(); controlPlane.Get(t) }

package function

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	eventingv1 "knative.dev/eventing/pkg/apis/eventing/v1"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/test/envtest"
)

// k8sClient talks to the control plane shared by every test of this package.
var (
	k8sClient  client.Client
	restConfig *rest.Config // the admin's
)

func TestMain(m *testing.M) {
	env, err := envtest.Start(envtest.KnativeServingCRDs, envtest.KnativeEventingCRDs, envtest.TektonCRDs)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	scheme := runtime.NewScheme()
	err = errors.Join(clientgoscheme.AddToScheme(scheme), v1alpha1.AddToScheme(scheme), servingv1.AddToScheme(scheme), eventingv1.AddToScheme(scheme), pipelinev1.AddToScheme(scheme))
	if err == nil {
		k8sClient, err = client.New(env.Config, client.Options{Scheme: scheme})
	}
	if err == nil {
		_, err = envtest.Apply(context.Background(), env.Config, envtest.RBACFiles...)
	}
	restConfig = env.Config
	code := 1
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
	}
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// newNamespace creates a namespace of its own for a test, onboarded to the operator
// as config/namespace/onboard.yaml does it.
func newNamespace(t *testing.T) string { return envtest.NewNamespace(t, restConfig, "fn-test-", true) }

// newBareNamespace creates a namespace of its own for a test, not onboarded.
func newBareNamespace(t *testing.T) string {
	return envtest.NewNamespace(t, restConfig, "fn-test-", false)
}

package tenancy

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/test/envtest"
)

// newNamespace creates a namespace of its own for a test, onboarded to the operator
// as config/namespace/onboard.yaml does it.
func newNamespace(t *testing.T) string {
	t.Helper()
	apiServer(t)
	return envtest.NewNamespace(t, restConfig, "tenancy-test-", true)
}

// newBareNamespace creates a namespace of its own for a test, not onboarded.
func newBareNamespace(t *testing.T) string {
	t.Helper()
	apiServer(t)
	return envtest.NewNamespace(t, restConfig, "tenancy-test-", false)
}

// asOperator is a client with the operator's identity and only the RBAC of config/.
func asOperator(t *testing.T) client.Client {
	t.Helper()
	apiServer(t)
	return envtest.OperatorClient(t, restConfig, k8sClient.Scheme())
}

func onboard(t *testing.T, ns string) {
	t.Helper()
	apiServer(t)
	if err := envtest.Onboard(context.Background(), restConfig, ns); err != nil {
		t.Fatal(err)
	}
}

func mustCreate(t *testing.T, objs ...client.Object) {
	t.Helper()
	apiServer(t)
	for _, o := range objs {
		if err := k8sClient.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

func mustDelete(t *testing.T, o client.Object) {
	t.Helper()
	apiServer(t)
	if err := k8sClient.Delete(context.Background(), o); err != nil {
		t.Fatalf("deleting %T %s: %v", o, o.GetName(), err)
	}
}

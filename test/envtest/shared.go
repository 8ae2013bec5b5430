package envtest

import (
	"context"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Shared is the control plane of one package's tests, started by the first test that
// asks for it (Get) and stopped by the package's TestMain (Stop). A run of a package's
// pure tests starts none, and `go test -short` (make test-unit, the quick tier) skips
// every test that asks for one.
type Shared struct {
	// CRDs are the extra CRD directories, as for Start.
	CRDs []string
	// RBAC applies config/'s RBAC (RBACFiles) once the control plane is up.
	RBAC bool
	// Setup, when set, runs once on the started control plane (after RBAC): it
	// makes the package's clients (Environment.Client).
	Setup func(*Environment) error

	once sync.Once
	env  *Environment
	err  error
}

// Get returns the package's control plane, starting it on first use. Under -short it
// skips the test: it is not of the quick tier.
func (s *Shared) Get(t testing.TB) *Environment {
	t.Helper()
	skipShort(t)
	s.once.Do(func() {
		s.env, s.err = Start(s.CRDs...)
		if s.err == nil && s.RBAC {
			_, s.err = Apply(context.Background(), s.env.Config, RBACFiles...)
		}
		if s.err == nil && s.Setup != nil {
			s.err = s.Setup(s.env)
		}
	})
	if s.err != nil {
		t.Fatalf("starting the package's control plane: %v", s.err)
	}
	return s.env
}

// Stop stops the control plane when a test started it.
func (s *Shared) Stop() error {
	if s.env == nil {
		return nil
	}
	return s.env.Stop()
}

// Client returns a client of the control plane's admin that knows the types
// addToScheme add.
func (e *Environment) Client(addToScheme ...func(*runtime.Scheme) error) (client.Client, error) {
	scheme := runtime.NewScheme()
	for _, add := range addToScheme {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	return client.New(e.Config, client.Options{Scheme: scheme})
}

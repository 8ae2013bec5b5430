package envtest

import (
	"sync"
	"testing"
)

// Shared is the control plane of one package's tests, started by the first test that
// asks for it (Get) and stopped by the package's TestMain (Stop). A run of a package's
// pure tests starts none, and `go test -short` (make test-unit, the quick tier) skips
// every test that asks for one.
type Shared struct {
	// CRDs are the extra CRD directories, as for Start.
	CRDs []string
	// Setup, when set, runs once on the started control plane (clients, RBAC).
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

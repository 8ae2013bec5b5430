package function

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/fnops/func-operator/pkg/lanes"
	"github.com/fnops/func-operator/pkg/registry"
)

type panickingInspector struct{}

func (panickingInspector) Inspect(context.Context, string, authn.Keychain) (registry.Middleware, error) {
	panic("a library bug")
}

func (panickingInspector) Base(context.Context, string, authn.Keychain) (registry.BaseImage, error) {
	panic("a library bug")
}

// TestLanes_LeftOnPanic: a panic under an image read (controller-runtime recovers
// it and the process goes on) leaves the lane it held.
func TestLanes_LeftOnPanic(t *testing.T) {
	l := &lanes.Lanes{Workers: 2} // one lane per host
	r := New(Deps{Inspector: panickingInspector{}, Lanes: l})
	leave, ok := l.Enter("registry r.example", "ns")
	if !ok {
		t.Fatal("the first lane was refused")
	}
	func() {
		defer func() { _ = recover() }()
		_, _ = r.inspect(context.Background(), "r.example/fn:v1", nil, time.Second, leave)
	}()
	leave2, ok := l.Enter("registry r.example", "ns")
	if !ok {
		t.Fatal("the lane a panicking read held is still taken")
	}
	leave2(false)
}

//go:build !scale

package scale

import "testing"

// TestScale is built with the build tag scale only: without it, it says how to run it.
func TestScale(t *testing.T) {
	t.Skip("the scale benchmark is built with -tags scale: run `make bench-scale N=1000 R=50 INTERVAL=10s`, " +
		"or KUBEBUILDER_ASSETS=$(hack/control-plane.sh) FUNC_OPERATOR_SCALE_N=1000 go test -tags scale -count=1 -timeout 90m -run TestScale -v ./test/scale/")
}

package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestBuildInfo(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(BuildInfo("v1.2.3", "0123abc", "go1.26.0", "v0.50.1"))
	want := `
# HELP func_operator_build_info The running build of the operator: always 1; version, revision, go_version and func_version say which.
# TYPE func_operator_build_info gauge
func_operator_build_info{func_version="v0.50.1",go_version="go1.26.0",revision="0123abc",version="v1.2.3"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "func_operator_build_info"); err != nil {
		t.Error(err)
	}
}

package monitoring

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMetricNames(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`absent(up{job="func-operator-metrics"} == 1)`, []string{"up"}},
		{`func_operator_function_condition{type="Ready",status="False"} == 1`, []string{"func_operator_function_condition"}},
		{`sum by (namespace, reason) (func_operator_functions{type="Ready"}) > 0 unless on() count(func_operator_function_condition)`,
			[]string{"func_operator_function_condition", "func_operator_functions"}},
		{`histogram_quantile(0.9, sum without (instance) (rate(func_operator_build_duration_seconds_bucket[$__rate_interval])))`,
			[]string{"func_operator_build_duration_seconds_bucket"}},
		{`sum(rate(a_total[5m] offset 1h)) / ignoring(result) group_left sum(rate(b_total[5m])) or vector(0)`, []string{"a_total", "b_total"}},
		{`sum(x{l="by (y) z}"}) by (le)`, []string{"x"}},
		{`{__name__="named_by_matcher", job=~"a|b"}`, []string{"named_by_matcher"}},
		{`label_replace(up, "dst", "$1", "src", "(.*)") * on(instance) group_right(job) node_info # comment metric`, []string{"node_info", "up"}},
		{`max(func_operator_check_age_max_seconds{namespace=~"$namespace"}) > 2 * 300 and 1e3 > Inf`, []string{"func_operator_check_age_max_seconds"}},
		{`rate(x[5m:30s] @ start())`, []string{"x"}},
	} {
		if diff := cmp.Diff(tc.want, MetricNames(tc.expr)); diff != "" {
			t.Errorf("MetricNames(%s) (-want +got):\n%s", tc.expr, diff)
		}
	}
}

package operator

import (
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fnops/func-operator/pkg/metrics"
	"github.com/fnops/func-operator/test/monitoring"
	"github.com/fnops/func-operator/test/tekton"
)

// describedNames are the metric families the operator's own collectors announce in
// Describe: a HistogramVec or CounterVec with nothing observed exports no series, so
// a scrape alone would miss it.
func describedNames(t *testing.T) map[string]bool {
	t.Helper()
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	names := map[string]bool{}
	ch := make(chan *prometheus.Desc, 64)
	for _, c := range metrics.New(func() (int, int) { return 0, 0 }, metrics.WithCommitStore(func() metrics.CommitStore { return metrics.CommitStore{} })).Collectors() {
		c.Describe(ch)
	}
	close(ch)
	for d := range ch {
		m := fqName.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("no fqName in %s", d)
		}
		names[m[1]] = true
	}
	return names
}

// TestOperator_MonitoringNames scrapes a running operator that rebuilt two Functions
// and fails when a rule of config/monitoring/prometheusrule.yaml or a query of
// grafana-dashboard.json names a metric it does not export (in the scrape, or in its
// collectors' Describe). Positive control: a rule with a misspelt metric is reported.
func TestOperator_MonitoringNames(t *testing.T) {
	ns := newNamespace(t)
	f := newRebuildFixture(t, ns, "hello", "echo")
	tekton.StartKubelet(t, restConfig, tekton.Options{Namespaces: []string{ns}, Registry: f.reg, Decide: succeed(t)})
	addr := freeAddr(t)
	startOperatorServing(t, rebuildConfig(2), nil, addr, ns)
	f.createFunction(t, "hello", nil)
	f.createFunction(t, "echo", nil)
	eventually(t, 90*time.Second, rebuilt(t, ns, "hello"))
	eventually(t, 90*time.Second, rebuilt(t, ns, "echo"))

	described := describedNames(t)
	exported := map[string]bool{}
	var families map[string]bool
	eventually(t, 30*time.Second, func() string {
		families = map[string]bool{}
		for name := range scrape(t, addr) {
			families[name] = true
		}
		// After two rebuilds, every family of the operator's has series: what Describe
		// announces is what a scrape shows.
		var missing []string
		for name := range described {
			if !families[name] {
				missing = append(missing, name)
			}
		}
		sort.Strings(missing)
		if len(missing) > 0 {
			return fmt.Sprintf("described but not scraped: %v", missing)
		}
		for _, name := range []string{"controller_runtime_reconcile_total", "controller_runtime_reconcile_errors_total",
			"controller_runtime_reconcile_time_seconds", "workqueue_depth"} {
			if !families[name] {
				return name + " not scraped"
			}
		}
		return ""
	})
	for name := range families {
		exported[name] = true
	}
	for name := range described {
		exported[name] = true
	}

	pr, err := monitoring.LoadPrometheusRule(filepath.Join(monitoring.Dir(), monitoring.PrometheusRuleFile))
	if err != nil {
		t.Fatal(err)
	}
	d, err := monitoring.LoadDashboard(filepath.Join(monitoring.Dir(), monitoring.DashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	exprs := append(monitoring.RuleExprs(pr), monitoring.DashboardExprs(d)...)
	if missing := monitoring.Unexported(exprs, exported); len(missing) > 0 {
		t.Errorf("config/monitoring/ names metrics the operator does not export: %s", strings.Join(missing, ", "))
	}
	// Together, the rules and the dashboard read every family of the operator's.
	used := map[string]bool{}
	for _, e := range exprs {
		for _, name := range monitoring.MetricNames(e.Expr) {
			used[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_count"), "_sum")] = true
		}
	}
	for name := range described {
		if !used[name] {
			t.Errorf("neither a rule nor a panel reads %s", name)
		}
	}

	// Positive control: a copy of a rule with a metric that does not exist.
	typo := []monitoring.Expr{{Where: "rule copy", Expr: monitoring.RuleExprs(pr)[0].Expr +
		" or func_operator_check_age_seconds > 600"}}
	if got := monitoring.Unexported(typo, exported); len(got) != 1 || !strings.HasPrefix(got[0], "func_operator_check_age_seconds ") {
		t.Errorf("a rule naming func_operator_check_age_seconds: reported %v, want it", got)
	}
}

// TestOperator_FunctionConditionMetricsOff: with NoFunctionConditionMetrics the
// operator exports no func_operator_function_condition, and func_operator_functions
// counts its Functions.
func TestOperator_FunctionConditionMetricsOff(t *testing.T) {
	ns := newNamespace(t)
	f := newRebuildFixture(t, ns, "hello", "echo")
	addr := freeAddr(t)
	off := false
	startOperatorOptions(t, rebuildConfig(2), nil, func(o *Options) { o.MetricsAddr, o.NoFunctionConditionMetrics = addr, true }, ns)
	f.createFunction(t, "hello", &off)
	f.createFunction(t, "echo", &off)
	eventually(t, 60*time.Second, func() string {
		m := scrape(t, addr)
		if _, ok := m["func_operator_function_condition"]; ok {
			return "func_operator_function_condition is exported"
		}
		fam, ok := m["func_operator_functions"]
		if !ok {
			return "no func_operator_functions"
		}
		ready := 0.0
		for _, s := range fam.Metric {
			labels := map[string]string{}
			for _, l := range s.Label {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["namespace"] == ns && labels["type"] == "Ready" {
				ready += s.GetGauge().GetValue()
			}
		}
		if ready != 2 {
			return fmt.Sprintf("func_operator_functions{namespace=%q,type=\"Ready\"} sums to %v, want 2", ns, ready)
		}
		return ""
	})
}

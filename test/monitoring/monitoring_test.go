package monitoring

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// promtool returns promtool: $FUNC_OPERATOR_PROMTOOL (make test sets it, from
// hack/promtool.sh). Without it the test skips, unless FUNC_OPERATOR_REQUIRE_ALL is
// set (make test, CI): then it fails.
func promtool(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("FUNC_OPERATOR_PROMTOOL"); p != "" {
		return p
	}
	if os.Getenv("FUNC_OPERATOR_REQUIRE_ALL") != "" {
		t.Fatal("FUNC_OPERATOR_PROMTOOL is not set (make promtool; FUNC_OPERATOR_PROMTOOL=$(hack/promtool.sh))")
	}
	t.Skip("FUNC_OPERATOR_PROMTOOL is not set: export FUNC_OPERATOR_PROMTOOL=$(hack/promtool.sh)")
	return ""
}

func loadRule(t *testing.T) *PrometheusRule {
	t.Helper()
	pr, err := LoadPrometheusRule(filepath.Join(Dir(), PrometheusRuleFile))
	if err != nil {
		t.Fatal(err)
	}
	return pr
}

// runPromtool writes pr's groups as rules.yaml beside a copy of the unit tests and
// runs promtool args there.
func runPromtool(t *testing.T, bin string, pr *PrometheusRule, args ...string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	rules, err := RulesFile(pr)
	if err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile(filepath.Join("testdata", "alerts_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"rules.yaml": rules, "alerts_test.yaml": tests} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestPrometheusRule_Promtool: the rules pass promtool check rules, and the unit tests
// of testdata/alerts_test.yaml. Positive control: with the expression of any one
// alert made never to fire, the unit tests fail (each alert has a test that expects
// it to fire).
func TestPrometheusRule_Promtool(t *testing.T) {
	bin := promtool(t)
	pr := loadRule(t)
	if out, err := runPromtool(t, bin, pr, "check", "rules", "rules.yaml"); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	if out, err := runPromtool(t, bin, pr, "test", "rules", "alerts_test.yaml"); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
	tests, err := os.ReadFile(filepath.Join("testdata", "alerts_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for gi, g := range pr.Spec.Groups {
		for ri, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			t.Run(r.Alert, func(t *testing.T) {
				if !bytes.Contains(tests, []byte("alertname: "+r.Alert+"\n")) {
					t.Errorf("testdata/alerts_test.yaml has no test of %s", r.Alert)
				}
				broken := loadRule(t)
				broken.Spec.Groups[gi].Rules[ri].Expr = "vector(0) == 1"
				if out, err := runPromtool(t, bin, broken, "test", "rules", "alerts_test.yaml"); err == nil {
					t.Errorf("with %s never firing, promtool test rules passes:\n%s", r.Alert, out)
				}
			})
		}
	}
}

// TestPrometheusRule_Strict: the PrometheusRule decodes strictly (types.go), every
// alert has a severity, a summary, a description and a runbook in docs/metrics.md.
// Positive control: a misspelt field fails the decode.
func TestPrometheusRule_Strict(t *testing.T) {
	pr := loadRule(t)
	if pr.APIVersion != "monitoring.coreos.com/v1" || pr.Kind != "PrometheusRule" {
		t.Errorf("apiVersion %q kind %q, want monitoring.coreos.com/v1 PrometheusRule", pr.APIVersion, pr.Kind)
	}
	docs, err := os.ReadFile(filepath.Join(Dir(), "..", "..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			if !slices.Contains([]string{"critical", "warning", "info"}, r.Labels["severity"]) {
				t.Errorf("%s: severity %q, want critical, warning or info", r.Alert, r.Labels["severity"])
			}
			for _, a := range []string{"summary", "description", "runbook_url"} {
				if r.Annotations[a] == "" {
					t.Errorf("%s: no %s annotation", r.Alert, a)
				}
			}
			anchor, ok := strings.CutPrefix(r.Annotations["runbook_url"], "https://github.com/fnops/func-operator/blob/main/docs/metrics.md#")
			if !ok || !bytes.Contains(bytes.ToLower(docs), []byte("### "+anchor+"\n")) {
				t.Errorf("%s: runbook_url %q is no section of docs/metrics.md", r.Alert, r.Annotations["runbook_url"])
			}
		}
	}

	data, err := os.ReadFile(filepath.Join(Dir(), PrometheusRuleFile))
	if err != nil {
		t.Fatal(err)
	}
	typo := strings.Replace(string(data), "    - alert: FuncOperatorDown\n", "    - alert: FuncOperatorDown\n      fro: 5m\n", 1)
	if typo == string(data) {
		t.Fatal("the positive control found no FuncOperatorDown to misspell")
	}
	if err := yaml.UnmarshalStrict([]byte(typo), &PrometheusRule{}); err == nil {
		t.Error("a rule with field fro decodes")
	}
}

// TestServiceMonitor_Strict: servicemonitor.yaml holds a ServiceMonitor that scrapes
// the port "metrics" over HTTPS with a bearer token, and a ClusterRoleBinding to
// func-operator-metrics-reader, both decoded strictly. Positive control: a misspelt
// field fails.
func TestServiceMonitor_Strict(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(Dir(), ServiceMonitorFile))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, doc := range Documents(data) {
		kind, err := Kind(doc)
		if err != nil {
			t.Fatal(err)
		}
		kinds[kind]++
		switch kind {
		case "ServiceMonitor":
			var sm ServiceMonitor
			if err := yaml.UnmarshalStrict(doc, &sm); err != nil {
				t.Fatalf("ServiceMonitor: %v", err)
			}
			if sm.APIVersion != "monitoring.coreos.com/v1" || len(sm.Spec.Endpoints) != 1 {
				t.Fatalf("ServiceMonitor: apiVersion %q, %d endpoints, want monitoring.coreos.com/v1 and one", sm.APIVersion, len(sm.Spec.Endpoints))
			}
			e := sm.Spec.Endpoints[0]
			if e.Port != "metrics" || e.Scheme != "https" || e.BearerTokenFile == "" || e.TLSConfig == nil {
				t.Errorf("endpoint %+v: want port metrics, scheme https, a bearer token and a tlsConfig", e)
			}
			// The token goes only to a server whose certificate is verified
			// (TestServiceMonitor_VerifiesTheCertificate: against what).
			if tc := e.TLSConfig; tc != nil && (tc.InsecureSkipVerify || tc.CA == nil || tc.ServerName == "") {
				t.Errorf("tlsConfig %+v: want the certificate verified (a ca and a serverName), no insecureSkipVerify", tc)
			}
			// Without honorLabels, Prometheus Operator renames the series' namespace
			// label (the Function's) exported_namespace and sets the target's.
			if !e.HonorLabels {
				t.Errorf("endpoint %+v: want honorLabels: true, so that the series keep the Function's namespace", e)
			}
			if sm.Spec.Selector.MatchLabels["app.kubernetes.io/name"] != "func-operator" {
				t.Errorf("selector %v does not select the operator's Services", sm.Spec.Selector.MatchLabels)
			}
		case "ClusterRoleBinding":
			var crb rbacv1.ClusterRoleBinding
			if err := yaml.UnmarshalStrict(doc, &crb); err != nil {
				t.Fatalf("ClusterRoleBinding: %v", err)
			}
			if crb.RoleRef.Name != "func-operator-metrics-reader" || len(crb.Subjects) != 1 || crb.Subjects[0].Kind != "ServiceAccount" {
				t.Errorf("ClusterRoleBinding %+v: want func-operator-metrics-reader bound to one ServiceAccount", crb)
			}
		default:
			t.Errorf("unexpected %s", kind)
		}
	}
	if kinds["ServiceMonitor"] != 1 || kinds["ClusterRoleBinding"] != 1 {
		t.Errorf("kinds %v, want one ServiceMonitor and one ClusterRoleBinding", kinds)
	}
	typo := strings.Replace(string(data), "    scheme: https\n", "    schema: https\n", 1)
	if typo == string(data) {
		t.Fatal("the positive control found no scheme to misspell")
	}
	if err := yaml.UnmarshalStrict(Documents([]byte(typo))[0], &ServiceMonitor{}); err == nil {
		t.Error("an endpoint with field schema decodes")
	}
}

// TestDashboard: the dashboard decodes, and each panel's queries name metrics.
func TestDashboard(t *testing.T) {
	d, err := LoadDashboard(filepath.Join(Dir(), DashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	exprs := DashboardExprs(d)
	if len(exprs) < 10 {
		t.Fatalf("%d queries in the dashboard, want its panels'", len(exprs))
	}
	for _, e := range exprs {
		if len(MetricNames(e.Expr)) == 0 {
			t.Errorf("%s: %q names no metric", e.Where, e.Expr)
		}
	}
}

// TestNotInstalled: `ko apply -f config/` and `kubectl apply -f config/` read
// config/*.yaml, not its subdirectories (no -R): no file there holds a
// monitoring.coreos.com object, which would fail on a cluster without
// prometheus-operator's CRDs.
func TestNotInstalled(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(Dir(), "..", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no config/*.yaml: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(data, []byte("monitoring.coreos.com")) {
			t.Errorf("%s names monitoring.coreos.com: config/ would install it", f)
		}
	}
}

// TestDashboard_Promtool: each query of the dashboard, its Grafana variables given
// values, is PromQL promtool accepts (as a recording rule). Positive control: a
// query with an unclosed parenthesis fails.
func TestDashboard_Promtool(t *testing.T) {
	bin := promtool(t)
	d, err := LoadDashboard(filepath.Join(Dir(), DashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	grafana := strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$namespace", ".*")
	asRules := func(exprs []Expr) *PrometheusRule {
		g := RuleGroup{Name: "dashboard"}
		for i, e := range exprs {
			g.Rules = append(g.Rules, Rule{Record: "dashboard:query" + strconv.Itoa(i), Expr: grafana.Replace(e.Expr)})
		}
		return &PrometheusRule{Spec: PrometheusRuleSpec{Groups: []RuleGroup{g}}}
	}
	exprs := DashboardExprs(d)
	if out, err := runPromtool(t, bin, asRules(exprs), "check", "rules", "rules.yaml"); err != nil {
		t.Fatalf("promtool check rules on the dashboard's queries: %v\n%s", err, out)
	}
	broken := append(slices.Clone(exprs), Expr{Where: "broken", Expr: "sum(rate(func_operator_rebuilds_total[5m])"})
	if out, err := runPromtool(t, bin, asRules(broken), "check", "rules", "rules.yaml"); err == nil {
		t.Errorf("promtool accepts an unclosed parenthesis:\n%s", out)
	}
}

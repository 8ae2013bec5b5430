package monitoring

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/fnops/func-operator/test/testfs"
)

// The files of config/monitoring/.
const (
	ServiceMonitorFile = "servicemonitor.yaml"
	PrometheusRuleFile = "prometheusrule.yaml"
	DashboardFile      = "grafana-dashboard.json"
)

// Dir is config/monitoring/ of this checkout.
func Dir() string { return filepath.Join(testfs.RepoRoot(), "config", "monitoring") }

// Documents splits a YAML stream into its documents, empty ones left out.
func Documents(data []byte) [][]byte {
	var docs [][]byte
	for _, d := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
		if strings.TrimSpace(stripComments(d)) != "" {
			docs = append(docs, []byte(d))
		}
	}
	return docs
}

func stripComments(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// Kind returns a document's kind.
func Kind(doc []byte) (string, error) {
	var tm struct {
		Kind string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return "", fmt.Errorf("reading the kind: %w", err)
	}
	return tm.Kind, nil
}

// LoadPrometheusRule decodes a PrometheusRule file strictly.
func LoadPrometheusRule(path string) (*PrometheusRule, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	docs := Documents(data)
	if len(docs) != 1 {
		return nil, fmt.Errorf("%s: %d documents, want one PrometheusRule", path, len(docs))
	}
	var pr PrometheusRule
	if err := yaml.UnmarshalStrict(docs[0], &pr); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &pr, nil
}

// RulesFile is the rule groups of pr as a Prometheus rules file (what promtool reads).
func RulesFile(pr *PrometheusRule) ([]byte, error) {
	return yaml.Marshal(pr.Spec)
}

// Expr is a PromQL expression of a rule or of a dashboard panel, and where it is.
type Expr struct {
	Where, Expr string
}

// RuleExprs are the expressions of the rules of pr.
func RuleExprs(pr *PrometheusRule) []Expr {
	var out []Expr
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			out = append(out, Expr{Where: "rule " + r.Alert + r.Record, Expr: r.Expr})
		}
	}
	return out
}

// Dashboard is the part of a Grafana dashboard that holds queries.
type Dashboard struct {
	Title      string  `json:"title"`
	UID        string  `json:"uid"`
	Panels     []Panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

// Panel is a dashboard panel; a row holds panels.
type Panel struct {
	Title   string  `json:"title"`
	Type    string  `json:"type"`
	Panels  []Panel `json:"panels"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

// LoadDashboard decodes a Grafana dashboard JSON file.
func LoadDashboard(path string) (*Dashboard, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var d Dashboard
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&d); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &d, nil
}

// labelValues is Grafana's label_values(query, label) of a template variable.
var labelValues = regexp.MustCompile(`^\s*label_values\((.*),\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)\s*$`)

// DashboardExprs are the expressions of the panels and template variables of d.
func DashboardExprs(d *Dashboard) []Expr {
	var out []Expr
	var walk func([]Panel)
	walk = func(ps []Panel) {
		for _, p := range ps {
			for _, t := range p.Targets {
				out = append(out, Expr{Where: "panel " + p.Title, Expr: t.Expr})
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		q, ok := v.Query.(string)
		if m, ok2 := v.Query.(map[string]any); ok2 {
			q, ok = m["query"].(string)
		}
		if !ok || v.Type != "query" {
			continue
		}
		if m := labelValues.FindStringSubmatch(q); m != nil {
			q = m[1]
		}
		out = append(out, Expr{Where: "variable " + v.Name, Expr: q})
	}
	return out
}

// Unexported returns, sorted, the metric names exprs select that exported does not
// hold, as "name (where)". A histogram's _bucket, _sum and _count series count as
// its family's; up is Prometheus's own.
func Unexported(exprs []Expr, exported map[string]bool) []string {
	var out []string
	for _, e := range exprs {
		for _, name := range MetricNames(e.Expr) {
			if name == "up" || exported[name] {
				continue
			}
			found := false
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if base, ok := strings.CutSuffix(name, suffix); ok && exported[base] {
					found = true
				}
			}
			if !found {
				out = append(out, name+" ("+e.Where+")")
			}
		}
	}
	return out
}

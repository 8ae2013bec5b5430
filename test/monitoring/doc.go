// Package monitoring checks config/monitoring/: the ServiceMonitor and the
// PrometheusRule decode strictly into the prometheus-operator fields they use, the
// rules pass `promtool check rules` and their unit tests (testdata/), and the metric
// names the rules and the Grafana dashboard query can be listed (MetricNames) for
// pkg/operator's test to check against what a running operator exports.
//
// It imports no package of the operator: pkg/operator's tests import it. It does not
// import prometheus-operator's API types nor Prometheus's PromQL parser: both require
// k8s.io v0.37, and this module is on v0.35 (see types.go and promql.go).
package monitoring

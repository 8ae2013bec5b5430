package metrics

import "github.com/prometheus/client_golang/prometheus"

// BuildInfo returns the func_operator_build_info gauge: always 1, its labels say which
// build runs (as Prometheus' own and Knative's build_info do): the release version,
// the git revision, the Go version and the knative.dev/func module version. A scrape
// of several replicas, or of an upgrade half done, shows which runs which.
func BuildInfo(version, revision, goVersion, funcVersion string) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: Namespace, Name: "build_info",
		Help: "The running build of the operator: always 1; version, revision, go_version and func_version say which.",
		ConstLabels: prometheus.Labels{
			"version": version, "revision": revision, "go_version": goVersion, "func_version": funcVersion,
		},
	})
	g.Set(1)
	return g
}

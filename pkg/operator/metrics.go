package operator

import (
	"crypto/tls"

	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// The metrics endpoint's authentication and authorization: a scraper's bearer token
// is checked with a TokenReview, its right to get /metrics with a SubjectAccessReview.
// (Creating either reads nothing and writes nothing: the API server answers whether a
// token is valid, or whether a user may do something.)
//
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// MetricsReaderClusterRole is the ClusterRole config/ ships for what scrapes the
// metrics (get on the non-resource URL /metrics): bind it to Prometheus's
// ServiceAccount.
const MetricsReaderClusterRole = "func-operator-metrics-reader"

// metricsOptions are the options of the manager's metrics server. Secure: HTTPS, each
// scrape authenticated and authorized by the API server (controller-runtime's filter,
// as kubebuilder v4 scaffolds), with the certificate of o.MetricsCertDir (tls.crt,
// tls.key, reloaded when they change) or, without one, a self-signed certificate made
// in memory at start. Otherwise plain HTTP, for a process on a developer's machine
// (hack/run) or tests on loopback.
func metricsOptions(o Options) metricsserver.Options {
	opts := metricsserver.Options{BindAddress: o.MetricsAddr}
	if !o.MetricsSecure {
		return opts
	}
	opts.SecureServing = true
	opts.FilterProvider = filters.WithAuthenticationAndAuthorization
	opts.CertDir = o.MetricsCertDir
	// HTTP/1.1 only, as kubebuilder: HTTP/2's stream reset and rapid reset attacks
	// (CVE-2023-44487, CVE-2023-39325) cost a server more than a scrape is worth.
	opts.TLSOpts = []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}
	return opts
}

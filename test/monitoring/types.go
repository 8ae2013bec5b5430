package monitoring

// The fields of prometheus-operator's monitoring.coreos.com/v1 ServiceMonitor and
// PrometheusRule (github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring
// v0.95.2, json names as there) that config/monitoring/ uses. Decoded strictly: a
// field not here, such as a typo, fails. A field the files start to use needs adding
// here, with its name checked against those types.

// ObjectMeta is the part of metadata the files set.
type ObjectMeta struct {
	Name      string            `json:"name"`
	Namespace string            `json:"namespace,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
}

// ServiceMonitor is a monitoring.coreos.com/v1 ServiceMonitor.
type ServiceMonitor struct {
	APIVersion string             `json:"apiVersion"`
	Kind       string             `json:"kind"`
	Metadata   ObjectMeta         `json:"metadata"`
	Spec       ServiceMonitorSpec `json:"spec"`
}

// ServiceMonitorSpec is its spec.
type ServiceMonitorSpec struct {
	JobLabel          string             `json:"jobLabel,omitempty"`
	Selector          LabelSelector      `json:"selector"`
	NamespaceSelector *NamespaceSelector `json:"namespaceSelector,omitempty"`
	Endpoints         []Endpoint         `json:"endpoints"`
}

// LabelSelector is a metav1.LabelSelector with matchLabels only.
type LabelSelector struct {
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
}

// NamespaceSelector selects the namespaces of the Services.
type NamespaceSelector struct {
	Any        bool     `json:"any,omitempty"`
	MatchNames []string `json:"matchNames,omitempty"`
}

// Endpoint is one endpoint a ServiceMonitor scrapes.
type Endpoint struct {
	Port            string         `json:"port,omitempty"`
	Path            string         `json:"path,omitempty"`
	Scheme          string         `json:"scheme,omitempty"`
	Interval        string         `json:"interval,omitempty"`
	HonorLabels     bool           `json:"honorLabels,omitempty"`
	ScrapeTimeout   string         `json:"scrapeTimeout,omitempty"`
	BearerTokenFile string         `json:"bearerTokenFile,omitempty"`
	Authorization   *Authorization `json:"authorization,omitempty"`
	TLSConfig       *TLSConfig     `json:"tlsConfig,omitempty"`
}

// Authorization is the endpoint's Authorization header.
type Authorization struct {
	Type        string             `json:"type,omitempty"`
	Credentials *SecretKeySelector `json:"credentials,omitempty"`
}

// SecretKeySelector names a key of a Secret.
type SecretKeySelector struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

// TLSConfig is the endpoint's TLS configuration.
type TLSConfig struct {
	CA                 *SecretOrConfigMap `json:"ca,omitempty"`
	CAFile             string             `json:"caFile,omitempty"`
	ServerName         string             `json:"serverName,omitempty"`
	InsecureSkipVerify bool               `json:"insecureSkipVerify,omitempty"`
}

// SecretOrConfigMap names a key of a Secret or of a ConfigMap.
type SecretOrConfigMap struct {
	Secret    *SecretKeySelector `json:"secret,omitempty"`
	ConfigMap *SecretKeySelector `json:"configMap,omitempty"`
}

// PrometheusRule is a monitoring.coreos.com/v1 PrometheusRule.
type PrometheusRule struct {
	APIVersion string             `json:"apiVersion"`
	Kind       string             `json:"kind"`
	Metadata   ObjectMeta         `json:"metadata"`
	Spec       PrometheusRuleSpec `json:"spec"`
}

// PrometheusRuleSpec is its spec: Prometheus rule groups, as a rules file holds them.
type PrometheusRuleSpec struct {
	Groups []RuleGroup `json:"groups"`
}

// RuleGroup is a group of rules.
type RuleGroup struct {
	Name     string `json:"name"`
	Interval string `json:"interval,omitempty"`
	Rules    []Rule `json:"rules"`
}

// Rule is an alerting or recording rule.
type Rule struct {
	Record      string            `json:"record,omitempty"`
	Alert       string            `json:"alert,omitempty"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

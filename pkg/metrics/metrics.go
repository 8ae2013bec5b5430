// Package metrics holds the operator's Prometheus metrics, registered on the manager's registry.
package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"knative.dev/pkg/apis"
)

// Namespace prefixes every metric of the operator.
const Namespace = "func_operator"

// Results of a rebuild.
const (
	ResultSucceeded = "succeeded"
	ResultFailed    = "failed"
)

// Git operations timed by GitFetchDuration.
const (
	GitListRefs = "ls-remote"
	GitClone    = "clone"
)

// Metrics are the operator's metrics. A nil *Metrics records nothing.
type Metrics struct {
	condition     *prometheus.GaugeVec
	rebuilds      *prometheus.CounterVec
	buildDuration prometheus.Histogram
	gitDuration   *prometheus.HistogramVec

	mu sync.Mutex
	// series holds the condition label sets each Function has, to delete them.
	series map[types.NamespacedName][]prometheus.Labels
	// outdated holds the Functions whose middleware is outdated.
	outdated map[types.NamespacedName]bool
	queue    func() (running, waiting int)
}

// New returns the metrics; queue reports the running and waiting rebuilds.
func New(queue func() (running, waiting int)) *Metrics {
	m := &Metrics{
		condition: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "function_condition",
			Help: "1 for the status, reason and severity of each condition of each Function (Unknown while reconciling); severity Info conditions never gate Ready; the series go with the Function.",
		}, []string{"namespace", "name", "type", "status", "reason", "severity"}),
		rebuilds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "rebuilds_total",
			Help: "Rebuilds that ended, by result (succeeded, failed).",
		}, []string{"result"}),
		buildDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "build_duration_seconds",
			Help:    "Duration of rebuilds, from start to the end of the PipelineRun.",
			Buckets: []float64{30, 60, 120, 300, 600, 1200, 1800, 3600},
		}),
		gitDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "git_fetch_duration_seconds",
			Help:    "Duration of git operations: ls-remote (branch heads) and clone.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2.5, 10),
		}, []string{"operation"}),
		series:   map[types.NamespacedName][]prometheus.Labels{},
		outdated: map[types.NamespacedName]bool{},
		queue:    queue,
	}
	return m
}

// Collectors returns what to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	cs := []prometheus.Collector{m.condition, m.rebuilds, m.buildDuration, m.gitDuration,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "middleware_outdated_functions",
			Help: "Functions whose middleware is outdated (a rebuild would bring newer middleware).",
		}, func() float64 {
			m.mu.Lock()
			defer m.mu.Unlock()
			return float64(len(m.outdated))
		}),
	}
	if m.queue != nil {
		cs = append(cs,
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Namespace: Namespace, Name: "build_queue_length",
				Help: "Rebuilds waiting for a slot of the fleet budget (ConfigMap maxConcurrentBuilds).",
			}, func() float64 { _, w := m.queue(); return float64(w) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Namespace: Namespace, Name: "builds_running",
				Help: "Rebuilds holding a slot of the fleet budget.",
			}, func() float64 { r, _ := m.queue(); return float64(r) }),
		)
	}
	return cs
}

// Conditions sets the condition series of a Function to conds, replacing its old ones.
func (m *Metrics) Conditions(key types.NamespacedName, conds []apis.Condition, outdated bool) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.drop(key)
	labels := make([]prometheus.Labels, 0, len(conds))
	for _, c := range conds {
		l := prometheus.Labels{"namespace": key.Namespace, "name": key.Name, "type": string(c.Type), "status": string(c.Status), "reason": c.Reason,
			"severity": Severity(c)}
		m.condition.With(l).Set(1)
		labels = append(labels, l)
	}
	m.series[key] = labels
	if outdated {
		m.outdated[key] = true
	} else {
		delete(m.outdated, key)
	}
}

// Forget deletes the series of a deleted Function.
func (m *Metrics) Forget(key types.NamespacedName) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.drop(key)
	delete(m.outdated, key)
}

// drop deletes the condition series of a Function. Call with the lock held.
func (m *Metrics) drop(key types.NamespacedName) {
	for _, l := range m.series[key] {
		m.condition.Delete(l)
	}
	delete(m.series, key)
}

// Rebuild counts a rebuild that ended, and its duration when known (not negative).
func (m *Metrics) Rebuild(result string, duration time.Duration) {
	if m == nil {
		return
	}
	m.rebuilds.WithLabelValues(result).Inc()
	if duration >= 0 {
		m.buildDuration.Observe(duration.Seconds())
	}
}

// GitFetch records the duration of a git operation.
func (m *Metrics) GitFetch(operation string, d time.Duration) {
	if m == nil {
		return
	}
	m.gitDuration.WithLabelValues(operation).Observe(d.Seconds())
}

// Severity is a condition's Knative severity as a label: Error (Knative writes it as
// ""), Warning or Info.
func Severity(c apis.Condition) string {
	if c.Severity == apis.ConditionSeverityError {
		return "Error"
	}
	return string(c.Severity)
}

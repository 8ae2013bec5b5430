package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
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
	condition *prometheus.Desc
	functions *prometheus.Desc
	// perFunction exports func_operator_function_condition (a series per condition
	// of each Function); func_operator_functions, the fleet's counts, goes always.
	perFunction    bool
	rebuilds       *prometheus.CounterVec
	buildDuration  prometheus.Histogram
	rebases        *prometheus.CounterVec
	rebaseDuration prometheus.Histogram
	gitDuration    *prometheus.HistogramVec
	sharedLists    prometheus.Counter

	// gauges guards what a scrape reads; never held across a call into Prometheus (a
	// scrape waits for one collector while another holds what it collects).
	gauges sync.Mutex
	// series holds the conditions of each Function, as function_condition shows them:
	// made at scrape time from this, a Function costs a few strings, not a gauge and its
	// label pairs per condition (at 5,000 Functions, tens of MiB).
	series map[types.NamespacedName][]conditionLabels
	// outdated holds the Functions whose middleware is outdated.
	outdated map[types.NamespacedName]bool
	// baseOutdated holds the Functions whose base moved on (BaseUpToDate False).
	baseOutdated map[types.NamespacedName]bool
	// checked holds when each Function not suspended was last checked.
	checked map[types.NamespacedName]time.Time
	clock   clock.PassiveClock
	queue   func() (running, waiting int)
	// commitStore reports the git fetcher's commit store (WithCommitStore).
	commitStore func() CommitStore
	// transferRetries reports the git transfers made again (WithTransferRetries).
	transferRetries func() int64
	// cloudEvents reports the outcomes sent as CloudEvents (WithCloudEvents).
	cloudEvents func() CloudEvents
}

// CommitStore is what the git fetcher keeps of the commits it fetched (see package
// git's CommitStoreStats).
type CommitStore struct {
	Bytes                         int64
	Commits                       int
	Evictions, Refetches, NotKept uint64
}

// WithCommitStore exports what the git fetcher's commit store holds and drops:
// func_operator_git_commit_store_bytes, _commits, _evictions_total, _refetches_total
// and _not_kept_total, read together at each scrape.
func WithCommitStore(stats func() CommitStore) Option {
	return func(m *Metrics) { m.commitStore = stats }
}

// WithTransferRetries exports func_operator_git_transfer_retries_total: the git
// transfers made again at once because go-git had failed an SSH exchange the server
// completed (package git's Fetcher.TransferRetries).
func WithTransferRetries(n func() int64) Option {
	return func(m *Metrics) { m.transferRetries = n }
}

// commitStoreCollector exports one reading of the commit store per scrape.
type commitStoreCollector struct{ stats func() CommitStore }

var (
	commitStoreBytes = prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", "git_commit_store_bytes"),
		"Bytes kept of recently fetched commits (their trees and func.yaml files, which every Function on a commit reads from its one transfer), "+
			"within the ConfigMap's commitStoreMaxBytes.", nil, nil)
	commitStoreCommits = prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", "git_commit_store_commits"),
		"Commits kept of those fetched (one per repository, commit and credentials identity).", nil, nil)
	commitStoreEvictions = prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", "git_commit_store_evictions_total"),
		"Commits dropped, least recently used first, to stay within commitStoreMaxBytes: after pushes, the turnover of commits no Function reads any more.", nil, nil)
	commitStoreRefetches = prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", "git_commit_store_refetches_total"),
		"Transfers of a commit the store had dropped, because a Function still read it: a steady rate says commitStoreMaxBytes is too small for the commits in use.", nil, nil)
	commitStoreNotKept = prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", "git_commit_store_not_kept_total"),
		"Commits too large for commitStoreMaxBytes on their own: used, not kept, so that every Function on such a commit transfers it.", nil, nil)
)

func (c commitStoreCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{commitStoreBytes, commitStoreCommits, commitStoreEvictions, commitStoreRefetches, commitStoreNotKept} {
		ch <- d
	}
}

func (c commitStoreCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	ch <- prometheus.MustNewConstMetric(commitStoreBytes, prometheus.GaugeValue, float64(s.Bytes))
	ch <- prometheus.MustNewConstMetric(commitStoreCommits, prometheus.GaugeValue, float64(s.Commits))
	ch <- prometheus.MustNewConstMetric(commitStoreEvictions, prometheus.CounterValue, float64(s.Evictions))
	ch <- prometheus.MustNewConstMetric(commitStoreRefetches, prometheus.CounterValue, float64(s.Refetches))
	ch <- prometheus.MustNewConstMetric(commitStoreNotKept, prometheus.CounterValue, float64(s.NotKept))
}

// Option configures the metrics New returns.
type Option func(*Metrics)

// WithoutFunctionConditions leaves func_operator_function_condition out: 5 to 10
// series per Function, too many for some Prometheus servers at 10,000 Functions.
// func_operator_functions, counts by namespace, condition, status and reason, stays.
func WithoutFunctionConditions() Option { return func(m *Metrics) { m.perFunction = false } }

// New returns the metrics; queue reports the running and waiting rebuilds.
func New(queue func() (running, waiting int), opts ...Option) *Metrics {
	m := &Metrics{
		condition: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", "function_condition"),
			"1 for the status, reason and severity of each condition of each Function (Unknown while reconciling); severity Info conditions never gate Ready; the series go with the Function.",
			[]string{"namespace", "name", "type", "status", "reason", "severity"}, nil),
		functions: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", "functions"),
			"Functions of each namespace by the status and reason of each of their conditions (type): the fleet's view, bounded by namespaces, condition types and the closed set of reasons, not by Functions.",
			[]string{"namespace", "type", "status", "reason"}, nil),
		perFunction: true,
		rebuilds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "rebuilds_total",
			Help: "Rebuilds that ended, by result (succeeded, failed).",
		}, []string{"result"}),
		buildDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "build_duration_seconds",
			Help:    "Duration of rebuilds, from start to the end of the PipelineRun.",
			Buckets: []float64{30, 60, 120, 300, 600, 1200, 1800, 3600},
		}),
		rebases: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "rebases_total",
			Help: "Rebases of buildpacks images onto their new run image that ended, by result (succeeded: pushed and deployed; failed).",
		}, []string{"result"}),
		rebaseDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "rebase_duration_seconds",
			Help:    "Duration of rebases, from start to the rebased image pushed and deployed.",
			Buckets: []float64{0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600},
		}),
		gitDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "git_fetch_duration_seconds",
			Help:    "Duration of git operations: ls-remote (branch heads) and clone.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2.5, 10),
		}, []string{"operation"}),
		sharedLists: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: Namespace, Name: "git_listings_shared_total",
			Help: "Checks that used a listing of their repository another Function with the same credentials made within the check interval, " +
				"instead of listing it (listings made are git_fetch_duration_seconds_count{operation=\"ls-remote\"}).",
		}),
		series:       map[types.NamespacedName][]conditionLabels{},
		outdated:     map[types.NamespacedName]bool{},
		baseOutdated: map[types.NamespacedName]bool{},
		checked:      map[types.NamespacedName]time.Time{},
		clock:        clock.RealClock{},
		queue:        queue,
	}
	// Every result from the start, at 0: a rate over a cluster that never rebased is 0,
	// not absent.
	for _, r := range []string{ResultSucceeded, ResultFailed} {
		m.rebases.WithLabelValues(r)
	}
	for _, o := range opts {
		o(m)
	}
	return m
}

// Collectors returns what to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	cs := []prometheus.Collector{fleetCollector{m}, m.rebuilds, m.buildDuration, m.rebases, m.rebaseDuration, m.gitDuration, m.sharedLists,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "check_age_max_seconds",
			Help: "Time since the least recently checked Function (not suspended) was checked: above checkInterval, the operator falls behind its interval.",
		}, m.oldestCheck),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "middleware_outdated_functions",
			Help: "Functions whose middleware is outdated (a rebuild would bring newer middleware).",
		}, func() float64 {
			m.gauges.Lock()
			defer m.gauges.Unlock()
			return float64(len(m.outdated))
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "base_outdated_functions",
			Help: "Functions whose base (buildpacks run image, s2i builder) moved on: condition BaseUpToDate False, whatever the base policy does about it.",
		}, func() float64 {
			m.gauges.Lock()
			defer m.gauges.Unlock()
			return float64(len(m.baseOutdated))
		}),
	}
	if m.perFunction {
		cs = append(cs, conditionCollector{m})
	}
	if m.commitStore != nil {
		cs = append(cs, commitStoreCollector{m.commitStore})
	}
	if m.cloudEvents != nil {
		cs = append(cs, cloudEventsCollector{m.cloudEvents})
	}
	if m.transferRetries != nil {
		cs = append(cs, prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: Namespace, Name: "git_transfer_retries_total",
			Help: "Git transfers made again at once because go-git had failed an SSH exchange the server completed (it closed first): one more upload-pack each.",
		}, func() float64 { return float64(m.transferRetries()) }))
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
	labels := make([]conditionLabels, 0, len(conds))
	baseOutdated := false
	for _, c := range conds {
		labels = append(labels, conditionLabels{typ: string(c.Type), status: string(c.Status), reason: c.Reason, severity: Severity(c)})
		baseOutdated = baseOutdated || (c.Type == baseUpToDate && c.Status == corev1.ConditionFalse)
	}
	m.gauges.Lock()
	defer m.gauges.Unlock()
	m.series[key] = labels
	if baseOutdated {
		m.baseOutdated[key] = true
	} else {
		delete(m.baseOutdated, key)
	}
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
	m.gauges.Lock()
	defer m.gauges.Unlock()
	delete(m.series, key)
	delete(m.outdated, key)
	delete(m.baseOutdated, key)
	delete(m.checked, key)
}

// Checked records that the Function key was checked now; suspended, it is not
// checked, and not counted (checked false).
func (m *Metrics) Checked(key types.NamespacedName, checked bool) {
	if m == nil {
		return
	}
	m.gauges.Lock()
	defer m.gauges.Unlock()
	if !checked {
		delete(m.checked, key)
		return
	}
	m.checked[key] = m.clock.Now()
}

// oldestCheck is the age of the least recent check, in seconds.
func (m *Metrics) oldestCheck() float64 {
	m.gauges.Lock()
	defer m.gauges.Unlock()
	now, oldest := m.clock.Now(), 0.0
	for _, t := range m.checked {
		if age := now.Sub(t).Seconds(); age > oldest {
			oldest = age
		}
	}
	return oldest
}

// conditionLabels are the labels of one condition's series, besides the Function's.
type conditionLabels struct {
	typ, status, reason, severity string
}

// conditionCollector makes func_operator_function_condition at scrape time.
type conditionCollector struct{ m *Metrics }

func (c conditionCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.m.condition }

func (c conditionCollector) Collect(ch chan<- prometheus.Metric) {
	type fnSeries struct {
		key    types.NamespacedName
		labels []conditionLabels
	}
	// A copy, sent after the lock is released: the channel may wait for a gauge
	// function, which takes the lock.
	c.m.gauges.Lock()
	all := make([]fnSeries, 0, len(c.m.series))
	for key, labels := range c.m.series {
		all = append(all, fnSeries{key, labels})
	}
	c.m.gauges.Unlock()
	for _, f := range all {
		for _, l := range f.labels {
			ch <- prometheus.MustNewConstMetric(c.m.condition, prometheus.GaugeValue, 1,
				f.key.Namespace, f.key.Name, l.typ, l.status, l.reason, l.severity)
		}
	}
}

// fleetCollector makes func_operator_functions at scrape time.
type fleetCollector struct{ m *Metrics }

func (c fleetCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.m.functions }

// fleetKey is one series of func_operator_functions.
type fleetKey struct {
	namespace string
	conditionLabels
}

func (c fleetCollector) Collect(ch chan<- prometheus.Metric) {
	// Counted under the lock, sent after it (see conditionCollector.Collect).
	c.m.gauges.Lock()
	counts := map[fleetKey]int{}
	for key, labels := range c.m.series {
		for _, l := range labels {
			l.severity = "" // not a label of the fleet's counts
			counts[fleetKey{key.Namespace, l}]++
		}
	}
	c.m.gauges.Unlock()
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.m.functions, prometheus.GaugeValue, float64(n), k.namespace, k.typ, k.status, k.reason)
	}
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

// Rebase counts a rebase that ended, and its duration when known (not negative).
func (m *Metrics) Rebase(result string, duration time.Duration) {
	if m == nil {
		return
	}
	m.rebases.WithLabelValues(result).Inc()
	if duration >= 0 {
		m.rebaseDuration.Observe(duration.Seconds())
	}
}

// baseUpToDate is condition BaseUpToDate (v1alpha1's; this package may not import it).
const baseUpToDate = "BaseUpToDate"

// GitFetch records the duration of a git operation.
func (m *Metrics) GitFetch(operation string, d time.Duration) {
	if m == nil {
		return
	}
	m.gitDuration.WithLabelValues(operation).Observe(d.Seconds())
}

// ListingShared counts a check that used a shared listing.
func (m *Metrics) ListingShared() {
	if m == nil {
		return
	}
	m.sharedLists.Inc()
}

// Severity is a condition's Knative severity as a label: Error (Knative writes it as
// ""), Warning or Info.
func Severity(c apis.Condition) string {
	if c.Severity == apis.ConditionSeverityError {
		return "Error"
	}
	return string(c.Severity)
}

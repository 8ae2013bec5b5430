package metrics

import (
	"sort"

	"github.com/prometheus/client_golang/prometheus"
)

// CloudEvents are the counts of the outcomes sent as CloudEvents (package outcomes).
type CloudEvents struct {
	// Sent were acknowledged by their sink; Failed were not (an error answer, no
	// answer within eventTimeout).
	Sent, Failed uint64
	// Dropped were never sent, by reason (queue_full, refused, unresolved, stopped).
	Dropped map[string]uint64
}

// WithCloudEvents exports func_operator_cloudevents_sent_total, _failed_total and
// _dropped_total{reason}, read together at each scrape.
func WithCloudEvents(counts func() CloudEvents) Option {
	return func(m *Metrics) { m.cloudEvents = counts }
}

// droppedLabel is the label of func_operator_cloudevents_dropped_total.
const droppedLabel = "reason"

var (
	cloudEventsSent = prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", "cloudevents_sent_total"),
		"Outcomes (builds started, succeeded, failed; deploys seen) sent as CloudEvents and acknowledged by their sink.", nil, nil)
	cloudEventsFailed = prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", "cloudevents_failed_total"),
		"Outcomes sent whose sink did not acknowledge them: an error answer, or none within eventTimeout. Not retried.", nil, nil)
	cloudEventsDropped = prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", "cloudevents_dropped_total"),
		"Outcomes never sent, by reason: queue_full (eventQueueSize were waiting), refused (the network stance refused the sink's host), "+
			"unresolved (the sink's Broker was not found or has no address), stopped (the operator stopped).", []string{droppedLabel}, nil)
)

// cloudEventsCollector exports one reading of the counts per scrape.
type cloudEventsCollector struct{ counts func() CloudEvents }

func (c cloudEventsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- cloudEventsSent
	ch <- cloudEventsFailed
	ch <- cloudEventsDropped
}

func (c cloudEventsCollector) Collect(ch chan<- prometheus.Metric) {
	n := c.counts()
	ch <- prometheus.MustNewConstMetric(cloudEventsSent, prometheus.CounterValue, float64(n.Sent))
	ch <- prometheus.MustNewConstMetric(cloudEventsFailed, prometheus.CounterValue, float64(n.Failed))
	reasons := make([]string, 0, len(n.Dropped))
	for r := range n.Dropped {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		ch <- prometheus.MustNewConstMetric(cloudEventsDropped, prometheus.CounterValue, float64(n.Dropped[r]), r)
	}
}

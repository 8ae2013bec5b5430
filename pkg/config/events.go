package config

import (
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Keys of the CloudEvents sent for builds and deploys (package outcomes).
const (
	// KeyEventSink is where every namespace's outcomes go, unless the namespace has
	// a key of its own (KeyEventSinkPrefix): an http:// or https:// URL, or
	// broker:<namespace>/<name>, a Knative Broker whose status.address.url is
	// resolved. Empty or absent: none are sent.
	KeyEventSink = "eventSink"
	// KeyEventSinkPrefix prefixes eventSink.<namespace>: where that namespace's
	// outcomes go instead (same values; empty sends that namespace's nowhere).
	KeyEventSinkPrefix = "eventSink."
	// KeyEventQueueSize bounds the outcomes waiting to be sent; one more is dropped,
	// and counted.
	KeyEventQueueSize = "eventQueueSize"
	// KeyEventTimeout bounds each send to a sink.
	KeyEventTimeout = "eventTimeout"
)

// Defaults of the event keys.
const (
	DefaultEventQueueSize = 1000
	MaxEventQueueSize     = 20000
	DefaultEventTimeout   = 5 * time.Second
)

// Events are the settings of the CloudEvents sent for outcomes.
type Events struct {
	// Sink is where outcomes go; the zero EventSink sends none.
	Sink EventSink
	// Sinks are the namespaces' own sinks, which replace Sink for their outcomes.
	Sinks map[string]EventSink
	// QueueSize bounds the outcomes waiting to be sent.
	QueueSize int
	// Timeout bounds each send.
	Timeout time.Duration
}

// SinkFor returns where the outcomes of namespace go: its own sink, else the
// operator-wide one; the zero EventSink when none.
func (e Events) SinkFor(namespace string) EventSink {
	if s, ok := e.Sinks[namespace]; ok {
		return s
	}
	return e.Sink
}

// EventSink is a URL, or a Knative Broker whose address is resolved when sending.
type EventSink struct {
	URL    string
	Broker types.NamespacedName
}

// IsZero reports whether the sink sends nowhere.
func (s EventSink) IsZero() bool { return s.URL == "" && s.Broker.Name == "" }

// String names the sink as written in the ConfigMap.
func (s EventSink) String() string {
	if s.Broker.Name != "" {
		return "broker:" + s.Broker.String()
	}
	return s.URL
}

// Patterns of the values of eventSink keys, which config/390-config-policy.yaml
// repeats: a URL names a host (a lower-case name or an IPv4 address), a port and a
// path, never credentials nor a query (a ConfigMap is no place for secrets).
var (
	sinkURLPattern    = regexp.MustCompile(`^https?://[a-z0-9.-]+(:([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?(/[A-Za-z0-9._~!$&'()*+,;=:@/-]*)?$`)
	sinkBrokerPattern = regexp.MustCompile(`^broker:([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)/([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)$`)
	sinkKeyPattern    = regexp.MustCompile(`^eventSink\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
)

// ParseEventSink reads the value of an eventSink key ("" is the zero EventSink).
func ParseEventSink(v string) (EventSink, error) {
	t := strings.TrimSpace(v)
	if t == "" {
		return EventSink{}, nil
	}
	if m := sinkBrokerPattern.FindStringSubmatch(t); m != nil {
		return EventSink{Broker: types.NamespacedName{Namespace: m[1], Name: m[3]}}, nil
	}
	if sinkURLPattern.MatchString(t) {
		if u, err := url.Parse(t); err == nil && u.Host != "" {
			return EventSink{URL: t}, nil
		}
	}
	return EventSink{}, fmt.Errorf("%q is neither an http:// or https:// URL (a host, a port and a path; no credentials, no query) nor broker:<namespace>/<name>", v)
}

// isEventSinkKey is true for eventSink.<namespace>, the namespace a DNS label.
func isEventSinkKey(k string) bool { return sinkKeyPattern.MatchString(k) }

// parseEvents reads the event keys of cm into c.
func parseEvents(cm *corev1.ConfigMap, c *Config, fail func(k string, err error)) (malformed []string) {
	for k, v := range cm.Data {
		switch {
		case k == KeyEventSink:
			s, err := ParseEventSink(v)
			if err != nil {
				fail(k, fmt.Errorf("key %s: %w", k, err))
				continue
			}
			c.Events.Sink = s
		case strings.HasPrefix(k, KeyEventSinkPrefix) && !isEventSinkKey(k):
			malformed = append(malformed, k)
		case isEventSinkKey(k):
			s, err := ParseEventSink(v)
			if err != nil {
				fail(k, fmt.Errorf("key %s: %w", k, err))
				continue
			}
			if c.Events.Sinks == nil {
				c.Events.Sinks = map[string]EventSink{}
			}
			c.Events.Sinks[strings.TrimPrefix(k, KeyEventSinkPrefix)] = s
		}
	}
	if v, ok := cm.Data[KeyEventQueueSize]; ok {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		switch {
		case err != nil:
			fail(KeyEventQueueSize, fmt.Errorf("key %s: %q is not a whole number", KeyEventQueueSize, v))
		case n < 1 || n > MaxEventQueueSize:
			fail(KeyEventQueueSize, fmt.Errorf("key %s: %d is outside 1 to %d", KeyEventQueueSize, n, MaxEventQueueSize))
		default:
			c.Events.QueueSize = int(n)
		}
	}
	if v, ok := cm.Data[KeyEventTimeout]; ok {
		d, err := time.ParseDuration(v)
		switch {
		case err != nil:
			fail(KeyEventTimeout, fmt.Errorf("key %s: %q is not a duration such as 5m or 90s", KeyEventTimeout, v))
		case d < time.Second:
			fail(KeyEventTimeout, fmt.Errorf("key %s: %s is shorter than the minimum %s", KeyEventTimeout, d, time.Second))
		default:
			c.Events.Timeout = d
		}
	}
	return malformed
}

// keepEventSink keeps, for an invalid eventSink.<namespace> key, its last good sink.
func keepEventSink(k string, c *Config, last Config) bool {
	if !isEventSinkKey(k) {
		return false
	}
	ns := strings.TrimPrefix(k, KeyEventSinkPrefix)
	if s, ok := last.Events.Sinks[ns]; ok {
		if c.Events.Sinks == nil {
			c.Events.Sinks = map[string]EventSink{}
		}
		c.Events.Sinks[ns] = s
	}
	return true
}

// DefaultEvents are the event settings of an absent ConfigMap: no sink.
func DefaultEvents() Events {
	return Events{QueueSize: DefaultEventQueueSize, Timeout: DefaultEventTimeout}
}

func init() {
	keepers[KeyEventSink] = func(c *Config, last Config) { c.Events.Sink = last.Events.Sink }
	keepers[KeyEventQueueSize] = func(c *Config, last Config) { c.Events.QueueSize = last.Events.QueueSize }
	keepers[KeyEventTimeout] = func(c *Config, last Config) { c.Events.Timeout = last.Events.Timeout }
}

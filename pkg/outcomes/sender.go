package outcomes

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/metrics"
	"github.com/fnops/func-operator/pkg/netguard"
	"github.com/fnops/func-operator/pkg/text"
)

// Why an outcome was dropped, unsent: the reason label of
// func_operator_cloudevents_dropped_total.
const (
	// DroppedQueueFull: eventQueueSize outcomes were waiting already.
	DroppedQueueFull = "queue_full"
	// DroppedRefused: the network stance refused the sink's host.
	DroppedRefused = "refused"
	// DroppedUnresolved: the sink's Broker was not found, or has no address.
	DroppedUnresolved = "unresolved"
	// DroppedStopped: the operator stopped with it still waiting.
	DroppedStopped = "stopped"
)

// droppedReasons are every reason, exported from the start at 0.
var droppedReasons = []string{DroppedQueueFull, DroppedRefused, DroppedUnresolved, DroppedStopped}

// maxResponseBytes caps what is read of a sink's answer: an acknowledgement has no
// use for a body.
const maxResponseBytes = 64 << 10

// Options are what a Sender is made of.
type Options struct {
	// Config returns the event settings in force (the ConfigMap's).
	Config func() config.Events
	// Transport carries the sends: the network guard's (netguard.Guard.Transport),
	// so a sink's host is checked like every other.
	Transport http.RoundTripper
	// Brokers reads the Brokers sinks name; nil resolves none.
	Brokers client.Reader
	// Log is where refused, unresolved and failed sends are told.
	Log logr.Logger
	// Now is the clock of the Broker cache; time.Now when nil.
	Now func() time.Time
}

// Sender queues outcomes and sends them, in order, from one worker (Start). A nil
// *Sender sends nothing.
type Sender struct {
	config   func() config.Events
	client   cloudevents.Client
	resolver *resolver
	log      logr.Logger

	mu    sync.Mutex
	queue []queued
	wake  chan struct{}

	sent, failed atomic.Uint64
	dropped      map[string]*atomic.Uint64
}

// queued is an outcome and the sink chosen when it was emitted.
type queued struct {
	outcome Outcome
	sink    config.EventSink
}

// New returns a Sender; Start sends what it queues.
func New(o Options) (*Sender, error) {
	p, err := cehttp.New(cehttp.WithClient(http.Client{Transport: o.Transport}))
	if err != nil {
		return nil, fmt.Errorf("making the CloudEvents HTTP protocol: %w", err)
	}
	c, err := cloudevents.NewClient(p)
	if err != nil {
		return nil, fmt.Errorf("making the CloudEvents client: %w", err)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &Sender{config: o.Config, client: c, resolver: &resolver{reader: o.Brokers, now: o.Now},
		log: o.Log, wake: make(chan struct{}, 1), dropped: map[string]*atomic.Uint64{}}
	for _, r := range droppedReasons {
		s.dropped[r] = &atomic.Uint64{}
	}
	return s, nil
}

// Emit queues o for the sink of its namespace, and returns at once: never a wait
// for a sink, nor for the queue. Without a sink, o is not sent (nor counted); with
// the queue full, o is dropped and counted.
func (s *Sender) Emit(o Outcome) {
	if s == nil {
		return
	}
	c := s.config()
	sink := c.SinkFor(o.Data.Namespace)
	if sink.IsZero() {
		return
	}
	s.mu.Lock()
	full := len(s.queue) >= max(c.QueueSize, 1)
	if !full {
		s.queue = append(s.queue, queued{outcome: o, sink: sink})
	}
	s.mu.Unlock()
	if full {
		s.drop(DroppedQueueFull, o, sink, nil)
		return
	}
	select {
	case s.wake <- struct{}{}:
	default: // the worker is awake already
	}
}

// Start sends what is queued until ctx is done; what is still waiting then is
// dropped (DroppedStopped). A manager Runnable.
func (s *Sender) Start(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			s.mu.Lock()
			left := s.queue
			s.queue = nil
			s.mu.Unlock()
			for _, q := range left {
				s.drop(DroppedStopped, q.outcome, q.sink, nil)
			}
			return nil
		case <-s.wake:
		}
		for {
			q, ok := s.next()
			if !ok {
				break
			}
			if ctx.Err() != nil {
				s.drop(DroppedStopped, q.outcome, q.sink, nil)
				continue
			}
			s.send(ctx, q)
		}
	}
}

// NeedLeaderElection is false: a replica sends what it emitted (only the leader
// reconciles, so only the leader emits).
func (s *Sender) NeedLeaderElection() bool { return false }

func (s *Sender) next() (queued, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) == 0 {
		return queued{}, false
	}
	q := s.queue[0]
	s.queue[0] = queued{}
	s.queue = s.queue[1:]
	if len(s.queue) == 0 {
		s.queue = nil // let the array go
	}
	return q, true
}

// send sends one outcome within eventTimeout.
func (s *Sender) send(ctx context.Context, q queued) {
	timeout := s.config().Timeout
	if timeout <= 0 {
		timeout = config.DefaultEventTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	target, err := s.resolver.target(ctx, q.sink)
	if err != nil {
		s.drop(DroppedUnresolved, q.outcome, q.sink, err)
		return
	}
	e, err := q.outcome.Event()
	if err != nil {
		// Cannot happen with the types above; told, counted as failed, never a panic.
		s.failed.Add(1)
		s.log.Error(err, "an outcome makes no valid CloudEvent", "type", q.outcome.Type, "sink", q.sink.String())
		return
	}
	ctx = netguard.WithReadLimit(cloudevents.ContextWithTarget(ctx, target), maxResponseBytes)
	res := s.client.Send(ctx, e)
	switch {
	case cloudevents.IsACK(res):
		s.sent.Add(1)
	case refused(res):
		s.drop(DroppedRefused, q.outcome, q.sink, res)
	default:
		s.failed.Add(1)
		s.log.Error(scrub(res, target), "sending an outcome failed", "type", q.outcome.Type, "id", e.ID(),
			"namespace", q.outcome.Data.Namespace, "function", q.outcome.Data.Name, "sink", q.sink.String())
	}
}

// drop counts an outcome dropped, and tells why.
func (s *Sender) drop(reason string, o Outcome, sink config.EventSink, err error) {
	s.dropped[reason].Add(1)
	kv := []any{"reason", reason, "type", o.Type, "namespace", o.Data.Namespace, "function", o.Data.Name, "sink", sink.String()}
	if err != nil {
		s.log.Error(err, "an outcome was dropped", kv...)
		return
	}
	s.log.V(1).Info("an outcome was dropped", kv...)
}

// refused is true when the network stance refused the sink's host.
func refused(err error) bool {
	var denied *netguard.DeniedError
	return errors.As(err, &denied) || (err != nil && strings.Contains(err.Error(), netguard.Marker))
}

// maxErrorBytes caps an error told in the log: a sink's answer is text it chose.
const maxErrorBytes = 512

// scrub is err's text, cut, with the target URL as redact writes it.
func scrub(err error, target string) error {
	msg := "no answer"
	if err != nil {
		msg = strings.ReplaceAll(err.Error(), target, redact(target))
	}
	return errors.New(text.Prefix(msg, maxErrorBytes))
}

// Counts returns what was sent, failed and dropped, for package metrics.
func (s *Sender) Counts() metrics.CloudEvents {
	c := metrics.CloudEvents{Sent: s.sent.Load(), Failed: s.failed.Load(), Dropped: map[string]uint64{}}
	for r, n := range s.dropped {
		c.Dropped[r] = n.Load()
	}
	return c
}

// Len is how many outcomes wait to be sent.
func (s *Sender) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

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

// maxMessageBytes is how much of a failure's message an outcome carries: eventQueueSize
// outcomes wait at most, each a few KiB.
const maxMessageBytes = 2 << 10

// maxSenders is how many sinks are sent to at once: each sink has a worker of its
// own, so that one slow or failing sink delays only its own outcomes.
const maxSenders = 8

// Sender queues outcomes and sends them, in order for each sink, from a worker per
// sink with outcomes waiting (at most maxSenders sending at once), once Start runs. A
// nil *Sender sends nothing.
type Sender struct {
	config   func() config.Events
	client   cloudevents.Client
	resolver *resolver
	log      logr.Logger
	slots    chan struct{}

	mu sync.Mutex
	// queues are the outcomes waiting, by sink; total counts them all.
	queues map[string]*sinkQueue
	total  int
	// ctx is Start's, nil before it runs; workers counts the drains running;
	// stopped is set once Start returned.
	ctx     context.Context
	workers sync.WaitGroup
	stopped bool

	sent, failed atomic.Uint64
	dropped      map[string]*atomic.Uint64
}

// sinkQueue is what waits for one sink, and whether its worker runs.
type sinkQueue struct {
	items   []queued
	running bool
}

// queued is an outcome and the sink chosen when it was emitted.
type queued struct {
	outcome Outcome
	sink    config.EventSink
}

// New returns a Sender; Start sends what it queues.
func New(o Options) (*Sender, error) {
	// A sink's redirect is not followed: its host would be one the sink chose.
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	p, err := cehttp.New(cehttp.WithClient(http.Client{Transport: o.Transport, CheckRedirect: noRedirect}))
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
		log: o.Log, slots: make(chan struct{}, maxSenders), queues: map[string]*sinkQueue{}, dropped: map[string]*atomic.Uint64{}}
	for _, r := range droppedReasons {
		s.dropped[r] = &atomic.Uint64{}
	}
	return s, nil
}

// Emit queues o for the sink of its namespace, and returns at once: never a wait
// for a sink, nor for the queue. Without a sink, o is not sent (nor counted). With
// eventQueueSize outcomes waiting, or half of that for o's sink (so that one sink's
// flood, or one that never answers, leaves room for the others'), o is dropped and
// counted.
func (s *Sender) Emit(o Outcome) {
	if s == nil {
		return
	}
	c := s.config()
	sink := c.SinkFor(o.Data.Namespace)
	if sink.IsZero() {
		return
	}
	// What waits is bounded in bytes too: a failure's message is cut.
	o.Data.Message = text.Prefix(o.Data.Message, maxMessageBytes)
	bound, key := max(c.QueueSize, 1), sink.String()
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		s.drop(DroppedStopped, o, sink, nil)
		return
	}
	q := s.queues[key]
	if q == nil {
		q = &sinkQueue{}
		s.queues[key] = q
	}
	full := s.total >= bound || len(q.items) >= max((bound+1)/2, 1)
	if !full {
		q.items = append(q.items, queued{outcome: o, sink: sink})
		s.total++
		s.startDrain(key, q)
	}
	s.mu.Unlock()
	if full {
		s.drop(DroppedQueueFull, o, sink, nil)
	}
}

// startDrain starts the worker of sink key when Start runs and none does; s.mu is held.
func (s *Sender) startDrain(key string, q *sinkQueue) {
	if s.ctx == nil || q.running || len(q.items) == 0 {
		return
	}
	q.running = true
	s.workers.Add(1)
	go s.drain(s.ctx, key)
}

// Start sends what is queued until ctx is done; what is still waiting then is
// dropped (DroppedStopped). A manager Runnable.
func (s *Sender) Start(ctx context.Context) error {
	s.mu.Lock()
	s.ctx = ctx
	for key, q := range s.queues {
		s.startDrain(key, q)
	}
	s.mu.Unlock()
	<-ctx.Done()
	s.workers.Wait()
	s.mu.Lock()
	var left []queued
	for _, q := range s.queues {
		left = append(left, q.items...)
	}
	s.queues, s.total, s.stopped = map[string]*sinkQueue{}, 0, true
	s.mu.Unlock()
	for _, q := range left {
		s.drop(DroppedStopped, q.outcome, q.sink, nil)
	}
	return nil
}

// NeedLeaderElection is false: a replica sends what it emitted (only the leader
// reconciles, so only the leader emits).
func (s *Sender) NeedLeaderElection() bool { return false }

// drain sends sink key's outcomes, in order, until none waits or ctx is done.
func (s *Sender) drain(ctx context.Context, key string) {
	defer s.workers.Done()
	for {
		q, ok := s.next(ctx, key)
		if !ok {
			return
		}
		select {
		case s.slots <- struct{}{}:
		case <-ctx.Done():
			s.drop(DroppedStopped, q.outcome, q.sink, nil)
			continue
		}
		s.send(ctx, q)
		<-s.slots
	}
}

// next takes sink key's next outcome; false, and the worker ends, when none waits
// or ctx is done (what waits is then dropped by Start).
func (s *Sender) next(ctx context.Context, key string) (queued, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[key]
	if q == nil || len(q.items) == 0 || ctx.Err() != nil {
		if q != nil {
			q.running = false
			if len(q.items) == 0 {
				delete(s.queues, key)
			}
		}
		return queued{}, false
	}
	item := q.items[0]
	q.items[0] = queued{}
	q.items = q.items[1:]
	s.total--
	return item, true
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
	return s.total
}

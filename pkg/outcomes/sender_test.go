package outcomes

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	eventingv1 "knative.dev/eventing/pkg/apis/eventing/v1"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/metrics"
	"github.com/fnops/func-operator/pkg/outcomes/outcomestest"
)

// counts is a Counts with the dropped reasons given, the others 0.
func counts(sent, failed uint64, dropped map[string]uint64) metrics.CloudEvents {
	c := metrics.CloudEvents{Sent: sent, Failed: failed, Dropped: map[string]uint64{}}
	for _, r := range droppedReasons {
		c.Dropped[r] = dropped[r]
	}
	return c
}

// waitCounts waits until s's counts are want.
func waitCounts(t *testing.T, s *Sender, want metrics.CloudEvents, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := s.Counts()
		if cmp.Equal(want, got) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("counts (-want +got):\n%s", cmp.Diff(want, got))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSender_SendsInOrder: what is emitted reaches a real CloudEvents receiver, in
// the order emitted, with its attributes and data.
func TestSender_SendsInOrder(t *testing.T) {
	rcv := outcomestest.Start(t)
	s := newSender(t, Options{Config: events(rcv.URL, 10, 5*time.Second), Transport: loopbackGuard(t).Transport(0)}, nil)
	want := make([]string, 0, 5)
	for i := range 5 {
		o := outcome(fmt.Sprintf("b%d", i))
		s.Emit(o)
		want = append(want, o.ID())
	}
	run(t, s)
	got := rcv.Wait(t, 5, 10*time.Second)
	ids := make([]string, 0, len(got))
	for _, e := range got {
		ids = append(ids, e.ID())
	}
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Errorf("ids in order (-want +got):\n%s", diff)
	}
	e := got[0]
	if e.Type() != TypeBuildStarted || e.Source() != "/apis/functions.dev/v1alpha1/namespaces/team-a/functions/fn" ||
		e.Subject() != "b0" || !e.Time().Equal(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)) || e.Extensions()[ExtensionNamespace] != "team-a" {
		t.Errorf("attributes: %s", e)
	}
	var data Data
	if err := e.DataAs(&data); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(outcome("b0").Data, data); diff != "" {
		t.Errorf("data (-want +got):\n%s", diff)
	}
	waitCounts(t, s, counts(5, 0, nil), 5*time.Second)
}

// TestSender_NeverBlocksEmit: with a sink that never answers, Emit returns at once,
// what passes the bound is dropped and counted, and each send fails at the
// timeout, counted.
func TestSender_NeverBlocksEmit(t *testing.T) {
	const queue, timeout = 3, 300 * time.Millisecond
	s := newSender(t, Options{Config: events(hangingSink(t), queue, timeout), Transport: loopbackGuard(t).Transport(0)}, nil)
	run(t, s)
	s.Emit(outcome("first")) // the worker takes it, and waits for the sink
	deadline := time.Now().Add(5 * time.Second)
	for s.Len() != 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	for i := range 100 {
		s.Emit(outcome(fmt.Sprintf("b%d", i)))
	}
	if took := time.Since(start); took > 100*time.Millisecond {
		t.Errorf("100 Emits took %s with a sink that never answers, want no wait", took)
	}
	// The first in flight; 2 queued (a sink holds half the queue at most); 98 dropped.
	if got := s.Counts().Dropped[DroppedQueueFull]; got != 98 {
		t.Errorf("dropped queue_full = %d, want 98", got)
	}
	// Each of the 3 sends ends at the timeout, one after the other.
	start = time.Now()
	waitCounts(t, s, counts(0, 3, map[string]uint64{DroppedQueueFull: 98}), 10*time.Second)
	if took := time.Since(start); took < 2*timeout {
		t.Errorf("the sends failed after %s, want each to wait for the timeout %s", took, timeout)
	}
}

// TestSender_Refused: a sink the network stance refuses is a counted drop, nothing
// sent; the same sink let through receives it (the positive control).
func TestSender_Refused(t *testing.T) {
	for _, tt := range []struct {
		name     string
		loopback bool
		want     metrics.CloudEvents
		received int
	}{
		{name: "loopback let through", loopback: true, want: counts(1, 0, nil), received: 1},
		{name: "as shipped: loopback refused", want: counts(0, 0, map[string]uint64{DroppedRefused: 1})},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rcv := outcomestest.Start(t)
			guard := shippedGuard(t)
			if tt.loopback {
				guard = loopbackGuard(t)
			}
			var logs []string
			s := newSender(t, Options{Config: events(rcv.URL, 10, 5*time.Second), Transport: guard.Transport(0)}, &logs)
			s.Emit(outcome("b1"))
			stop := run(t, s)
			waitCounts(t, s, tt.want, 10*time.Second)
			stop()
			if got := len(rcv.Events()); got != tt.received {
				t.Errorf("received %d events, want %d", got, tt.received)
			}
			if _, denials := guard.Counts(); (denials > 0) == tt.loopback {
				t.Errorf("the guard refused %d dials", denials)
			}
			if !tt.loopback && !strings.Contains(strings.Join(logs, "\n"), `"reason"="refused"`) {
				t.Errorf("the refusal is not logged: %q", logs)
			}
		})
	}
}

// TestSender_Broker: a Broker sink is sent to at its status.address.url; one not
// found, or without an address, is a counted drop.
func TestSender_Broker(t *testing.T) {
	rcv := outcomestest.Start(t)
	scheme := runtime.NewScheme()
	if err := eventingv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	addressed := &eventingv1.Broker{}
	addressed.Namespace, addressed.Name = "platform", "default"
	u, err := apis.ParseURL(rcv.URL)
	if err != nil {
		t.Fatal(err)
	}
	addressed.Status.Address = &duckv1.Addressable{URL: u}
	unaddressed := &eventingv1.Broker{}
	unaddressed.Namespace, unaddressed.Name = "platform", "starting"
	// An address with credentials is not sent to: they would be logged with it.
	withCredentials := &eventingv1.Broker{}
	withCredentials.Namespace, withCredentials.Name = "platform", "credentials"
	withCredentials.Status.Address = &duckv1.Addressable{URL: &apis.URL{Scheme: "http", Host: u.Host, User: url.UserPassword("u", "p")}}
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(addressed, unaddressed, withCredentials).Build()
	for _, tt := range []struct {
		broker   string
		want     metrics.CloudEvents
		received int
	}{
		{broker: "default", want: counts(1, 0, nil), received: 1},
		{broker: "starting", want: counts(0, 0, map[string]uint64{DroppedUnresolved: 1})},
		{broker: "missing", want: counts(0, 0, map[string]uint64{DroppedUnresolved: 1})},
		{broker: "credentials", want: counts(0, 0, map[string]uint64{DroppedUnresolved: 1})},
	} {
		t.Run(tt.broker, func(t *testing.T) {
			before := len(rcv.Events())
			cfg := func() config.Events {
				return config.Events{Sink: config.EventSink{Broker: types.NamespacedName{Namespace: "platform", Name: tt.broker}}, QueueSize: 10, Timeout: 5 * time.Second}
			}
			s := newSender(t, Options{Config: cfg, Transport: loopbackGuard(t).Transport(0), Brokers: reader}, nil)
			s.Emit(outcome("b1"))
			stop := run(t, s)
			waitCounts(t, s, tt.want, 10*time.Second)
			stop()
			if got := len(rcv.Events()) - before; got != tt.received {
				t.Errorf("received %d events, want %d", got, tt.received)
			}
		})
	}
}

// TestSender_Sinks: a namespace's own sink receives its outcomes, and only its; an
// empty one silences the namespace; without a sink nothing is queued nor counted.
func TestSender_Sinks(t *testing.T) {
	all, teamA := outcomestest.Start(t), outcomestest.Start(t)
	cfg := func() config.Events {
		return config.Events{Sink: config.EventSink{URL: all.URL}, QueueSize: 10, Timeout: 5 * time.Second,
			Sinks: map[string]config.EventSink{"team-a": {URL: teamA.URL}, "quiet": {}}}
	}
	s := newSender(t, Options{Config: cfg, Transport: loopbackGuard(t).Transport(0)}, nil)
	for _, ns := range []string{"team-a", "team-b", "quiet"} {
		o := outcome("b-" + ns)
		o.Data.Namespace = ns
		s.Emit(o)
	}
	if got := s.Len(); got != 2 {
		t.Errorf("queued %d, want 2 (none for the silenced namespace)", got)
	}
	run(t, s)
	waitCounts(t, s, counts(2, 0, nil), 10*time.Second)
	if got := all.Events(); len(got) != 1 || got[0].Subject() != "b-team-b" {
		t.Errorf("the operator-wide sink received %v, want team-b's only", got)
	}
	if got := teamA.Events(); len(got) != 1 || got[0].Subject() != "b-team-a" {
		t.Errorf("team-a's sink received %v, want team-a's only", got)
	}

	var none *Sender
	none.Emit(outcome("b")) // a nil Sender sends nothing, and does not panic
	off := newSender(t, Options{Config: func() config.Events { return config.DefaultEvents() }, Transport: loopbackGuard(t).Transport(0)}, nil)
	off.Emit(outcome("b"))
	if off.Len() != 0 || !cmp.Equal(off.Counts(), counts(0, 0, nil)) {
		t.Errorf("without a sink: %d queued, counts %v", off.Len(), off.Counts())
	}
}

// TestSender_StopDrops: what waits when the operator stops is dropped, counted.
func TestSender_StopDrops(t *testing.T) {
	s := newSender(t, Options{Config: events(hangingSink(t), 10, time.Hour), Transport: loopbackGuard(t).Transport(0)}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s.Emit(outcome("b1"))
	s.Emit(outcome("b2"))
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(counts(0, 0, map[string]uint64{DroppedStopped: 2}), s.Counts()); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
}

// TestOutcome_ID: the same outcome has the same id; another build, type or
// Function another.
func TestOutcome_ID(t *testing.T) {
	a := outcome("b1")
	ids := map[string]bool{a.ID(): true}
	b := a
	b.Time = b.Time.Add(time.Hour)
	if b.ID() != a.ID() {
		t.Errorf("the same outcome at another time has another id")
	}
	// The same image deployed again (a rollback) is another deploy: another status write.
	again := Outcome{Type: TypeDeploySeen, Subject: "img@sha256:a", Key: "41", Data: a.Data}
	ids[again.ID()] = true
	for _, o := range []Outcome{outcome("b2"), {Type: TypeBuildFailed, Subject: "b1", Data: a.Data}, {Type: a.Type, Subject: "b1", Data: Data{UID: "other"}},
		{Type: TypeDeploySeen, Subject: "img@sha256:a", Key: "57", Data: a.Data}} {
		if ids[o.ID()] {
			t.Errorf("%v has the id of another outcome", o)
		}
		ids[o.ID()] = true
	}
}

// TestScrub: what a failed send logs names the sink without credentials, query or
// fragment, and is cut.
func TestScrub(t *testing.T) {
	target := "https://user:s3cret@events.example.com/hook?token=t0ken#frag"
	err := scrub(fmt.Errorf(`Post "%s": 500 %s`, target, strings.Repeat("x", 1000)), target)
	msg := err.Error()
	for _, secret := range []string{"s3cret", "t0ken", "frag"} {
		if strings.Contains(msg, secret) {
			t.Errorf("%q shows %q", msg, secret)
		}
	}
	if !strings.Contains(msg, `Post "https://events.example.com/hook": 500`) {
		t.Errorf("%q does not name the sink", msg) // the positive control: the URL is there, redacted
	}
	if len(msg) > maxErrorBytes {
		t.Errorf("%d bytes logged, want at most %d", len(msg), maxErrorBytes)
	}
}

// TestSender_ASlowSinkDelaysOnlyItsOwn: a sink that never answers holds half the queue
// at most, and its worker only: another namespace's sink receives its outcome at
// once, while the slow one's still wait (the control that it is slow).
func TestSender_ASlowSinkDelaysOnlyItsOwn(t *testing.T) {
	fast := outcomestest.Start(t)
	slow := hangingSink(t)
	cfg := func() config.Events {
		return config.Events{QueueSize: 10, Timeout: time.Minute,
			Sinks: map[string]config.EventSink{"team-a": {URL: slow}, "team-b": {URL: fast.URL}}}
	}
	s := newSender(t, Options{Config: cfg, Transport: loopbackGuard(t).Transport(0)}, nil)
	for i := range 10 {
		s.Emit(outcome(fmt.Sprintf("a%d", i))) // team-a's
	}
	if got := s.Counts().Dropped[DroppedQueueFull]; got != 5 {
		t.Errorf("a flood of 10 for one sink of a queue of 10: %d dropped, want 5 (half the queue is left to the others)", got)
	}
	b := outcome("b0")
	b.Data.Namespace = "team-b"
	s.Emit(b)
	run(t, s)
	deadline := time.Now().Add(5 * time.Second)
	for len(fast.Events()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := fast.Events(); len(got) != 1 || got[0].Subject() != "b0" {
		t.Fatalf("team-b's sink received %d events within 5s while team-a's hangs, want its one", len(got))
	}
	if n := s.Len(); n != 4 {
		t.Errorf("%d outcomes wait, want team-a's 4 (one in flight, hanging)", n)
	}
}

// TestSender_RedirectNotFollowed: a sink's redirect is not followed (its target is a
// host the sink chose): the send fails, counted, and the target receives nothing.
func TestSender_RedirectNotFollowed(t *testing.T) {
	target := outcomestest.Start(t)
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirect.Close)
	for _, tt := range []struct {
		name string
		url  string
		want metrics.CloudEvents
		got  int
	}{
		{name: "a redirect", url: redirect.URL, want: counts(0, 1, nil)},
		{name: "the target itself (the control)", url: target.URL, want: counts(1, 0, nil), got: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := len(target.Events())
			s := newSender(t, Options{Config: events(tt.url, 10, 5*time.Second), Transport: loopbackGuard(t).Transport(0)}, nil)
			s.Emit(outcome("b1"))
			stop := run(t, s)
			waitCounts(t, s, tt.want, 10*time.Second)
			stop()
			if n := len(target.Events()) - before; n != tt.got {
				t.Errorf("the target received %d events, want %d", n, tt.got)
			}
		})
	}
}

package outcomes

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	eventingv1 "knative.dev/eventing/pkg/apis/eventing/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/pkg/config"
)

// brokerTTL is how long a Broker's resolved address is used before it is read
// again: a Broker's address rarely changes, and one read per event would be one
// API request per event.
const brokerTTL = time.Minute

// resolver turns a sink into the URL to post to.
type resolver struct {
	// reader reads Brokers (the API server, uncached: the operator watches none);
	// nil resolves none.
	reader client.Reader
	now    func() time.Time

	mu      sync.Mutex
	brokers map[types.NamespacedName]resolved
}

// resolved is a Broker's address, or why it has none, as read at at.
type resolved struct {
	url string
	err error
	at  time.Time
}

// target returns the URL of sink: its own, or its Broker's status.address.url.
func (r *resolver) target(ctx context.Context, sink config.EventSink) (string, error) {
	if sink.URL != "" {
		return sink.URL, nil
	}
	r.mu.Lock()
	c, ok := r.brokers[sink.Broker]
	r.mu.Unlock()
	if ok && r.now().Sub(c.at) < brokerTTL {
		return c.url, c.err // a Broker without an address is not read again per outcome either
	}
	if r.reader == nil {
		return "", fmt.Errorf("the Broker %s: the operator reads no Brokers", sink.Broker)
	}
	u, err := r.read(ctx, sink.Broker)
	if !isTransient(err) {
		r.mu.Lock()
		if r.brokers == nil {
			r.brokers = map[types.NamespacedName]resolved{}
		}
		r.brokers[sink.Broker] = resolved{url: u, err: err, at: r.now()}
		r.mu.Unlock()
	}
	return u, err
}

// errTransient marks a failure to read a Broker that says nothing of it (the API
// server did not answer): it is not kept.
type errTransient struct{ error }

func (e errTransient) Unwrap() error { return e.error }

func isTransient(err error) bool {
	var t errTransient
	return errors.As(err, &t)
}

// read returns the URL of Broker key's status.address.url.
func (r *resolver) read(ctx context.Context, key types.NamespacedName) (string, error) {
	sink := config.EventSink{Broker: key}
	b := &eventingv1.Broker{}
	if err := r.reader.Get(ctx, sink.Broker, b); err != nil {
		if apierrors.IsNotFound(err) {
			return "", fmt.Errorf("the Broker %s was not found", sink.Broker)
		}
		return "", errTransient{fmt.Errorf("reading the Broker %s: %w", sink.Broker, err)}
	}
	a := b.Status.Address
	if a == nil || a.URL == nil || a.URL.Host == "" {
		return "", fmt.Errorf("the Broker %s has no address yet (status.address.url)", sink.Broker)
	}
	u := a.URL.URL()
	if u.User != nil || u.RawQuery != "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("the Broker %s's address is not an http:// or https:// URL without credentials nor query", sink.Broker)
	}
	return u.String(), nil
}

// redact is u without what could be secret (credentials, query, fragment), for logs.
func redact(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "<unparsable URL>"
	}
	p.User, p.RawQuery, p.Fragment = nil, "", ""
	return p.String()
}

package outcomes

import (
	"context"
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

type resolved struct {
	url string
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
		return c.url, nil
	}
	if r.reader == nil {
		return "", fmt.Errorf("the Broker %s: the operator reads no Brokers", sink.Broker)
	}
	b := &eventingv1.Broker{}
	if err := r.reader.Get(ctx, sink.Broker, b); err != nil {
		if apierrors.IsNotFound(err) {
			return "", fmt.Errorf("the Broker %s was not found", sink.Broker)
		}
		return "", fmt.Errorf("reading the Broker %s: %w", sink.Broker, err)
	}
	a := b.Status.Address
	if a == nil || a.URL == nil || a.URL.Host == "" {
		return "", fmt.Errorf("the Broker %s has no address yet (status.address.url)", sink.Broker)
	}
	u := a.URL.URL()
	if u.User != nil || u.RawQuery != "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("the Broker %s's address is not an http:// or https:// URL without credentials nor query", sink.Broker)
	}
	r.mu.Lock()
	if r.brokers == nil {
		r.brokers = map[types.NamespacedName]resolved{}
	}
	r.brokers[sink.Broker] = resolved{url: u.String(), at: r.now()}
	r.mu.Unlock()
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

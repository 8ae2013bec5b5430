package operator

import (
	"crypto/sha256"
	"crypto/tls"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/time/rate"
	"k8s.io/client-go/rest"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// The metrics endpoint's authentication and authorization: a scraper's bearer token
// is checked with a TokenReview, its right to get /metrics with a SubjectAccessReview.
// (Creating either reads nothing and writes nothing: the API server answers whether a
// token is valid, or whether a user may do something.)
//
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// MetricsReaderClusterRole is the ClusterRole config/ ships for what scrapes the
// metrics (get on the non-resource URL /metrics): bind it to Prometheus's
// ServiceAccount.
const MetricsReaderClusterRole = "func-operator-metrics-reader"

// metricsOptions are the options of the manager's metrics server. Secure: HTTPS, each
// scrape authenticated and authorized by the API server (controller-runtime's filter,
// as kubebuilder v4 scaffolds), with the certificate of o.MetricsCertDir (tls.crt,
// tls.key, reloaded when they change) or, without one, a self-signed certificate made
// in memory at start, and with the TokenReviews that scrapes cause bounded
// (boundReviews). Otherwise plain HTTP, for a process on a developer's machine
// (hack/run) or tests on loopback.
func metricsOptions(o Options) metricsserver.Options {
	opts := metricsserver.Options{BindAddress: o.MetricsAddr}
	if !o.MetricsSecure {
		return opts
	}
	opts.SecureServing = true
	opts.FilterProvider = boundReviews(filters.WithAuthenticationAndAuthorization)
	opts.CertDir = o.MetricsCertDir
	// HTTP/1.1 only, as kubebuilder: HTTP/2's stream reset and rapid reset attacks
	// (CVE-2023-44487, CVE-2023-39325) cost a server more than a scrape is worth.
	opts.TLSOpts = []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}
	return opts
}

// The bounds of the TokenReviews scrapes cause. controller-runtime's filter reviews
// every token it has not cached, and caches no error: a token the API server did not
// issue, sent again and again or a new one each time, is a TokenReview each time, sent
// with the operator's own client (and so its QPS) by whoever reaches the port.
const (
	// metricsReviewRate and metricsReviewBurst bound the requests whose credentials
	// did not authenticate lately: far above what Prometheus needs (a token is
	// reviewed once, then known).
	metricsReviewRate  = rate.Limit(1)
	metricsReviewBurst = 10
	// metricsKnownTTL is how long credentials that authenticated go through without
	// the limiter; each request they authenticate renews it.
	metricsKnownTTL = 5 * time.Minute
	// metricsKnownMax bounds the credentials known: each is reviewed at most once a
	// minute (the filter's cache), so this bounds their reviews too.
	metricsKnownMax = 256
)

// boundReviews wraps an authentication filter of the metrics server so that requests
// with credentials (a bearer token: Authorization, or WebSocket's protocol header)
// not seen to authenticate within metricsKnownTTL reach it at most
// metricsReviewRate a second (burst metricsReviewBurst); past it, 429. Requests
// without credentials go through: the filter refuses them without a review.
func boundReviews(provider func(*rest.Config, *http.Client) (metricsserver.Filter, error)) func(*rest.Config, *http.Client) (metricsserver.Filter, error) {
	return func(c *rest.Config, hc *http.Client) (metricsserver.Filter, error) {
		filter, err := provider(c, hc)
		if err != nil {
			return nil, err
		}
		gate := newReviewGate(time.Now)
		return func(log logr.Logger, h http.Handler) (http.Handler, error) {
			inner, err := filter(log, h)
			if err != nil {
				return nil, err
			}
			return gate.wrap(inner), nil
		}, nil
	}
}

// reviewGate lets requests with credentials through to the authentication filter
// within the bounds above.
type reviewGate struct {
	limiter *rate.Limiter
	now     func() time.Time
	// known are the credentials that authenticated, by their SHA-256 (never the
	// credentials themselves), and when they last did: at most metricsKnownMax, the
	// least recently used dropped first.
	known *lru.Cache
}

func newReviewGate(now func() time.Time) *reviewGate {
	return &reviewGate{limiter: rate.NewLimiter(metricsReviewRate, metricsReviewBurst), now: now, known: lru.New(metricsKnownMax)}
}

func (g *reviewGate) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, ok := credentialsKey(r)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		if !g.isKnown(key) && !g.limiter.AllowN(g.now(), 1) {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "Too many requests with credentials not yet reviewed", http.StatusTooManyRequests)
			return
		}
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		g.record(key, authenticated(sw.status))
	})
}

// credentialsKey is the SHA-256 of what the filter's authenticators read a token
// from, if r carries any.
func credentialsKey(r *http.Request) ([sha256.Size]byte, bool) {
	h := sha256.New()
	found := false
	for _, name := range []string{"Authorization", "Sec-Websocket-Protocol"} {
		for _, v := range r.Header.Values(name) {
			found = true
			_, _ = h.Write([]byte(name + ":" + v + "\n"))
		}
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	return key, found
}

// authenticated tells, from the status the filter (or the handler behind it)
// answered, whether the credentials authenticated: the filter answers 401 to a
// request it could not authenticate and 500 when the review failed (also a
// token the API server did not issue). 403 is a user the API server knows.
func authenticated(status int) bool {
	return status != http.StatusUnauthorized && status != http.StatusInternalServerError
}

func (g *reviewGate) isKnown(key [sha256.Size]byte) bool {
	at, ok := g.known.Get(key)
	return ok && g.now().Sub(at.(time.Time)) < metricsKnownTTL
}

// record remembers credentials that authenticated, and forgets those that did not
// (a token revoked since).
func (g *reviewGate) record(key [sha256.Size]byte, ok bool) {
	if !ok {
		g.known.Remove(key)
		return
	}
	g.known.Add(key, g.now())
}

// statusWriter keeps the status of the answer written through it.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

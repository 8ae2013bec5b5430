package operator

import (
	"crypto/sha256"
	"crypto/tls"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/time/rate"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
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
	// metricsReviewRate and metricsReviewBurst bound, per source address, the
	// requests whose token did not authorize lately: far above what Prometheus needs
	// (a token is reviewed once, then known), and a flood from one source leaves
	// Prometheus's own allowance whole.
	metricsReviewRate  = rate.Limit(1)
	metricsReviewBurst = 10
	// metricsReviewTotalRate and metricsReviewTotalBurst bound them from all sources.
	metricsReviewTotalRate  = rate.Limit(5)
	metricsReviewTotalBurst = 20
	// metricsSourcesMax bounds the source addresses whose limiters are kept.
	metricsSourcesMax = 1024
	// metricsKnownTTL is how long a token that was authorized goes through without
	// the limiters; each request it is authorized renews it.
	metricsKnownTTL = 5 * time.Minute
	// metricsKnownMax bounds the tokens known: each is reviewed at most once a
	// minute (the filter's cache), so this bounds their reviews too.
	metricsKnownMax = 256
)

// boundReviews wraps an authentication filter of the metrics server so that requests
// with a token (a bearer token: Authorization, or WebSocket's protocol header) not
// authorized within metricsKnownTTL reach it at most metricsReviewRate a second per
// source address (burst metricsReviewBurst) and metricsReviewTotalRate in all; past
// either, 429. Requests without a token go through: the filter refuses them without
// a review.
func boundReviews(provider func(*rest.Config, *http.Client) (metricsserver.Filter, error)) func(*rest.Config, *http.Client) (metricsserver.Filter, error) {
	return func(c *rest.Config, hc *http.Client) (metricsserver.Filter, error) {
		filter, err := provider(c, hc)
		if err != nil {
			return nil, err
		}
		gate := newReviewGate(clock.RealClock{})
		return func(log logr.Logger, h http.Handler) (http.Handler, error) {
			inner, err := filter(log, h)
			if err != nil {
				return nil, err
			}
			return gate.wrap(inner), nil
		}, nil
	}
}

// reviewGate lets requests with a token through to the authentication filter within
// the bounds above. Its caches are k8s.io/utils/lru's, safe for concurrent use.
type reviewGate struct {
	total *rate.Limiter
	clock clock.PassiveClock
	// sources are the per-source limiters, by remote address (without its port).
	sources *lru.Cache
	// known are the tokens that were authorized, by their SHA-256 (never the tokens
	// themselves), and when they last were: at most metricsKnownMax, the least
	// recently used dropped first.
	known *lru.Cache
}

func newReviewGate(clk clock.PassiveClock) *reviewGate {
	return &reviewGate{total: rate.NewLimiter(metricsReviewTotalRate, metricsReviewTotalBurst), clock: clk,
		sources: lru.New(metricsSourcesMax), known: lru.New(metricsKnownMax)}
}

func (g *reviewGate) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, ok := tokenKey(r)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		if !g.isKnown(key) && !g.allow(r.RemoteAddr) {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "Too many requests with credentials not yet reviewed", http.StatusTooManyRequests)
			return
		}
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		g.record(key, sw.status >= 200 && sw.status < 300)
	})
}

// allow takes a review from the limiter of remote's address, then from the total.
func (g *reviewGate) allow(remote string) bool {
	source := remote
	if host, _, err := net.SplitHostPort(remote); err == nil {
		source = host
	}
	l, ok := g.sources.Get(source)
	if !ok {
		l = rate.NewLimiter(metricsReviewRate, metricsReviewBurst)
		g.sources.Add(source, l)
	}
	now := g.clock.Now()
	return l.(*rate.Limiter).AllowN(now, 1) && g.total.AllowN(now, 1)
}

// websocketTokenPrefix is how a WebSocket client names its bearer token among its
// protocols (k8s.io/apiserver's websocket authenticator).
const websocketTokenPrefix = "base64url.bearer.authorization.k8s.io."

// tokenKey is the SHA-256 of the token the filter's authenticators would review, read
// as they read it (k8s.io/apiserver's bearertoken and websocket authenticators), so
// that one token written several ways (text after it, other protocols beside it) is
// one key; false when r carries none.
func tokenKey(r *http.Request) ([sha256.Size]byte, bool) {
	token := ""
	if parts := strings.SplitN(strings.TrimSpace(r.Header.Get("Authorization")), " ", 3); len(parts) >= 2 && strings.EqualFold(parts[0], "bearer") {
		token = "bearer:" + parts[1]
	} else {
		for _, v := range r.Header.Values("Sec-Websocket-Protocol") {
			for _, p := range strings.Split(v, ",") {
				if t, ok := strings.CutPrefix(strings.TrimSpace(p), websocketTokenPrefix); ok && token == "" {
					token = "websocket:" + t
				}
			}
		}
	}
	if token == "" {
		return [sha256.Size]byte{}, false
	}
	return sha256.Sum256([]byte(token)), true
}

func (g *reviewGate) isKnown(key [sha256.Size]byte) bool {
	at, ok := g.known.Get(key)
	return ok && g.clock.Since(at.(time.Time)) < metricsKnownTTL
}

// record remembers a token that was authorized (2xx: a 403 is a user the API server
// knows but the operator does not let scrape, any number of which an attacker may
// hold), and forgets one that was not (a token revoked since).
func (g *reviewGate) record(key [sha256.Size]byte, ok bool) {
	if !ok {
		g.known.Remove(key)
		return
	}
	g.known.Add(key, g.clock.Now())
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

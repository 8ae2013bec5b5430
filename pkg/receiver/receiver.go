package receiver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/semaphore"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// maxReceivers caps the per-receiver rate limiter's buckets.
const maxReceivers = 10000

// maxLoggedText caps what of a request's own text (event, ref, URL) goes into a log line.
const maxLoggedText = 256

// maxBodiesInFlight caps the bytes of the bodies all requests read at once (or
// MaxBodyBytes, when larger): a body is read into memory whole, before its proof can
// be checked, and a client may send it as slowly as bodyReadTimeout allows. A request
// past the cap is answered 503 at once, without reading its body.
const maxBodiesInFlight = 16 << 20

// maxNamespaceBodies caps the bytes of the bodies the receivers of one namespace read
// at once (or MaxBodyBytes, when larger): a tenant whose clients send slowly to its
// own receivers holds at most this share, and other namespaces' pushes still go in.
const maxNamespaceBodies = maxBodiesInFlight / 4

// Receiver answers git hosts' push webhooks on receiver Secrets: a Secret labelled
// functions.dev/receiver=true with key token is served at /hook/<namespace>/<name>,
// and a verified push there has the Functions of that namespace that build from
// the pushed repository checked at once.
//
// It is an http.Handler, and a controller-runtime Runnable that serves it on
// Options.Addr.
type Receiver struct {
	opts     Options
	secrets  *secretCache
	global   *limiter
	receiver *limiter
	replays  *deliveries
	// bodies holds the bytes of the bodies being read; shares, those of each
	// namespace's receivers, and perReceiver those of each receiver.
	bodies      *semaphore.Weighted
	shares      *shares
	perReceiver *shares
	requests    *prometheus.CounterVec
	// clock dates what the limiters, the replay window and the Secret cache hold.
	clock clock.PassiveClock
	// listening, when set, is told the address Start listens on (tests).
	listening func(net.Addr)
}

// New returns a Receiver. It panics when opts has no Secrets or no Trigger.
func New(opts Options) *Receiver {
	if opts.Secrets == nil || opts.Trigger == nil {
		panic("receiver.New: Options.Secrets and Options.Trigger are required")
	}
	opts = opts.withDefaults()
	r := &Receiver{
		opts:     opts,
		global:   newLimiter(opts.GlobalRate, opts.GlobalBurst, 1),
		receiver: newLimiter(opts.ReceiverRate, opts.ReceiverBurst, maxReceivers),
		replays:  newDeliveries(replayWindow, maxRemembered, maxRememberedPerNamespace),
		bodies:   semaphore.NewWeighted(max(maxBodiesInFlight, opts.MaxBodyBytes)),
		shares:   &shares{max: max(maxNamespaceBodies, opts.MaxBodyBytes), held: map[string]int64{}},
		// One body as large as may be, or many small ones (hosts send a few KiB):
		// filling a namespace's share takes as many receivers.
		perReceiver: &shares{max: opts.MaxBodyBytes, held: map[string]int64{}},
		requests:    newRequestsCounter(),
		clock:       clock.RealClock{},
		secrets:     newSecretCache(opts.Secrets, opts.SecretTTL),
	}
	return r
}

// Path is the URL path of the receiver Secret namespace/name.
func Path(namespace, name string) string {
	return PathPrefix + namespace + "/" + name
}

// Collectors returns the metrics to register: func_operator_webhook_requests_total.
func (r *Receiver) Collectors() []prometheus.Collector {
	return []prometheus.Collector{r.requests}
}

// answer is what a request gets: a status, a short text, and its result for the metrics.
type answer struct {
	status     int
	result     string
	text       string
	retryAfter time.Duration
}

// The answers that do not depend on the request. notFound is the one answer for
// every receiver that is not one: no oracle.
var (
	notFound   = answer{status: http.StatusNotFound, result: ResultNotFound, text: "not found"}
	tooLarge   = answer{status: http.StatusRequestEntityTooLarge, result: ResultTooLarge, text: "request body too large"}
	badMAC     = answer{status: http.StatusUnauthorized, result: ResultBadSignature, text: "signature or token does not match"}
	unreadable = answer{status: http.StatusServiceUnavailable, result: ResultError, text: "the receiver cannot be read now, try again later"}
	replayed   = answer{status: http.StatusConflict, result: ResultReplayed, text: "this delivery was received already"}
	busy       = answer{status: http.StatusServiceUnavailable, result: ResultBusy, text: "too many requests under way, try again later",
		retryAfter: time.Second}
)

func rateLimited(wait time.Duration) answer {
	return answer{status: http.StatusTooManyRequests, result: ResultRateLimited, text: "too many requests", retryAfter: wait}
}

func badRequest(status int, text string) answer {
	return answer{status: status, result: ResultBadRequest, text: text}
}

// ServeHTTP answers a webhook request with a short plain text that never quotes the
// request, and counts it by result.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	a := r.handle(w, req)
	r.requests.WithLabelValues(a.result).Inc()
	h := w.Header()
	if a.retryAfter > 0 {
		h.Set("Retry-After", strconv.FormatInt(int64((a.retryAfter+time.Second-1)/time.Second), 10))
	}
	if a.status == http.StatusMethodNotAllowed {
		h.Set("Allow", http.MethodPost)
	}
	if a.result == ResultBusy || a.result == ResultTooLarge {
		// The body was not read: the connection is not reused for another request.
		h.Set("Connection", "close")
	}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(a.status)
	_, _ = io.WriteString(w, a.text+"\n")
}

// handle decides a request's answer, cheapest checks first: nothing is read from
// the API server past the global rate, and no body past the receiver's rate.
func (r *Receiver) handle(w http.ResponseWriter, req *http.Request) answer {
	ctx := req.Context()
	logger := log.FromContext(ctx)
	if req.Method != http.MethodPost {
		return badRequest(http.StatusMethodNotAllowed, "only POST is accepted")
	}
	key, ok := receiverKey(req.URL.Path)
	if !ok {
		return notFound
	}
	logger = logger.WithValues("receiver", key.String())
	if !isJSON(req.Header.Get("Content-Type")) {
		return badRequest(http.StatusUnsupportedMediaType, "the content type must be application/json")
	}
	if req.ContentLength > r.opts.MaxBodyBytes {
		return tooLarge
	}
	p := detect(req.Header)
	if p == nil {
		return badRequest(http.StatusBadRequest, "not a GitHub, GitLab, Gitea or Forgejo webhook")
	}
	logger = logger.WithValues("provider", p.name)
	if wait := r.global.take("", r.clock.Now()); wait > 0 {
		logger.V(1).Info("webhook refused: over the global rate")
		return rateLimited(wait)
	}
	s, fresh, err := r.secrets.lookup(ctx, key, false, r.clock.Now())
	switch {
	case err != nil:
		logger.Error(err, "webhook refused: the receiver Secret cannot be read")
		return unreadable
	case s.absent != "":
		logger.V(1).Info("webhook refused: no such receiver", "reason", s.absent)
		return notFound
	}
	// Verified or not, every request of a receiver counts: guessing its token is as
	// slow as the receiver's rate.
	if wait := r.receiver.take(key.String(), r.clock.Now()); wait > 0 {
		logger.V(1).Info("webhook refused: over the receiver's rate")
		return rateLimited(wait)
	}
	// The bytes the body may take are held until the answer: a body past the cap is
	// not read at all.
	size := r.opts.MaxBodyBytes
	if req.ContentLength >= 0 {
		size = req.ContentLength // no more than MaxBodyBytes: refused above
	}
	if !r.perReceiver.take(key.String(), size) {
		logger.V(1).Info("webhook refused: a body as large as may be is being read for the receiver")
		return busy
	}
	defer r.perReceiver.give(key.String(), size)
	if !r.shares.take(key.Namespace, size) {
		logger.V(1).Info("webhook refused: too many bodies being read for the namespace")
		return busy
	}
	defer r.shares.give(key.Namespace, size)
	if !r.bodies.TryAcquire(size) {
		logger.V(1).Info("webhook refused: too many bodies being read")
		return busy
	}
	defer r.bodies.Release(size)
	body, err := readBody(w, req, r.opts.MaxBodyBytes)
	var tl *http.MaxBytesError
	switch {
	case errors.As(err, &tl):
		return tooLarge
	case err != nil:
		logger.V(1).Info("webhook refused: the body cannot be read", "error", err.Error())
		return badRequest(http.StatusBadRequest, "the body cannot be read")
	}
	token, a, ok := r.verify(ctx, logger, p, req.Header, body, key, s, fresh)
	if !ok {
		return a
	}
	// Only verified deliveries are remembered: nobody without the token can fill the
	// memory, or have a delivery refused before the host sends it.
	if !r.replays.claim(key.Namespace, deliveryKeys(key, p, req.Header, body), r.clock.Now()) {
		logger.Info("webhook refused: a delivery received already")
		return replayed
	}
	return r.dispatch(ctx, logger, p, req.Header, body, key, token)
}

// verify checks the request's proof of the receiver's token, and returns the token
// it verified. A token read earlier that fails is read again once, so that a
// rotated token takes effect at once.
func (r *Receiver) verify(ctx context.Context, logger logr.Logger, p *provider, h http.Header, body []byte,
	key types.NamespacedName, s receiverSecret, fresh bool) ([]byte, answer, bool) {
	if p.verify(h, body, s.token) {
		return s.token, answer{}, true
	}
	if !fresh {
		var err error
		s, _, err = r.secrets.lookup(ctx, key, true, r.clock.Now())
		switch {
		case err != nil:
			logger.Error(err, "webhook refused: the receiver Secret cannot be read")
			return nil, unreadable, false
		case s.absent != "":
			logger.V(1).Info("webhook refused: no such receiver", "reason", s.absent)
			return nil, notFound, false
		case p.verify(h, body, s.token):
			return s.token, answer{}, true
		}
	}
	logger.Info("webhook refused: bad signature or token")
	return nil, badMAC, false
}

// dispatch acts on a verified request: a push triggers, other events are ignored.
// What it logs of the request never holds token, even where the sender put it.
func (r *Receiver) dispatch(ctx context.Context, logger logr.Logger, p *provider, h http.Header, body []byte,
	key types.NamespacedName, token []byte) answer {
	event := h.Get(p.eventHeader)
	logger = logger.WithValues("event", logText(event, token))
	switch {
	case event == "":
		return badRequest(http.StatusBadRequest, "no "+p.eventHeader+" header")
	case p.ping != "" && event == p.ping:
		logger.Info("webhook ping")
		return answer{status: http.StatusOK, result: ResultIgnoredEvent, text: "pong"}
	case !p.triggers(event):
		logger.V(1).Info("webhook event ignored")
		return answer{status: http.StatusOK, result: ResultIgnoredEvent, text: "event ignored: only pushes trigger"}
	}
	push, err := parsePush(body)
	if err != nil {
		logger.Info("webhook refused: the push payload cannot be read", "error", err.Error())
		return badRequest(http.StatusBadRequest, "the push payload cannot be read")
	}
	n := r.opts.Trigger.RepositoryPushed(ctx, key.Namespace, push.urls)
	logger.Info("push received", "repository", logURL(push.urls[0], token), "ref", logText(push.ref, token), "functions", n)
	if n == 0 {
		return answer{status: http.StatusOK, result: ResultNoMatch, text: "no Function of the namespace builds from this repository"}
	}
	return answer{status: http.StatusAccepted, result: ResultTriggered, text: fmt.Sprintf("%d Function(s) to check", n)}
}

// receiverKey reads namespace and name from a receiver's path; only names
// Kubernetes allows pass.
func receiverKey(path string) (types.NamespacedName, bool) {
	rest, ok := strings.CutPrefix(path, PathPrefix)
	if !ok {
		return types.NamespacedName{}, false
	}
	ns, name, ok := strings.Cut(rest, "/")
	if !ok || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: ns, Name: name}, true
}

// isJSON is true for application/json, with or without parameters.
func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}

// readBody reads the body, up to max bytes (a *http.MaxBytesError past them), within
// bodyReadTimeout: into a buffer of its Content-Length when it has one, which the
// caller checked is at most max.
func readBody(w http.ResponseWriter, req *http.Request, max int64) ([]byte, error) {
	// Not supported by a test's recorder: the server's ReadTimeout still bounds it.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(bodyReadTimeout))
	r := http.MaxBytesReader(w, req.Body, max)
	if n := req.ContentLength; n >= 0 && n <= max {
		body := make([]byte, n)
		if _, err := io.ReadFull(r, body); err != nil {
			return nil, fmt.Errorf("reading the request body: %w", err)
		}
		return body, nil
	}
	body, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading the request body: %w", err)
	}
	return body, nil
}

// logText cuts s, text a request chose, for a log line, without token.
func logText(s string, token []byte) string {
	if len(token) > 0 {
		s = strings.ReplaceAll(s, string(token), "[redacted]")
	}
	if len(s) > maxLoggedText {
		return strings.ToValidUTF8(s[:maxLoggedText], "") + "…"
	}
	return s
}

// logURL is u without user, password and token, cut for a log line.
func logURL(u string, token []byte) string {
	if parsed, err := url.Parse(u); err == nil && parsed.User != nil {
		parsed.User = nil
		u = parsed.String()
	} else if err != nil && strings.Contains(u, "://") {
		u = "(unparsable URL)" // scp-like user@host:path is not a URL, and has no password
	}
	return logText(u, token)
}

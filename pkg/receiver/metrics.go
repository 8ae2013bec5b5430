package receiver

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fnops/func-operator/pkg/metrics"
)

// Results of a request, the label of func_operator_webhook_requests_total.
const (
	// ResultTriggered: a verified push, handed to the Trigger, which enqueued at least one Function.
	ResultTriggered = "triggered"
	// ResultNoMatch: a verified push for a repository no Function of the namespace builds from.
	ResultNoMatch = "no_match"
	// ResultIgnoredEvent: a verified event that is not a push (GitHub's ping too).
	ResultIgnoredEvent = "ignored_event"
	// ResultBadSignature: a missing or wrong signature or token.
	ResultBadSignature = "bad_signature"
	// ResultNotFound: no such receiver, or one the operator may not read.
	ResultNotFound = "not_found"
	// ResultRateLimited: over the receiver's or the global rate.
	ResultRateLimited = "rate_limited"
	// ResultBadRequest: wrong method or content type, unknown git host, unreadable payload.
	ResultBadRequest = "bad_request"
	// ResultTooLarge: a body over MaxBodyBytes.
	ResultTooLarge = "too_large"
	// ResultError: the receiver Secret could not be read.
	ResultError = "error"
	// ResultReplayed: a verified delivery received already (its id, or its signed body).
	ResultReplayed = "replayed"
	// ResultBusy: too many bodies being read at once; this one was not read.
	ResultBusy = "busy"
)

var results = []string{ResultTriggered, ResultNoMatch, ResultIgnoredEvent, ResultBadSignature, ResultNotFound,
	ResultRateLimited, ResultBadRequest, ResultTooLarge, ResultError, ResultReplayed, ResultBusy}

// newRequestsCounter returns func_operator_webhook_requests_total with every result at 0.
// It has no namespace label: receivers are as many as tenants' Secrets.
func newRequestsCounter() *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Name: "webhook_requests_total",
		Help: "Webhook requests, by result (" + strings.Join(results, ", ") + ").",
	}, []string{"result"})
	for _, r := range results {
		c.WithLabelValues(r)
	}
	return c
}

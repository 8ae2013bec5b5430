package receiver

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Defaults of Options.
const (
	// DefaultAddr is where receivers listen: the port of Flux's receivers.
	DefaultAddr = ":9292"
	// DefaultMaxBodyBytes caps a payload. A push payload is a few KiB, but GitHub's
	// lists every commit pushed with its changed files (up to 25 MB): a push of a
	// large history is refused (413) and left to the periodic check.
	DefaultMaxBodyBytes = 1 << 20
	// DefaultReceiverRate and DefaultReceiverBurst limit the requests of one receiver,
	// verified or not.
	DefaultReceiverRate  = 1.0
	DefaultReceiverBurst = 10
	// DefaultGlobalRate and DefaultGlobalBurst limit the requests that reach a
	// Secret lookup, over all receivers, found or not.
	DefaultGlobalRate  = 20.0
	DefaultGlobalBurst = 100
	// DefaultSecretTTL is how long a receiver Secret read is believed: a rotated
	// token takes effect within it (at once when the old one fails to verify).
	DefaultSecretTTL = 5 * time.Second
	// DefaultShutdownTimeout is how long Start waits for requests under way when
	// its context ends.
	DefaultShutdownTimeout = 10 * time.Second
)

// Receiver Secrets.
const (
	// ReceiverLabel, with value "true", makes a Secret a receiver.
	ReceiverLabel = "functions.dev/receiver"
	// TokenKey is the key of a receiver Secret that holds the shared secret.
	TokenKey = "token"
	// PathPrefix starts every receiver's path: PathPrefix + namespace + "/" + name.
	PathPrefix = "/hook/"
)

// Trigger has the Functions of a namespace that build from a pushed repository checked.
type Trigger interface {
	// RepositoryPushed enqueues every Function of namespace whose repository is one of
	// urls (the forms the git host gave; compare with repourl.MatchURL) and returns how many
	// it enqueued. It must not block for long: the git host waits for the answer.
	RepositoryPushed(ctx context.Context, namespace string, urls []string) int
}

// TriggerFunc is a function that is a Trigger.
type TriggerFunc func(ctx context.Context, namespace string, urls []string) int

// RepositoryPushed calls f.
func (f TriggerFunc) RepositoryPushed(ctx context.Context, namespace string, urls []string) int {
	return f(ctx, namespace, urls)
}

// SecretGetter reads a Secret from the API server. It returns nil and no error when
// the Secret does not exist; a Forbidden error (the operator may not read Secrets
// in namespace) is answered as not found too.
type SecretGetter func(ctx context.Context, namespace, name string) (*corev1.Secret, error)

// Options configure a Receiver. Secrets and Trigger are required; zero values of
// the others take the defaults above.
type Options struct {
	// Addr is the address Start listens on.
	Addr string
	// Secrets reads receiver Secrets.
	Secrets SecretGetter
	// Trigger is told of verified pushes.
	Trigger Trigger
	// MaxBodyBytes caps a request's body; a larger one is refused with 413.
	MaxBodyBytes int64
	// ReceiverRate (requests a second) and ReceiverBurst limit each receiver.
	ReceiverRate  float64
	ReceiverBurst int
	// GlobalRate (requests a second) and GlobalBurst limit all receivers together.
	GlobalRate  float64
	GlobalBurst int
	// SecretTTL is how long a Secret read is believed.
	SecretTTL time.Duration
	// ShutdownTimeout bounds the graceful shutdown of Start.
	ShutdownTimeout time.Duration
}

// withDefaults fills the zero (or negative) values of o.
func (o Options) withDefaults() Options {
	if o.Addr == "" {
		o.Addr = DefaultAddr
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.ReceiverRate <= 0 {
		o.ReceiverRate = DefaultReceiverRate
	}
	if o.ReceiverBurst <= 0 {
		o.ReceiverBurst = DefaultReceiverBurst
	}
	if o.GlobalRate <= 0 {
		o.GlobalRate = DefaultGlobalRate
	}
	if o.GlobalBurst <= 0 {
		o.GlobalBurst = DefaultGlobalBurst
	}
	if o.SecretTTL <= 0 {
		o.SecretTTL = DefaultSecretTTL
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = DefaultShutdownTimeout
	}
	return o
}

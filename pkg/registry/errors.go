package registry

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/fnops/func-operator/pkg/netguard"
)

// UnreachableError means the registry could not be talked to: DNS, connection
// or TLS failures, timeouts, cancellation and 5xx/408/429 answers. It is
// worth retrying later.
type UnreachableError struct {
	Ref      string // the reference as given to Inspect
	Registry string // host[:port]
	// StatusCode is the HTTP status when the registry answered (5xx, 408, 429), else 0.
	StatusCode int
	// TimedOut is true when the registry did not answer within the time allowed.
	TimedOut bool
	Err      error // the underlying error, for errors.Is/As; its text is not used
	detail   string
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("registry %s is unreachable while inspecting %s: %s", e.Registry, e.Ref, e.detail)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// AuthError means the registry refused the credentials (HTTP 401/403), or
// that no credentials could be resolved. The text never includes credentials.
type AuthError struct {
	Ref        string
	Registry   string
	StatusCode int   // 401 or 403; 0 when resolving credentials failed
	Err        error // the underlying error, for errors.Is/As; its text is not used
	detail     string
}

func (e *AuthError) Error() string {
	if e.StatusCode == 0 {
		return fmt.Sprintf("cannot get credentials for registry %s to inspect %s: %s; registry.authSecretRef may be missing or wrong",
			e.Registry, e.Ref, e.detail)
	}
	return fmt.Sprintf("registry %s denied access to %s (HTTP %d %s): %s; registry.authSecretRef may be missing or wrong",
		e.Registry, e.Ref, e.StatusCode, http.StatusText(e.StatusCode), e.detail)
}

func (e *AuthError) Unwrap() error { return e.Err }

// InspectReason is the kind of an InspectError: what this package and its callers
// branch on. It is neither a condition reason nor text users see (the message is the
// error's text, and the reconciler maps a kind to a condition reason: NotFound to
// ImageNotFound, TooLarge to ImageTooLarge, ...), so its values may change without
// changing what users see.
type InspectReason string

const (
	// ReasonInvalidReference: the image reference cannot be parsed.
	ReasonInvalidReference InspectReason = "InvalidReference"
	// ReasonNotFound: the repository, tag or digest does not exist (HTTP 404).
	ReasonNotFound InspectReason = "NotFound"
	// ReasonBadManifest: a manifest, index or config is malformed or unsupported.
	ReasonBadManifest InspectReason = "BadManifest"
	// ReasonLayerRead: a layer could not be read (bad compression, bad tar).
	ReasonLayerRead InspectReason = "LayerReadFailed"
	// ReasonDigestMismatch: the registry served a layer whose bytes are not those
	// of the digest (or the size) the manifest names: a corrupt or a forged layer.
	ReasonDigestMismatch InspectReason = "DigestMismatch"
	// ReasonRequestFailed: any other failure (unexpected HTTP status, bad options).
	ReasonRequestFailed InspectReason = "RequestFailed"
	// ReasonTooLarge: reading the image would pass the operator's limits.
	ReasonTooLarge InspectReason = "TooLarge"
	// ReasonHostNotAllowed: the operator's network policy refuses the registry.
	ReasonHostNotAllowed InspectReason = "HostNotAllowed"
)

// InspectError means the image could not be inspected for a reason other
// than reachability or authorization; Reason says which.
type InspectError struct {
	Ref        string
	Reason     InspectReason
	StatusCode int   // HTTP status when the registry answered with one, else 0
	Err        error // the underlying error, for errors.Is/As; its text is not used
	detail     string
}

func (e *InspectError) Error() string {
	return fmt.Sprintf("cannot inspect image %s: %s", e.Ref, e.detail)
}

func (e *InspectError) Unwrap() error { return e.Err }

// errContext builds the typed errors of one Inspect call, with the
// credentials of that call redacted from every message.
type errContext struct {
	ref      string
	registry string
	secrets  []string
}

func newErrContext(ref, registry string, cfg *authn.AuthConfig) *errContext {
	e := &errContext{ref: ref, registry: registry}
	if cfg != nil {
		for _, s := range []string{cfg.Password, cfg.Auth, cfg.IdentityToken, cfg.RegistryToken} {
			e.addSecret(s)
		}
		if cfg.Username != "" || cfg.Password != "" {
			up := cfg.Username + ":" + cfg.Password
			e.addSecret(base64.StdEncoding.EncodeToString([]byte(up)))
			e.addSecret(base64.RawStdEncoding.EncodeToString([]byte(up)))
			e.addSecret(url.UserPassword(cfg.Username, cfg.Password).String())
		}
	}
	return e
}

func (e *errContext) addSecret(s string) {
	// Very short strings would mangle messages without protecting anything
	// meaningful; they are not expected as secrets.
	if len(s) >= 4 {
		e.secrets = append(e.secrets, s)
	}
	if es := url.QueryEscape(s); es != s && len(es) >= 4 {
		e.secrets = append(e.secrets, es)
	}
}

func (e *errContext) redact(s string) string {
	for _, sec := range e.secrets {
		s = strings.ReplaceAll(s, sec, "[REDACTED]")
	}
	return s
}

func (e *errContext) invalid(reason InspectReason, err error, format string, args ...any) *InspectError {
	return &InspectError{Ref: e.ref, Reason: reason, Err: err, detail: e.redact(fmt.Sprintf(format, args...))}
}

// classify turns an error of go-containerregistry (or of the network) into
// one of the typed errors. what names the object being read ("manifest of
// ...", "layer sha256:... of ..."); fallback is the InspectReason used for
// errors that are neither HTTP statuses nor network failures.
func (e *errContext) classify(err error, fallback InspectReason, what string) error {
	if err == nil {
		return nil
	}
	var ue *UnreachableError
	var ae *AuthError
	var ie *InspectError
	if errors.As(err, &ue) || errors.As(err, &ae) || errors.As(err, &ie) {
		return err // already classified
	}
	msg := e.redact(err.Error())
	if netguard.IsDenied(err) {
		return &InspectError{Ref: e.ref, Reason: ReasonHostNotAllowed, Err: err,
			detail: e.redact(fmt.Sprintf("reading %s: %s", what, netguard.DeniedText(err)))}
	}
	var tl *TooLargeError
	var dm *DigestMismatchError
	switch {
	case errors.As(err, &dm):
		return &InspectError{Ref: e.ref, Reason: ReasonDigestMismatch, Err: err, detail: e.redact(fmt.Sprintf("reading %s: %s", what, dm))}
	case errors.As(err, &tl):
		return &InspectError{Ref: e.ref, Reason: ReasonTooLarge, Err: err, detail: e.redact(fmt.Sprintf("reading %s: %s", what, tl.What))}
	case netguard.IsTooLarge(err):
		return &InspectError{Ref: e.ref, Reason: ReasonTooLarge, Err: err,
			detail: fmt.Sprintf("reading %s: the registry sent more than the operator reads (ConfigMap keys inspectMaxMemory for manifests and configs, inspectMaxBytes for layers)", what)}
	}
	msg = netguard.ServerText(msg)
	// A registry that cannot be talked to securely is unreachable, whatever else
	// its client tried (go-containerregistry falls back to plain HTTP for local
	// registries, and reports both).
	if why, ok := netguard.UntrustedCertificate(err); ok {
		return &UnreachableError{Ref: e.ref, Registry: e.registry, Err: err,
			detail: e.redact(fmt.Sprintf("reading %s: %s (when a private CA signed it, put the CA's PEM certificates under key %s of the Secret named by spec.registry.authSecretRef): %s",
				what, why, KeyCACert, msg))}
	}
	var te *transport.Error
	if errors.As(err, &te) {
		switch sc := te.StatusCode; {
		case sc == http.StatusUnauthorized || sc == http.StatusForbidden:
			return &AuthError{Ref: e.ref, Registry: e.registry, StatusCode: sc, Err: err,
				detail: e.redact(fmt.Sprintf("reading %s: %s", what, msg))}
		case sc == http.StatusNotFound:
			return &InspectError{Ref: e.ref, Reason: ReasonNotFound, StatusCode: sc, Err: err,
				detail: e.redact(fmt.Sprintf("%s not found in registry %s: %s", what, e.registry, msg))}
		case sc == http.StatusRequestTimeout || sc == http.StatusTooManyRequests || sc >= 500:
			return &UnreachableError{Ref: e.ref, Registry: e.registry, StatusCode: sc, Err: err,
				detail: e.redact(fmt.Sprintf("reading %s: %s", what, msg))}
		default:
			return &InspectError{Ref: e.ref, Reason: ReasonRequestFailed, StatusCode: sc, Err: err,
				detail: e.redact(fmt.Sprintf("reading %s: %s", what, msg))}
		}
	}
	if isNetworkError(err) {
		timedOut := errors.Is(err, context.DeadlineExceeded)
		if timedOut {
			msg = "no answer within the time allowed (ConfigMap key registryTimeout): " + msg
		}
		return &UnreachableError{Ref: e.ref, Registry: e.registry, Err: err, TimedOut: timedOut,
			detail: e.redact(fmt.Sprintf("reading %s: %s", what, msg))}
	}
	return &InspectError{Ref: e.ref, Reason: fallback, Err: err,
		detail: e.redact(fmt.Sprintf("reading %s: %s", what, msg))}
}

// isNetworkError reports failures to talk to the registry at all: anything
// the HTTP client reports (*url.Error: dial, DNS, TLS, connection reset),
// net errors, and deadlines or cancellation.
func isNetworkError(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return true
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne)
}

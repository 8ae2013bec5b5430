package rebase

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

// Reason is the kind of an Error: what callers branch on.
type Reason string

const (
	// RunImageNotFound: the run image to rebase onto cannot be read (HTTP 404, or
	// 401/403 to these credentials), or holds no image for the app's platform.
	// Nothing is rebased onto an empty image.
	RunImageNotFound Reason = "RunImageNotFound"
	// AppImageNotFound: the app image cannot be read (HTTP 404, 401/403), or its
	// index holds no image for the platform asked.
	AppImageNotFound Reason = "AppImageNotFound"
	// PushRefused: the target registry refused the write (401, 403, 405, any 4xx).
	PushRefused Reason = "PushRefused"
	// MetadataInvalid: the app's io.buildpacks.lifecycle.metadata label is missing or
	// unparsable, its runImage.topLayer is not a layer of the app (a label that lies),
	// or its CNB_PLATFORM_API is no version.
	MetadataInvalid Reason = "MetadataInvalid"
	// NotRebasable: lifecycle refused the rebase: io.buildpacks.rebasable=false, a
	// target (os, arch, variant, distro) or stack mismatch, missing mixins, or a run
	// image name the metadata does not list.
	NotRebasable Reason = "NotRebasable"
	// Unreachable: a registry could not be talked to (network, TLS, timeout,
	// cancellation, 5xx/408/429, the operator's network policy); worth retrying.
	Unreachable Reason = "Unreachable"
	// InvalidRequest: a reference of the Request is malformed or not by digest.
	InvalidRequest Reason = "InvalidRequest"
	// Failed: anything else.
	Failed Reason = "RebaseFailed"
)

// Error is why a rebase failed. Its text names images, HTTP statuses and the
// registry's error codes (MANIFEST_UNKNOWN, DENIED, ...), never a registry's
// error body nor a credential.
type Error struct {
	Reason Reason
	// Image is the reference the failure is about: the app, the run image or the
	// target repository.
	Image string
	// StatusCode is the HTTP status a registry answered with, else 0.
	StatusCode int
	// Codes are the error codes of the registry's answer.
	Codes []string
	// Err is the underlying error, for errors.Is/As; its text is not used.
	Err error
	msg string
}

func (e *Error) Error() string { return e.msg }

func (e *Error) Unwrap() error { return e.Err }

// errContext builds the errors of one rebase, with its credentials redacted.
type errContext struct {
	secrets []string
	// target is the host[:port] of the target registry.
	target string
}

// addCredentials registers the values of cfg as secrets never to quote.
func (c *errContext) addCredentials(cfg *authn.AuthConfig) {
	for _, s := range []string{cfg.Password, cfg.Auth, cfg.IdentityToken, cfg.RegistryToken} {
		c.addSecret(s)
	}
	if cfg.Username != "" || cfg.Password != "" {
		up := cfg.Username + ":" + cfg.Password
		c.addSecret(base64.StdEncoding.EncodeToString([]byte(up)))
		c.addSecret(base64.RawStdEncoding.EncodeToString([]byte(up)))
		c.addSecret(url.UserPassword(cfg.Username, cfg.Password).String())
	}
}

func (c *errContext) addSecret(s string) {
	// Very short strings would mangle messages without protecting anything.
	if len(s) >= 4 {
		c.secrets = append(c.secrets, s)
	}
	if es := url.QueryEscape(s); es != s && len(es) >= 4 {
		c.secrets = append(c.secrets, es)
	}
}

func (c *errContext) redact(s string) string {
	for _, sec := range c.secrets {
		s = strings.ReplaceAll(s, sec, "[REDACTED]")
	}
	return s
}

// newError returns an Error of reason about image, its message made of format and
// args, redacted.
func (c *errContext) newError(reason Reason, image string, err error, format string, args ...any) *Error {
	return &Error{Reason: reason, Image: image, Err: err, msg: c.redact(fmt.Sprintf(format, args...))}
}

// op is what a failed registry call was doing.
type op int

const (
	opRead  op = iota // reading the app or the run image
	opWrite           // pushing to the target
)

// classify turns an error of go-containerregistry (or of the network) met while
// doing o on image into an Error; a read answered 404, 401 or 403 is notFound,
// anything unrecognised is fallback. what names the object ("manifest of the run
// image ...").
func (c *errContext) classify(err error, o op, image string, notFound Reason, what string) *Error {
	const fallback = Failed
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if netguard.IsDenied(err) {
		return c.newError(Unreachable, image, err, "%s: %s", what, netguard.DeniedText(err))
	}
	if netguard.IsTooLarge(err) {
		return c.newError(Failed, image, err, "%s: the registry sent more than the operator reads", what)
	}
	if why, ok := netguard.UntrustedCertificate(err); ok {
		return c.newError(Unreachable, image, err, "%s: %s (when a private CA signed it, give its PEM certificates as the ca.crt of the registry Secret)", what, why)
	}
	var te *transport.Error
	if errors.As(err, &te) {
		codes := make([]string, 0, len(te.Errors))
		for _, d := range te.Errors {
			codes = append(codes, string(d.Code))
		}
		status := fmt.Sprintf("HTTP %d %s", te.StatusCode, http.StatusText(te.StatusCode))
		if len(codes) > 0 {
			status += " (" + strings.Join(codes, ", ") + ")"
		}
		reason := fallback
		switch sc := te.StatusCode; {
		case sc == http.StatusRequestTimeout || sc == http.StatusTooManyRequests || sc >= 500:
			reason = Unreachable
		case o == opRead && (sc == http.StatusNotFound || sc == http.StatusUnauthorized || sc == http.StatusForbidden):
			reason = notFound
		case o == opWrite && sc >= 400 && !c.sourceRead(te.Request):
			reason = PushRefused
		}
		e := c.newError(reason, image, err, "%s: the registry answered %s", what, status)
		e.StatusCode, e.Codes = te.StatusCode, codes
		return e
	}
	if isNetworkError(err) {
		if errors.Is(err, context.DeadlineExceeded) {
			return c.newError(Unreachable, image, err, "%s: no answer within the time allowed", what)
		}
		if errors.Is(err, context.Canceled) {
			return c.newError(Unreachable, image, err, "%s: cancelled", what)
		}
		return c.newError(Unreachable, image, err, "%s: %s", what, netguard.ServerText(err.Error()))
	}
	return c.newError(fallback, image, err, "%s: %s", what, netguard.ServerText(err.Error()))
}

// sourceRead reports whether req read a layer from another registry than the
// target, to copy it while pushing: its failure is no refusal of the push.
func (c *errContext) sourceRead(req *http.Request) bool {
	return req != nil && req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/blobs/") && req.URL.Host != c.target
}

// isNetworkError reports failures to talk to a registry at all: anything the HTTP
// client reports (*url.Error: dial, DNS, TLS, reset), net errors, deadlines and
// cancellation.
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

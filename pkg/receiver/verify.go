package receiver

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
)

// Git hosts, as logged.
const (
	ProviderGitHub  = "github"
	ProviderGitLab  = "gitlab"
	ProviderGitea   = "gitea"
	ProviderForgejo = "forgejo"
)

// provider is a git host's way of signing and naming its webhook requests.
type provider struct {
	name string
	// eventHeader names the event; headers are the ones that mark the host's requests.
	eventHeader string
	headers     []string
	// verify is true when the request carries proof of token over body.
	verify func(h http.Header, body, token []byte) bool
	// push are the events that trigger; ping, when set, is answered without.
	push []string
	ping string
	// deliveryHeaders hold the host's id of a delivery (kept when it redelivers);
	// signsBody is true when the proof covers the body, so that a body sent again is
	// a replay whatever its id says.
	deliveryHeaders []string
	signsBody       bool
}

// eventPush is the push event of GitHub, Gitea and Forgejo.
const eventPush = "push"

// providers, most specific first: Forgejo also sends Gitea's headers, and both also
// send GitHub's X-GitHub-Event (and signature headers) for compatibility. The first
// provider with a header of its own in the request is the one that must verify: a
// request is never retried with another provider's proof.
var providers = []*provider{
	{
		name: ProviderForgejo, eventHeader: "X-Forgejo-Event", headers: []string{"X-Forgejo-Event", "X-Forgejo-Signature"},
		verify: hmacSHA256("X-Forgejo-Signature", ""), push: []string{eventPush},
		deliveryHeaders: []string{"X-Forgejo-Delivery"}, signsBody: true,
	},
	{
		name: ProviderGitea, eventHeader: "X-Gitea-Event", headers: []string{"X-Gitea-Event", "X-Gitea-Signature"},
		verify: hmacSHA256("X-Gitea-Signature", ""), push: []string{eventPush},
		deliveryHeaders: []string{"X-Gitea-Delivery"}, signsBody: true,
	},
	{
		name: ProviderGitLab, eventHeader: "X-Gitlab-Event", headers: []string{"X-Gitlab-Event", "X-Gitlab-Token"},
		verify: sameToken("X-Gitlab-Token"), push: []string{"Push Hook", "Tag Push Hook"},
		// The token proves nothing of the body: a replay is told by its ids only.
		// Idempotency-Key stays the same when GitLab retries a delivery.
		deliveryHeaders: []string{"X-Gitlab-Event-UUID", "Idempotency-Key"},
	},
	{
		// GitHub's SHA-1 X-Hub-Signature is not accepted: GitHub has sent
		// X-Hub-Signature-256 along with it since 2020, and SHA-1 is the weaker MAC.
		name: ProviderGitHub, eventHeader: "X-GitHub-Event", headers: []string{"X-GitHub-Event", "X-Hub-Signature-256", "X-Hub-Signature"},
		verify: hmacSHA256("X-Hub-Signature-256", "sha256="), push: []string{eventPush}, ping: "ping",
		deliveryHeaders: []string{"X-GitHub-Delivery"}, signsBody: true,
	},
}

// detect returns the provider that sent the request, nil when none did.
func detect(h http.Header) *provider {
	for _, p := range providers {
		for _, name := range p.headers {
			if h.Get(name) != "" {
				return p
			}
		}
	}
	return nil
}

// triggers is true when event is a push of p.
func (p *provider) triggers(event string) bool {
	return slices.Contains(p.push, event)
}

// hmacSHA256 verifies header, prefix and the hex HMAC-SHA256 of the body keyed with the token.
func hmacSHA256(header, prefix string) func(h http.Header, body, token []byte) bool {
	return func(h http.Header, body, token []byte) bool {
		hexSum, ok := strings.CutPrefix(strings.TrimSpace(h.Get(header)), prefix)
		if !ok || len(token) == 0 {
			return false
		}
		got, err := hex.DecodeString(hexSum)
		if err != nil {
			return false
		}
		mac := hmac.New(sha256.New, token)
		mac.Write(body)
		return hmac.Equal(got, mac.Sum(nil))
	}
}

// sameToken verifies that header holds the token itself. It compares digests, so
// that not even the token's length shows in the time taken.
func sameToken(header string) func(h http.Header, _, token []byte) bool {
	return func(h http.Header, _, token []byte) bool {
		got := h.Get(header)
		if got == "" || len(token) == 0 {
			return false
		}
		a, b := sha256.Sum256([]byte(got)), sha256.Sum256(token)
		return subtle.ConstantTimeCompare(a[:], b[:]) == 1
	}
}

package receiver

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// answerOf is what a test compares of a response.
type answerOf struct {
	Status int
	Body   string
}

func read(t *testing.T, res *http.Response) answerOf {
	t.Helper()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answerOf{Status: res.StatusCode, Body: strings.TrimSpace(string(b))}
}

var triggered = answerOf{http.StatusAccepted, "1 Function(s) to check"}

// TestProviders: for each git host, a signed push triggers the Functions of the
// receiver's namespace with the payload's URLs; a push whose proof is wrong or
// missing is refused, counted and triggers nothing, and a signed push right after
// it still triggers (the positive control).
func TestProviders(t *testing.T) {
	for _, s := range signers {
		t.Run(s.name, func(t *testing.T) {
			body := []byte(s.payload)
			for _, tc := range []struct {
				name   string
				req    *http.Request
				want   answerOf
				counts map[string]float64
			}{
				{"signed push", s.request(testToken), triggered, map[string]float64{ResultTriggered: 1}},
				{"wrong token", s.request("another-token"), answerOf{http.StatusUnauthorized, "signature or token does not match"},
					map[string]float64{ResultBadSignature: 1}},
				{"token with a suffix", s.request(testToken + "x"), answerOf{http.StatusUnauthorized, "signature or token does not match"},
					map[string]float64{ResultBadSignature: 1}},
				{"no proof", request(Path(testNamespace, testName), stripProof(s.headers(s.push, testToken, body)), s.payload),
					answerOf{http.StatusUnauthorized, "signature or token does not match"}, map[string]float64{ResultBadSignature: 1}},
				{"body changed after signing", request(Path(testNamespace, testName), s.headers(s.push, testToken, body),
					strings.Replace(s.payload, "/repo", "/other", 1)), tamperedAnswer(s.name), tamperedCounts(s.name)},
			} {
				t.Run(tc.name, func(t *testing.T) {
					f := newFixture(t, Options{}, receiverSecretOf(testNamespace, testName, testToken))
					if diff := cmp.Diff(tc.want, read(t, f.do(tc.req))); diff != "" {
						t.Errorf("answer (-want +got):\n%s", diff)
					}
					if diff := cmp.Diff(tc.counts, f.counts()); diff != "" {
						t.Errorf("counts (-want +got):\n%s", diff)
					}
					if tc.want.Status != http.StatusAccepted && len(f.trigger.Calls()) != 0 {
						t.Fatalf("refused, yet triggered: %v", f.trigger.Calls())
					}
					// The positive control, on the same receiver.
					if diff := cmp.Diff(triggered, read(t, f.do(s.request(testToken)))); diff != "" {
						t.Errorf("signed push after it (-want +got):\n%s", diff)
					}
					calls := f.trigger.Calls()
					if diff := cmp.Diff(call{Namespace: testNamespace, URLs: s.urls}, calls[len(calls)-1]); diff != "" {
						t.Errorf("trigger (-want +got):\n%s", diff)
					}
					if got := f.count(ResultTriggered); got != tc.counts[ResultTriggered]+1 {
						t.Errorf("triggered counted %v, want %v", got, tc.counts[ResultTriggered]+1)
					}
				})
			}
		})
	}
}

// stripProof removes every signature and token header.
func stripProof(h http.Header) http.Header {
	h = h.Clone()
	for _, k := range []string{"X-Hub-Signature-256", "X-Hub-Signature", "X-Gitlab-Token", "X-Gitea-Signature", "X-Gogs-Signature", "X-Forgejo-Signature"} {
		h.Del(k)
	}
	return h
}

// GitLab's token proves nothing of the body: a changed body passes, as it would at GitLab.
func tamperedAnswer(provider string) answerOf {
	if provider == ProviderGitLab {
		return triggered
	}
	return answerOf{http.StatusUnauthorized, "signature or token does not match"}
}

func tamperedCounts(provider string) map[string]float64 {
	if provider == ProviderGitLab {
		return map[string]float64{ResultTriggered: 1}
	}
	return map[string]float64{ResultBadSignature: 1}
}

// TestEvents: only pushes trigger; other events, and GitHub's ping, are answered
// 200 once verified, and refused like any request when not.
func TestEvents(t *testing.T) {
	gh, gl, gt := signers[0], signers[1], signers[2]
	path := Path(testNamespace, testName)
	for _, tc := range []struct {
		name    string
		req     *http.Request
		want    answerOf
		result  string
		trigger bool
	}{
		{"github push", gh.request(testToken), triggered, ResultTriggered, true},
		{"github ping", request(path, gh.headers("ping", testToken, []byte(`{"zen":"x","hook_id":1}`)), `{"zen":"x","hook_id":1}`),
			answerOf{http.StatusOK, "pong"}, ResultIgnoredEvent, false},
		{"github ping, unsigned", request(path, http.Header{"X-Github-Event": {"ping"}}, `{"zen":"x"}`),
			answerOf{http.StatusUnauthorized, "signature or token does not match"}, ResultBadSignature, false},
		{"github ping, signed with SHA-1 only", request(path, http.Header{"X-Github-Event": {"ping"}, "X-Hub-Signature": {"sha1=00"}}, `{}`),
			answerOf{http.StatusUnauthorized, "signature or token does not match"}, ResultBadSignature, false},
		{"github issues", request(path, gh.headers("issues", testToken, []byte(gh.payload)), gh.payload),
			answerOf{http.StatusOK, "event ignored: only pushes trigger"}, ResultIgnoredEvent, false},
		{"github signature, no event", request(path, http.Header{"X-Hub-Signature-256": {"sha256=" + hmacHex(testToken, []byte(gh.payload))}}, gh.payload),
			answerOf{http.StatusBadRequest, "no X-GitHub-Event header"}, ResultBadRequest, false},
		{"gitlab tag push", request(path, gl.headers("Tag Push Hook", testToken, nil), gl.payload), triggered, ResultTriggered, true},
		{"gitlab merge request", request(path, gl.headers("Merge Request Hook", testToken, nil), gl.payload),
			answerOf{http.StatusOK, "event ignored: only pushes trigger"}, ResultIgnoredEvent, false},
		{"gitea create", request(path, gt.headers("create", testToken, []byte(gt.payload)), gt.payload),
			answerOf{http.StatusOK, "event ignored: only pushes trigger"}, ResultIgnoredEvent, false},
		{"gitea ping is no GitHub ping", request(path, gt.headers("ping", testToken, []byte(gt.payload)), gt.payload),
			answerOf{http.StatusOK, "event ignored: only pushes trigger"}, ResultIgnoredEvent, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, Options{}, receiverSecretOf(testNamespace, testName, testToken))
			if diff := cmp.Diff(tc.want, read(t, f.do(tc.req))); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(map[string]float64{tc.result: 1}, f.counts()); diff != "" {
				t.Errorf("counts (-want +got):\n%s", diff)
			}
			if got := len(f.trigger.Calls()) == 1; got != tc.trigger {
				t.Errorf("triggered: %v, want %v", got, tc.trigger)
			}
		})
	}
}

// TestProviderPrecedence: the most specific host's proof is the one checked; a
// good proof of a less specific one does not rescue a bad one.
func TestProviderPrecedence(t *testing.T) {
	body := []byte(giteaPush)
	good, bad := hmacHex(testToken, body), hmacHex("wrong", body)
	path := Path(testNamespace, testName)
	for _, tc := range []struct {
		name string
		h    http.Header
		want int
	}{
		{"forgejo good", http.Header{"X-Forgejo-Event": {"push"}, "X-Forgejo-Signature": {good}, "X-Gitea-Signature": {bad}}, http.StatusAccepted},
		{"forgejo bad, gitea good", http.Header{"X-Forgejo-Event": {"push"}, "X-Forgejo-Signature": {bad}, "X-Gitea-Signature": {good}}, http.StatusUnauthorized},
		{"gitea bad, github good", http.Header{"X-Gitea-Event": {"push"}, "X-Gitea-Signature": {bad}, "X-Github-Event": {"push"},
			"X-Hub-Signature-256": {"sha256=" + good}}, http.StatusUnauthorized},
		{"gitea good, github bad", http.Header{"X-Gitea-Event": {"push"}, "X-Gitea-Signature": {good}, "X-Github-Event": {"push"},
			"X-Hub-Signature-256": {"sha256=" + bad}}, http.StatusAccepted},
		{"github good without prefix", http.Header{"X-Github-Event": {"push"}, "X-Hub-Signature-256": {good}}, http.StatusUnauthorized},
		{"github good, upper-case hex", http.Header{"X-Github-Event": {"push"}, "X-Hub-Signature-256": {"sha256=" + strings.ToUpper(good)}}, http.StatusAccepted},
		{"github not hex", http.Header{"X-Github-Event": {"push"}, "X-Hub-Signature-256": {"sha256=zz"}}, http.StatusUnauthorized},
		{"gitlab token in a GitHub request: checked as GitLab's, which has no event", http.Header{"X-Github-Event": {"push"}, "X-Gitlab-Token": {testToken}},
			http.StatusBadRequest},
		{"gitlab empty token", http.Header{"X-Gitlab-Event": {"Push Hook"}, "X-Gitlab-Token": {""}}, http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, Options{}, receiverSecretOf(testNamespace, testName, testToken))
			if got := f.do(request(path, tc.h, giteaPush)).StatusCode; got != tc.want {
				t.Errorf("status %d, want %d", got, tc.want)
			}
		})
	}
}

// TestNotFound: whatever is missing, the answer is the same 404, counted, and
// nothing is triggered; the receiver that exists is the positive control.
func TestNotFound(t *testing.T) {
	gh := signers[0]
	labelled := func(ns, name string, mutate func(*corev1.Secret)) *corev1.Secret {
		s := receiverSecretOf(ns, name, testToken)
		mutate(s)
		return s
	}
	secrets := []*corev1.Secret{
		receiverSecretOf(testNamespace, testName, testToken),
		labelled(testNamespace, "unlabelled", func(s *corev1.Secret) { s.Labels = nil }),
		labelled(testNamespace, "label-false", func(s *corev1.Secret) { s.Labels[ReceiverLabel] = "false" }),
		labelled(testNamespace, "no-token", func(s *corev1.Secret) { s.Data = map[string][]byte{"password": []byte(testToken)} }),
		labelled(testNamespace, "empty-token", func(s *corev1.Secret) { s.Data[TokenKey] = []byte("\n") }),
		receiverSecretOf("forbidden", testName, testToken),
		receiverSecretOf("other", testName, "other-token"),
	}
	signed := func(path string) *http.Request {
		return request(path, gh.headers("push", testToken, []byte(gh.payload)), gh.payload)
	}
	notFoundAnswer := answerOf{http.StatusNotFound, "not found"}
	for _, tc := range []struct {
		name string
		path string
		want answerOf
	}{
		{"receiver", Path(testNamespace, testName), triggered},
		{"no Secret", Path(testNamespace, "absent"), notFoundAnswer},
		{"no label", Path(testNamespace, "unlabelled"), notFoundAnswer},
		{"label not true", Path(testNamespace, "label-false"), notFoundAnswer},
		{"no token key", Path(testNamespace, "no-token"), notFoundAnswer},
		{"empty token", Path(testNamespace, "empty-token"), notFoundAnswer},
		{"namespace not readable", Path("forbidden", testName), notFoundAnswer},
		{"namespace absent", Path("absent", testName), notFoundAnswer},
		{"no name", "/hook/" + testNamespace, notFoundAnswer},
		{"empty name", "/hook/" + testNamespace + "/", notFoundAnswer},
		{"extra segment", Path(testNamespace, testName) + "/x", notFoundAnswer},
		{"upper case", Path("Tenant-A", testName), notFoundAnswer},
		{"dot dot", "/hook/../" + testName, notFoundAnswer},
		{"another prefix", "/hooks/" + testNamespace + "/" + testName, notFoundAnswer},
		{"root", "/", notFoundAnswer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, Options{}, secrets...)
			f.secrets.errs["forbidden"] = forbidden("forbidden")
			if diff := cmp.Diff(tc.want, read(t, f.do(signed(tc.path)))); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
			want := map[string]float64{ResultNotFound: 1}
			if tc.want.Status == http.StatusAccepted {
				want = map[string]float64{ResultTriggered: 1}
			} else if len(f.trigger.Calls()) != 0 {
				t.Errorf("not found, yet triggered: %v", f.trigger.Calls())
			}
			if diff := cmp.Diff(want, f.counts()); diff != "" {
				t.Errorf("counts (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTenantIsolation: a push to a receiver triggers its own namespace only, and is
// verified with its own token.
func TestTenantIsolation(t *testing.T) {
	gh := signers[0]
	f := newFixture(t, Options{}, receiverSecretOf("tenant-a", "hook", "token-a"), receiverSecretOf("tenant-b", "hook", "token-b"))
	for _, tc := range []struct {
		ns, token string
		want      int
	}{
		{"tenant-a", "token-a", http.StatusAccepted},
		{"tenant-b", "token-a", http.StatusUnauthorized},
		{"tenant-b", "token-b", http.StatusAccepted},
		{"tenant-a", "token-b", http.StatusUnauthorized},
	} {
		req := request(Path(tc.ns, "hook"), gh.headers("push", tc.token, []byte(gh.payload)), gh.payload)
		if got := f.do(req).StatusCode; got != tc.want {
			t.Errorf("%s signed with %s: status %d, want %d", tc.ns, tc.token, got, tc.want)
		}
	}
	want := []call{{"tenant-a", githubURLs}, {"tenant-b", githubURLs}}
	if diff := cmp.Diff(want, f.trigger.Calls()); diff != "" {
		t.Errorf("triggers (-want +got):\n%s", diff)
	}
}

// TestBadRequests: what is not a webhook of a known host is refused before any
// Secret is read; a signed payload that names no repository is refused after.
func TestBadRequests(t *testing.T) {
	gh := signers[0]
	path := Path(testNamespace, testName)
	signedGitHub := func(body string) *http.Request {
		return request(path, gh.headers("push", testToken, []byte(body)), body)
	}
	for _, tc := range []struct {
		name  string
		req   func() *http.Request
		want  answerOf
		reads int
	}{
		{"signed push", func() *http.Request { return gh.request(testToken) }, triggered, 1},
		{"GET", func() *http.Request {
			r := gh.request(testToken)
			r.Method = http.MethodGet
			return r
		}, answerOf{http.StatusMethodNotAllowed, "only POST is accepted"}, 0},
		{"form content", func() *http.Request {
			r := gh.request(testToken)
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			return r
		}, answerOf{http.StatusUnsupportedMediaType, "the content type must be application/json"}, 0},
		{"no content type", func() *http.Request {
			r := gh.request(testToken)
			r.Header.Del("Content-Type")
			return r
		}, answerOf{http.StatusUnsupportedMediaType, "the content type must be application/json"}, 0},
		{"json with charset", func() *http.Request {
			r := gh.request(testToken)
			r.Header.Set("Content-Type", "application/json; charset=utf-8")
			return r
		}, triggered, 1},
		{"unknown host", func() *http.Request {
			return request(path, http.Header{"X-Event-Key": {"repo:push"}, "X-Signature": {"sha256=00"}}, gh.payload)
		}, answerOf{http.StatusBadRequest, "not a GitHub, GitLab, Gitea or Forgejo webhook"}, 0},
		{"no headers", func() *http.Request { return request(path, nil, gh.payload) },
			answerOf{http.StatusBadRequest, "not a GitHub, GitLab, Gitea or Forgejo webhook"}, 0},
		{"signed, not JSON", func() *http.Request { return signedGitHub(`{"ref": secret-value`) },
			answerOf{http.StatusBadRequest, "the push payload cannot be read"}, 1},
		{"signed, no repository", func() *http.Request { return signedGitHub(`{"ref":"refs/heads/main"}`) },
			answerOf{http.StatusBadRequest, "the push payload cannot be read"}, 1},
		{"signed, URL not a string", func() *http.Request { return signedGitHub(`{"repository":{"clone_url":1}}`) },
			answerOf{http.StatusBadRequest, "the push payload cannot be read"}, 1},
		{"signed, empty", func() *http.Request { return signedGitHub(``) },
			answerOf{http.StatusBadRequest, "the push payload cannot be read"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, Options{}, receiverSecretOf(testNamespace, testName, testToken))
			res := f.do(tc.req())
			if diff := cmp.Diff(tc.want, read(t, res)); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
			if tc.want.Status == http.StatusMethodNotAllowed && res.Header.Get("Allow") != http.MethodPost {
				t.Errorf("Allow: %q, want POST", res.Header.Get("Allow"))
			}
			if got := f.secrets.Reads(); got != tc.reads {
				t.Errorf("%d Secret reads, want %d", got, tc.reads)
			}
			result := ResultBadRequest
			if tc.want.Status == http.StatusAccepted {
				result = ResultTriggered
			}
			if diff := cmp.Diff(map[string]float64{result: 1}, f.counts()); diff != "" {
				t.Errorf("counts (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBodyLimit: a body over the limit is refused with 413, whether it says its
// length or not; one at the limit passes.
func TestBodyLimit(t *testing.T) {
	const limit = 2048
	gh := signers[0]
	atLimit := gh.payload + strings.Repeat(" ", limit-len(gh.payload))
	over := atLimit + " "
	signed := func(body string, chunked bool) *http.Request {
		r := request(Path(testNamespace, testName), gh.headers("push", testToken, []byte(body)), body)
		if chunked {
			r.ContentLength = -1
			r.Body = io.NopCloser(strings.NewReader(body))
		}
		return r
	}
	tooLargeAnswer := answerOf{http.StatusRequestEntityTooLarge, "request body too large"}
	for _, tc := range []struct {
		name  string
		req   *http.Request
		want  answerOf
		reads int
	}{
		{"at the limit", signed(atLimit, false), triggered, 1},
		{"at the limit, chunked", signed(atLimit, true), triggered, 1},
		{"over, with Content-Length", signed(over, false), tooLargeAnswer, 0},
		{"over, chunked", signed(over, true), tooLargeAnswer, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, Options{MaxBodyBytes: limit}, receiverSecretOf(testNamespace, testName, testToken))
			if diff := cmp.Diff(tc.want, read(t, f.do(tc.req))); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
			want := map[string]float64{ResultTooLarge: 1}
			if tc.want.Status == http.StatusAccepted {
				want = map[string]float64{ResultTriggered: 1}
			}
			if diff := cmp.Diff(want, f.counts()); diff != "" {
				t.Errorf("counts (-want +got):\n%s", diff)
			}
			if got := f.secrets.Reads(); got != tc.reads {
				t.Errorf("%d Secret reads, want %d", got, tc.reads)
			}
		})
	}
}

// TestNoMatch: a verified push for a repository no Function builds from is answered
// 200 and counted apart.
func TestNoMatch(t *testing.T) {
	f := newFixture(t, Options{}, receiverSecretOf(testNamespace, testName, testToken))
	f.trigger.n = 0
	want := answerOf{http.StatusOK, "no Function of the namespace builds from this repository"}
	if diff := cmp.Diff(want, read(t, f.do(signers[0].request(testToken)))); diff != "" {
		t.Errorf("answer (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]float64{ResultNoMatch: 1}, f.counts()); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	f.trigger.n = 3
	want = answerOf{http.StatusAccepted, "3 Function(s) to check"}
	if diff := cmp.Diff(want, read(t, f.do(signers[0].request(testToken)))); diff != "" {
		t.Errorf("answer (-want +got):\n%s", diff)
	}
}

// TestRateLimits: a receiver's requests, verified or not, share its bucket; other
// receivers have their own; the bucket refills with time; the global bucket counts
// every request that reaches a Secret lookup, found or not.
func TestRateLimits(t *testing.T) {
	gh := signers[0]
	good := func(name string) *http.Request {
		body := fresh(gh.payload)
		return request(Path(testNamespace, name), gh.headers("push", testToken, []byte(body)), body)
	}
	bad := func(name string) *http.Request {
		return request(Path(testNamespace, name), gh.headers("push", "guess", []byte(gh.payload)), gh.payload)
	}
	t.Run("receiver", func(t *testing.T) {
		f := newFixture(t, Options{ReceiverRate: 0.5, ReceiverBurst: 3},
			receiverSecretOf(testNamespace, "a", testToken), receiverSecretOf(testNamespace, "b", testToken))
		var got []int
		for _, req := range []*http.Request{good("a"), bad("a"), bad("a"), good("a"), bad("a"), good("b")} {
			got = append(got, f.do(req).StatusCode)
		}
		want := []int{http.StatusAccepted, http.StatusUnauthorized, http.StatusUnauthorized, http.StatusTooManyRequests,
			http.StatusTooManyRequests, http.StatusAccepted}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("statuses (-want +got):\n%s", diff)
		}
		res := f.do(good("a"))
		if diff := cmp.Diff(answerOf{http.StatusTooManyRequests, "too many requests"}, read(t, res)); diff != "" {
			t.Errorf("answer (-want +got):\n%s", diff)
		}
		if got := res.Header.Get("Retry-After"); got != "2" {
			t.Errorf("Retry-After: %q, want 2 (one token at 0.5/s)", got)
		}
		want2 := map[string]float64{ResultTriggered: 2, ResultBadSignature: 2, ResultRateLimited: 3}
		if diff := cmp.Diff(want2, f.counts()); diff != "" {
			t.Errorf("counts (-want +got):\n%s", diff)
		}
		f.clock.Step(2 * time.Second)
		if got := f.do(good("a")).StatusCode; got != http.StatusAccepted {
			t.Errorf("after 2s: status %d, want 202", got)
		}
		if got := f.do(good("a")).StatusCode; got != http.StatusTooManyRequests {
			t.Errorf("right after: status %d, want 429", got)
		}
	})
	t.Run("global", func(t *testing.T) {
		f := newFixture(t, Options{GlobalRate: 1, GlobalBurst: 3}, receiverSecretOf(testNamespace, "a", testToken))
		var got []int
		for _, req := range []*http.Request{good("absent"), good("absent"), good("a"), good("a")} {
			got = append(got, f.do(req).StatusCode)
		}
		want := []int{http.StatusNotFound, http.StatusNotFound, http.StatusAccepted, http.StatusTooManyRequests}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("statuses (-want +got):\n%s", diff)
		}
		if reads := f.secrets.Reads(); reads != 2 {
			t.Errorf("%d Secret reads, want 2 (absent once, cached; a once)", reads)
		}
		f.clock.Step(time.Second)
		if got := f.do(good("a")).StatusCode; got != http.StatusAccepted {
			t.Errorf("after 1s: status %d, want 202", got)
		}
	})
}

// TestSecretCache: a read is believed for the TTL, found or not; a token that
// fails is read again at once, so a rotated token works in the next request; an
// error is answered 503 and not kept.
func TestSecretCache(t *testing.T) {
	gh := signers[0]
	signed := func(token string) *http.Request {
		body := fresh(gh.payload)
		return request(Path(testNamespace, testName), gh.headers("push", token, []byte(body)), body)
	}
	f := newFixture(t, Options{SecretTTL: 5 * time.Second})
	step := func(what string, req *http.Request, want, reads int) {
		t.Helper()
		if got := f.do(req).StatusCode; got != want {
			t.Errorf("%s: status %d, want %d", what, got, want)
		}
		if got := f.secrets.Reads(); got != reads {
			t.Errorf("%s: %d Secret reads in all, want %d", what, got, reads)
		}
	}
	step("no receiver", signed("old"), http.StatusNotFound, 1)
	f.secrets.put(receiverSecretOf(testNamespace, testName, "old"))
	step("created, not found still within the TTL", signed("old"), http.StatusNotFound, 1)
	f.clock.Step(5 * time.Second)
	step("after the TTL", signed("old"), http.StatusAccepted, 2)
	step("cached", signed("old"), http.StatusAccepted, 2)
	f.secrets.put(receiverSecretOf(testNamespace, testName, "new"))
	step("rotated: the new token fails on the cached one, is read again", signed("new"), http.StatusAccepted, 3)
	step("the old token: read again, fails", signed("old"), http.StatusUnauthorized, 4)
	step("the new token, cached", signed("new"), http.StatusAccepted, 4)
	f.clock.Step(5 * time.Second)
	f.secrets.errs[testNamespace] = io.ErrUnexpectedEOF
	want := answerOf{http.StatusServiceUnavailable, "the receiver cannot be read now, try again later"}
	if diff := cmp.Diff(want, read(t, f.do(signed("new")))); diff != "" {
		t.Errorf("answer (-want +got):\n%s", diff)
	}
	delete(f.secrets.errs, testNamespace)
	step("the error was not kept", signed("new"), http.StatusAccepted, 6)
	// A failing token read again: the Secret has gone, or cannot be read.
	f.secrets.errs[testNamespace] = io.ErrUnexpectedEOF
	step("read again, an error", signed("newer"), http.StatusServiceUnavailable, 7)
	delete(f.secrets.errs, testNamespace)
	unlabelled := receiverSecretOf(testNamespace, testName, "new")
	unlabelled.Labels = nil
	f.secrets.put(unlabelled)
	step("read again, no longer a receiver", signed("new"), http.StatusAccepted, 7) // cached, right token: not read
	step("read again, no longer a receiver", signed("newer"), http.StatusNotFound, 8)
	step("not a receiver, cached", signed("new"), http.StatusNotFound, 8)
	want2 := map[string]float64{ResultTriggered: 6, ResultBadSignature: 1, ResultNotFound: 4, ResultError: 2}
	if diff := cmp.Diff(want2, f.counts()); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
}

// TestSecretCacheBounded: request paths choose the keys, so the cache holds at most
// maxCachedSecrets, dropping expired reads first; a known key is always updated.
func TestSecretCacheBounded(t *testing.T) {
	secrets := newFakeSecrets(receiverSecretOf(testNamespace, "real", "old"))
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newSecretCache(secrets.get, time.Second)
	ctx := context.Background()
	key := func(name string) types.NamespacedName {
		return types.NamespacedName{Namespace: testNamespace, Name: name}
	}
	if _, _, err := c.lookup(ctx, key("real"), false, now); err != nil {
		t.Fatal(err)
	}
	for i := range maxCachedSecrets + 10 {
		if _, _, err := c.lookup(ctx, key(fmt.Sprint("absent-", i)), false, now); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(c.m); n != maxCachedSecrets {
		t.Errorf("%d cached, want %d", n, maxCachedSecrets)
	}
	secrets.put(receiverSecretOf(testNamespace, "real", "new"))
	s, fresh, err := c.lookup(ctx, key("real"), true, now)
	if err != nil || !fresh || string(s.token) != "new" {
		t.Fatalf("fresh lookup: %q %v %v", s.token, fresh, err)
	}
	if s, fresh, _ := c.lookup(ctx, key("real"), false, now); fresh || string(s.token) != "new" {
		t.Errorf("full cache: the known key was not updated: %q fresh %v", s.token, fresh)
	}
	now = now.Add(time.Second)
	if _, _, err := c.lookup(ctx, key("another"), false, now); err != nil {
		t.Fatal(err)
	}
	if n := len(c.m); n != 1 {
		t.Errorf("%d cached after the TTL, want 1 (the expired reads dropped)", n)
	}
}

// TestTokenNeverShown: whatever the request, neither any response nor the log (at
// every verbosity) holds the token, even when the payload carries it (Gitea's old
// "secret" field) or a URL carries a password.
func TestTokenNeverShown(t *testing.T) {
	f := newFixture(t, Options{ReceiverBurst: 100}, receiverSecretOf(testNamespace, testName, testToken))
	path := Path(testNamespace, testName)
	gh, gl := signers[0], signers[1]
	leaky := `{"secret":"` + testToken + `","ref":"refs/heads/` + testToken + `","repository":{"clone_url":"https://user:` + testToken +
		`@github.com/org/repo.git"}}`
	reqs := []*http.Request{
		gh.request(testToken),
		gh.request("wrong"),
		gl.request(testToken),
		request(path, gl.headers("Push Hook", testToken+"x", nil), gl.payload),
		request(path, gl.headers("Push Hook", testToken, nil), `{"ref": "`+testToken),
		request(path, gl.headers("Push Hook", testToken, nil), `{"repository": {"clone_url": ["`+testToken+`"]}}`),
		request(path, gh.headers("push", testToken, []byte(leaky)), leaky),
		request(path, gh.headers(testToken, testToken, []byte(leaky)), leaky),
		request(Path(testNamespace, "absent"), gl.headers("Push Hook", testToken, nil), gl.payload),
		request(path, http.Header{"X-Unknown": {testToken}}, testToken),
	}
	for _, req := range reqs {
		f.do(req)
	}
	for i, b := range f.bodies {
		if strings.Contains(b, testToken) {
			t.Errorf("response %d holds the token: %q", i, b)
		}
	}
	logs := f.logs.String()
	if strings.Contains(logs, testToken) {
		t.Errorf("the log holds the token:\n%s", logs)
	}
	// The log is not empty: it says what happened, with the URL scrubbed.
	for _, want := range []string{`"receiver"="tenant-a/github-push"`, `"provider"="github"`, `"repository"="https://github.com/org/repo.git"`,
		`"functions"=1`, `"ref"="refs/heads/main"`, "bad signature", `"reason"="no such Secret"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log lacks %s:\n%s", want, logs)
		}
	}
}

// TestCollectors: one counter, every result at 0 before any request.
func TestCollectors(t *testing.T) {
	f := newFixture(t, Options{})
	cs := f.r.Collectors()
	if len(cs) != 1 {
		t.Fatalf("%d collectors, want 1", len(cs))
	}
	var want strings.Builder
	want.WriteString("# HELP func_operator_webhook_requests_total Webhook requests, by result (" + strings.Join(results, ", ") + ").\n")
	want.WriteString("# TYPE func_operator_webhook_requests_total counter\n")
	sorted := append([]string(nil), results...)
	slices.Sort(sorted)
	for _, r := range sorted {
		want.WriteString(`func_operator_webhook_requests_total{result="` + r + `"} 0` + "\n")
	}
	if err := testutil.CollectAndCompare(cs[0], strings.NewReader(want.String())); err != nil {
		t.Error(err)
	}
}

package operator

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/time/rate"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeAuthn stands for controller-runtime's filter: a review for each request
// with a token (counted), 200 for tokens starting "good", 403 for "forbidden", 500
// for any other (as the filter answers a token the API server did not issue), 401
// without a token (no review).
type fakeAuthn struct {
	reviews int
	revoked map[string]bool
}

func (f *fakeAuthn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	f.reviews++
	switch {
	case strings.HasPrefix(token, "good") && !f.revoked[token]:
		_, _ = w.Write([]byte("metrics"))
	case token == "forbidden":
		http.Error(w, "Authorization denied", http.StatusForbidden)
	default:
		http.Error(w, "Authentication failed", http.StatusInternalServerError)
	}
}

// TestReviewGate: requests with credentials not seen to authenticate reach the
// filter (a TokenReview each) at most metricsReviewBurst at once and
// metricsReviewRate a second after; known credentials and requests without any go
// through. Positive controls: the first metricsReviewBurst bad tokens are reviewed,
// a known token still scrapes in a flood, a new one once the limiter refills.
func TestReviewGate(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	gate := newReviewGate(clk)
	authn := &fakeAuthn{}
	h := gate.wrap(authn)
	get := func(token string) int {
		r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code == http.StatusTooManyRequests && w.Header().Get("Retry-After") == "" {
			t.Errorf("a 429 without Retry-After")
		}
		return w.Code
	}
	// count sends each token and counts the answers by status.
	count := func(tokens ...string) map[int]int {
		out := map[int]int{}
		for _, tok := range tokens {
			out[get(tok)]++
		}
		return out
	}
	bad := func(n int) []string {
		out := make([]string, 0, n)
		for i := range n {
			out = append(out, fmt.Sprintf("bad-%d-%d", clk.Now().Unix(), i))
		}
		return out
	}

	// Prometheus scrapes: reviewed, then known.
	if got := get("good-prometheus"); got != http.StatusOK {
		t.Fatalf("the first scrape: %d, want 200", got)
	}
	// A flood of tokens the API server did not issue, each new: the burst left is
	// reviewed, the rest refused before the filter.
	if diff := cmp.Diff(map[int]int{500: metricsReviewBurst - 1, 429: 1000 - metricsReviewBurst + 1}, count(bad(1000)...)); diff != "" {
		t.Errorf("answers to 1,000 bad tokens (-want +got):\n%s", diff)
	}
	if authn.reviews != metricsReviewBurst {
		t.Errorf("%d reviews, want %d (the burst)", authn.reviews, metricsReviewBurst)
	}
	// The same bad token again: not known, so limited too.
	if got := get("bad-again"); got != http.StatusTooManyRequests {
		t.Errorf("a bad token again in the flood: %d, want 429", got)
	}
	// Prometheus's known token still scrapes, and so does a request without a token
	// reach the filter's 401, neither taking from the limiter.
	if diff := cmp.Diff(map[int]int{200: 5, 401: 5}, count("good-prometheus", "", "good-prometheus", "", "good-prometheus", "", "good-prometheus", "", "good-prometheus", "")); diff != "" {
		t.Errorf("answers to the known token and to none in the flood (-want +got):\n%s", diff)
	}
	// A new good token waits for the limiter: a second later it is reviewed.
	if got := get("good-new"); got != http.StatusTooManyRequests {
		t.Errorf("a new token in the flood: %d, want 429", got)
	}
	clk.Step(time.Second)
	if got := get("good-new"); got != http.StatusOK {
		t.Errorf("a new token a second later: %d, want 200", got)
	}
	// Over a minute of flood: one review a second.
	reviews := authn.reviews
	for range 60 {
		clk.Step(time.Second)
		count(bad(50)...)
	}
	if got := authn.reviews - reviews; got != 60 {
		t.Errorf("%d reviews in 60 s of flood, want 60", got)
	}
	// A known token gone bad (revoked) is reviewed, refused and forgotten.
	clk.Step(time.Minute) // the burst back
	if got := get("good-prometheus"); got != http.StatusOK {
		t.Fatalf("the known token: %d", got)
	}
	authn.revoked = map[string]bool{"good-prometheus": true}
	count(bad(metricsReviewBurst)...)
	if diff := cmp.Diff(map[int]int{500: 1, 429: 1}, count("good-prometheus", "good-prometheus")); diff != "" {
		t.Errorf("answers to a revoked token, the limiter empty (-want +got):\n%s", diff)
	}
	// 403 is a user the API server knows but the operator does not let scrape: not
	// known, so limited (an attacker may hold any number of such tokens).
	clk.Step(time.Minute)
	if got := get("forbidden"); got != http.StatusForbidden {
		t.Fatalf("forbidden: %d", got)
	}
	count(bad(metricsReviewBurst)...)
	if got := get("forbidden"); got != http.StatusTooManyRequests {
		t.Errorf("a token denied access, the limiter empty: %d, want 429", got)
	}
	// Known for metricsKnownTTL since it was last authorized.
	clk.Step(time.Minute)
	if got := get("good-ttl"); got != http.StatusOK {
		t.Fatalf("good-ttl: %d", got)
	}
	clk.Step(metricsKnownTTL)
	count(bad(metricsReviewBurst)...)
	if got := get("good-ttl"); got != http.StatusTooManyRequests {
		t.Errorf("a token not seen for %s, the limiter empty: %d, want 429", metricsKnownTTL, got)
	}
}

// TestReviewGate_PerSource: a flood from one source address takes that source's
// allowance, not Prometheus's: a scrape from another address with a token it has
// not sent before (after a restart, a token rotation) is reviewed at once. All
// sources together are held to metricsReviewTotalRate. The positive control: the
// flooding source is refused.
func TestReviewGate_PerSource(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	gate := newReviewGate(clk)
	authn := &fakeAuthn{}
	h := gate.wrap(authn)
	get := func(from, token string) int {
		r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		r.RemoteAddr = from + ":40000"
		r.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	for i := range 1000 {
		get("10.0.0.66", fmt.Sprintf("bad-%d", i))
	}
	if got := get("10.0.0.66", "bad-more"); got != http.StatusTooManyRequests {
		t.Fatalf("the flooding source: %d, want 429", got)
	}
	if got := get("10.0.0.9", "good-rotated"); got != http.StatusOK {
		t.Errorf("Prometheus's new token from its own address during the flood: %d, want 200", got)
	}
	// Many sources: the total bounds the reviews.
	reviews := authn.reviews
	for i := range 500 {
		get(fmt.Sprintf("10.1.%d.%d", i/250, i%250), "bad-x")
	}
	if got := authn.reviews - reviews; got > metricsReviewTotalBurst {
		t.Errorf("%d reviews from 500 sources at once, want at most %d (the total burst)", got, metricsReviewTotalBurst)
	}
}

// TestTokenKey: a token is one key however it is written around (text after it,
// another protocol beside a WebSocket's), as the API server's authenticators read it;
// a request without one has none.
func TestTokenKey(t *testing.T) {
	key := func(h http.Header) string {
		k, ok := tokenKey(&http.Request{Header: h})
		if !ok {
			return "none"
		}
		return fmt.Sprintf("%x", k[:4])
	}
	one := key(http.Header{"Authorization": {"Bearer tok"}})
	for _, h := range []http.Header{
		{"Authorization": {"Bearer tok extra"}},
		{"Authorization": {"bearer tok"}},
		{"Authorization": {"  Bearer tok   "}},
	} {
		if got := key(h); got != one {
			t.Errorf("%v: key %s, want %s (Bearer tok)", h, got, one)
		}
	}
	ws := key(http.Header{"Sec-Websocket-Protocol": {"base64url.bearer.authorization.k8s.io.tok, other"}})
	if ws2 := key(http.Header{"Sec-Websocket-Protocol": {"junk, base64url.bearer.authorization.k8s.io.tok"}}); ws == "none" || ws2 != ws {
		t.Errorf("WebSocket keys %s and %s, want one", ws, ws2)
	}
	for _, h := range []http.Header{{}, {"Authorization": {"Basic dXNlcjpwYXNz"}}, {"Authorization": {"Bearer"}}, {"Sec-Websocket-Protocol": {"chat"}}} {
		if got := key(h); got != "none" {
			t.Errorf("%v: key %s, want none", h, got)
		}
	}
	if other := key(http.Header{"Authorization": {"Bearer tok2"}}); other == one {
		t.Errorf("two tokens share key %s", one)
	}
}

// TestReviewGate_KnownBounded: no more than metricsKnownMax credentials are known;
// the least recently used go first (k8s.io/utils/lru).
func TestReviewGate_KnownBounded(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	gate := newReviewGate(clk)
	// The cap, not the rate, under test (httptest's requests come from 192.0.2.1).
	gate.total = rate.NewLimiter(rate.Inf, 0)
	gate.sources.Add("192.0.2.1", rate.NewLimiter(rate.Inf, 0))
	h := gate.wrap(&fakeAuthn{})
	for i := range 2 * metricsKnownMax {
		clk.Step(time.Millisecond) // within metricsKnownTTL: none expires
		r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		r.Header.Set("Authorization", fmt.Sprintf("Bearer good-%d", i))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			t.Fatalf("token %d: %d", i, w.Code)
		}
	}
	if n := gate.known.Len(); n != metricsKnownMax {
		t.Errorf("%d credentials known, want %d", n, metricsKnownMax)
	}
	first, _ := tokenKey(&http.Request{Header: http.Header{"Authorization": {"Bearer good-0"}}})
	last, _ := tokenKey(&http.Request{Header: http.Header{"Authorization": {fmt.Sprintf("Bearer good-%d", 2*metricsKnownMax-1)}}})
	if gate.isKnown(first) || !gate.isKnown(last) {
		t.Errorf("known: the first %t, the last %t; want only the last", gate.isKnown(first), gate.isKnown(last))
	}
}

package receiver

import (
	"crypto/sha256"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestAttack_Replay (issue 22, finding 7): a signed delivery sent again is refused,
// with the same delivery id or, where the host signs the body, with a fresh one (the
// id header is not signed: an attacker who captured a delivery can change it). The
// positive controls: the first is accepted and triggers, and a new push (a new
// body, a new id) still triggers after the replays.
func TestAttack_Replay(t *testing.T) {
	replayed := answerOf{http.StatusConflict, "this delivery was received already"}
	for _, s := range signers {
		t.Run(s.name, func(t *testing.T) {
			f := newFixture(t, Options{}, receiverSecretOf(testNamespace, testName, testToken))
			path := Path(testNamespace, testName)
			body := s.payload
			first := s.headers(s.push, testToken, []byte(body))
			setDelivery(s.name, first, "delivery-1")
			if diff := cmp.Diff(triggered, read(t, f.do(request(path, first, body)))); diff != "" {
				t.Fatalf("first delivery (-want +got):\n%s", diff)
			}
			// The same delivery again.
			if diff := cmp.Diff(replayed, read(t, f.do(request(path, first, body)))); diff != "" {
				t.Errorf("the same delivery again (-want +got):\n%s", diff)
			}
			// The same signed body with a fresh delivery id: a replay where the body is
			// signed; GitLab signs nothing (its token is the proof), so only its id counts.
			fresh := first.Clone()
			setDelivery(s.name, fresh, "delivery-2")
			want, wantCalls := replayed, 1
			if s.name == ProviderGitLab {
				want, wantCalls = triggered, 2
			}
			if diff := cmp.Diff(want, read(t, f.do(request(path, fresh, body)))); diff != "" {
				t.Errorf("the same body with a fresh delivery id (-want +got):\n%s", diff)
			}
			if got := len(f.trigger.Calls()); got != wantCalls {
				t.Errorf("%d pushes triggered, want %d", got, wantCalls)
			}
			if got, want := f.count(ResultReplayed), float64(3-wantCalls); got != want {
				t.Errorf("replayed counted %v, want %v", got, want)
			}
			// A new push: a new body and id.
			next := strings.Replace(body, `"ref":"refs/heads/main"`, `"ref":"refs/heads/next"`, 1)
			h := s.headers(s.push, testToken, []byte(next))
			setDelivery(s.name, h, "delivery-3")
			if diff := cmp.Diff(triggered, read(t, f.do(request(path, h, next)))); diff != "" {
				t.Errorf("a new push after the replays (-want +got):\n%s", diff)
			}
		})
	}
}

// setDelivery sets the delivery id header of provider in h.
func setDelivery(provider string, h http.Header, id string) {
	switch provider {
	case ProviderGitHub:
		h.Set("X-GitHub-Delivery", id)
	case ProviderGitLab:
		h.Set("X-Gitlab-Event-UUID", id)
	case ProviderGitea:
		h.Set("X-Gitea-Delivery", id)
	case ProviderForgejo:
		h.Set("X-Forgejo-Delivery", id)
		h.Set("X-Gitea-Delivery", id)
	}
}

// TestDeliveriesBounded: deliveries are remembered for the window and at most max
// of them, the oldest going first; a replay claims nothing.
func TestDeliveriesBounded(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	key := func(i int) [][sha256.Size]byte { return [][sha256.Size]byte{{byte(i)}} }
	d := newDeliveries(time.Minute, 3, 3)
	for i := 0; i < 5; i++ {
		if !d.claim("ns", key(i), start) {
			t.Fatalf("delivery %d refused, first time", i)
		}
	}
	if got := d.len(); got != 3 {
		t.Errorf("remembers %d deliveries, want at most 3", got)
	}
	type claims map[int]bool
	got := claims{}
	for _, i := range []int{4, 3, 2, 0} {
		got[i] = d.claim("ns", key(i), start.Add(time.Second))
	}
	// 2, 3 and 4 remembered; 0 and 1 went first (0 claimed again, evicting 2).
	if diff := cmp.Diff(claims{4: false, 3: false, 2: false, 0: true}, got); diff != "" {
		t.Errorf("claims within the window (-want +got):\n%s", diff)
	}
	if !d.claim("ns", key(4), start.Add(time.Minute)) {
		t.Error("a delivery older than the window refused")
	}
	if got := d.len(); got != 2 {
		t.Errorf("after the window: remembers %d deliveries, want 2 (0 again, and 4 again)", got)
	}
	// A replay among new keys claims none of them.
	if d.claim("ns", append(key(9), key(4)...), start.Add(time.Minute)) {
		t.Error("a replay of delivery 4 with a new key accepted")
	}
	if !d.claim("ns", key(9), start.Add(time.Minute)) {
		t.Error("a refused replay claimed its other key")
	}
}

// TestAttack_ReplayEviction: a tenant that floods its own receivers with verified
// deliveries evicts its own remembered deliveries, not another namespace's, which
// stays refused as a replay. The positive control: the flooding namespace's own
// oldest delivery is forgotten (accepted again), and a fresh delivery of the other
// namespace is accepted.
func TestAttack_ReplayEviction(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	key := func(i int) [][sha256.Size]byte { return [][sha256.Size]byte{{byte(i >> 8), byte(i)}} }
	d := newDeliveries(time.Hour, 16, 4)
	if !d.claim("tenant-a", key(1000), now) {
		t.Fatal("tenant A's delivery refused, first time")
	}
	for i := range 100 {
		if !d.claim("tenant-b", key(i), now) {
			t.Fatalf("tenant B's delivery %d refused, first time", i)
		}
	}
	if d.claim("tenant-a", key(1000), now) {
		t.Error("tenant A's delivery accepted again after tenant B's flood: B evicted it")
	}
	if !d.claim("tenant-b", key(0), now) {
		t.Error("tenant B's oldest delivery still remembered past its share (4)")
	}
	if !d.claim("tenant-a", key(1001), now) {
		t.Error("a fresh delivery of tenant A refused")
	}
	if got := d.len(); got > 16 {
		t.Errorf("remembers %d deliveries, want at most 16", got)
	}
}

package operator

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/receiver"
	"github.com/fnops/func-operator/test/gitserver"
)

// signedPush sends a GitHub push of body to the receiver namespace/push, signed with
// token, with the delivery id given, and returns the status (0 when not listening).
func signedPush(t *testing.T, addr, namespace, token, delivery string, body []byte) int {
	t.Helper()
	mac := hmac.New(sha256.New, []byte(token))
	mac.Write(body)
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+receiver.Path(namespace, "push"), bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-GitHub-Delivery", delivery)
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// TestAttack_PushReceiverSharedListing (issue 22, finding 3): tenant B's signed pushes,
// as fast as its receiver takes them, must not make tenant A's Functions list the
// repository they share a listing of: A lists at most once per check floor, as without
// B. Positive controls: B's pushes were verified and acted on (202), B's own Function
// sees a pushed commit at once with an hour's interval, and that one listing is a hint
// every Function on the repository shares: A's Functions see the commit too, with no
// listing of their own.
func TestAttack_PushReceiverSharedListing(t *testing.T) {
	const (
		hookToken = "hook-T0ken-tenants-test-5c3e"
		interval  = 2 * time.Second
		fnsA      = 4
		window    = 8 * time.Second
	)
	root := gitserver.NewRepoRoot(t)
	srv := gitserver.StartHTTP(t, root)
	mono := gitserver.CreateRepo(t, root, "mono")
	files := map[string]string{"b/func.yaml": funcYAML("b", "go")}
	for i := 0; i < fnsA; i++ {
		files[fmt.Sprintf("a%d/func.yaml", i)] = funcYAML(fmt.Sprintf("a%d", i), "go")
	}
	mono.Commit(t, "main", files, "functions")

	nsA, nsB := newNamespace(t), newNamespace(t)
	cfg := config.Defaults()
	cfg.CheckInterval, cfg.GitTimeout = interval, 10*time.Second
	addr := freeAddr(t)
	_, store, _ := startOperatorOptions(t, cfg, nil, func(o *Options) { o.WebhookAddr = addr }, nsA, nsB)
	ctx := context.Background()
	if err := k8sClient.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: nsB, Name: "push", Labels: map[string]string{receiver.ReceiverLabel: "true"}},
		Data:       map[string][]byte{receiver.TokenKey: []byte(hookToken)},
	}); err != nil {
		t.Fatal(err)
	}
	create := func(ns, name, path string) {
		t.Helper()
		if err := k8sClient.Create(ctx, &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.FunctionSpec{Repository: v1alpha1.Repository{URL: srv.URL("mono"), Branch: "main", Path: path}}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < fnsA; i++ {
		create(nsA, fmt.Sprintf("a%d", i), fmt.Sprintf("a%d", i))
	}
	create(nsB, "b", "b")
	for i := 0; i < fnsA; i++ {
		eventually(t, 30*time.Second, sourceReady(nsA, fmt.Sprintf("a%d", i), corev1.ConditionTrue, v1alpha1.ReasonFuncYamlRead))
	}
	eventually(t, 30*time.Second, sourceReady(nsB, "b", corev1.ConditionTrue, v1alpha1.ReasonFuncYamlRead))

	// B's Function is known on the shared listing; B then points it at a Secret that
	// does not exist, so that its own checks stop before any listing: whatever lists
	// the repository during the burst is A's.
	setAuth := func(ref *corev1.LocalObjectReference) {
		t.Helper()
		fn := getFunction(t, nsB, "b")
		fn.Spec.Repository.AuthSecretRef = ref
		if err := k8sClient.Update(ctx, fn); err != nil {
			t.Fatal(err)
		}
	}
	setAuth(&corev1.LocalObjectReference{Name: "absent"})
	eventually(t, 30*time.Second, sourceReady(nsB, "b", corev1.ConditionFalse, v1alpha1.ReasonAuthSecretNotFound))

	// Each push a body of its own, as a host's are (commit, time): a body sent again
	// is a replay, refused.
	pushes := 0
	payload := func() []byte {
		pushes++
		return []byte(fmt.Sprintf(`{"ref":"refs/heads/main","after":"%040d","repository":{"clone_url":%q}}`, pushes, srv.URL("mono")))
	}
	eventually(t, 20*time.Second, func() string {
		if code := signedPush(t, addr, nsB, "wrong", "probe", payload()); code != http.StatusUnauthorized {
			return fmt.Sprintf("a push with a wrong signature got %d, want 401 (the receiver listening)", code)
		}
		return ""
	})
	time.Sleep(time.Second) // the probe's token back in the receiver's bucket

	// The burst: a signed push every 250 ms for the window, each a delivery of its own.
	listingsBefore := srv.RefAdvertisements("mono") - srv.UploadPacks("mono")
	accepted := 0
	for i, end := 0, time.Now().Add(window); time.Now().Before(end); i++ {
		if code := signedPush(t, addr, nsB, hookToken, fmt.Sprintf("burst-%d", i), payload()); code == http.StatusAccepted {
			accepted++
		}
		time.Sleep(250 * time.Millisecond)
	}
	listings := srv.RefAdvertisements("mono") - srv.UploadPacks("mono") - listingsBefore
	// A's Functions share one listing per check floor (90% of the interval), as
	// without B: a moment more at each end of the window.
	maxListings := int(window/(interval*9/10)) + 2
	t.Logf("%d signed pushes of B accepted in %s; the repository was listed %d times (A's own interval allows %d)",
		accepted, window, listings, maxListings)
	if accepted < 10 {
		t.Fatalf("B's receiver accepted %d pushes in %s, want 10 or more (the positive control: they were verified and acted on)", accepted, window)
	}
	if listings > maxListings {
		t.Errorf("during B's burst of %d pushes, A's Functions listed the shared repository %d times, want %d at most (one per check floor)",
			accepted, listings, maxListings)
	}

	// Positive control: with an hour's interval, a verified push of B has B's Function
	// see a new commit at once, with one listing, which A's Functions share.
	cfg.CheckInterval = time.Hour
	store.Set(cfg)
	time.Sleep(interval + time.Second) // every check queued at the old interval has run
	setAuth(nil)
	eventually(t, 30*time.Second, sourceReady(nsB, "b", corev1.ConditionTrue, v1alpha1.ReasonFuncYamlRead))
	second := mono.Commit(t, "main", map[string]string{"README.md": "second"}, "second")
	listingsBefore = srv.RefAdvertisements("mono") - srv.UploadPacks("mono")
	if code := signedPush(t, addr, nsB, hookToken, "control", payload()); code != http.StatusAccepted {
		t.Fatalf("B's signed push of a new commit got %d, want 202", code)
	}
	observed := func(ns, name string) func() string {
		return func() string {
			if g := getFunction(t, ns, name).Status.Git; g == nil || g.ObservedCommit != second {
				return fmt.Sprintf("%s/%s: status.git = %+v, want commit %s (checkInterval 1h)", ns, name, g, second)
			}
			return ""
		}
	}
	eventually(t, 10*time.Second, observed(nsB, "b"))
	for i := 0; i < fnsA; i++ {
		eventually(t, 10*time.Second, observed(nsA, fmt.Sprintf("a%d", i)))
	}
	if got := srv.RefAdvertisements("mono") - srv.UploadPacks("mono") - listingsBefore; got != 1 {
		t.Errorf("the push of a new commit listed the repository %d times, want 1 (B's, shared by A's Functions)", got)
	}
}

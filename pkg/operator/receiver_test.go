package operator

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/receiver"
	"github.com/fnops/func-operator/test/gitserver"
)

// TestOperator_PushWebhook: a signed push to a namespace's receiver checks that
// namespace's Functions on the pushed repository at once, with a check interval of
// an hour; a bad signature is refused and checks nothing, and another namespace's
// receiver cannot check them.
func TestOperator_PushWebhook(t *testing.T) {
	const hookToken = "hook-T0ken-operator-test-91ab"
	root := gitserver.NewRepoRoot(t)
	srv := gitserver.StartHTTP(t, root)
	repo := gitserver.CreateRepo(t, root, "hooked")
	repo.Commit(t, "main", map[string]string{"func.yaml": funcYAML("hooked", "go")}, "first")

	ns, other := newNamespace(t), newNamespace(t)
	cfg := config.Defaults()
	cfg.CheckInterval, cfg.GitTimeout = time.Hour, 10*time.Second
	addr := freeAddr(t)
	startOperatorOptions(t, cfg, nil, func(o *Options) { o.WebhookAddr = addr }, ns, other)
	ctx := context.Background()
	for _, n := range []string{ns, other} {
		if err := k8sClient.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: n, Name: "push", Labels: map[string]string{receiver.ReceiverLabel: "true"}},
			Data:       map[string][]byte{receiver.TokenKey: []byte(hookToken)},
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := k8sClient.Create(ctx, &v1alpha1.Function{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hooked"},
		Spec:       v1alpha1.FunctionSpec{Repository: v1alpha1.Repository{URL: srv.URL("hooked"), Branch: "main"}},
	}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, sourceReady(ns, "hooked", corev1.ConditionTrue, v1alpha1.ReasonFuncYamlRead))

	// The git host's own form of the URL: https://host/org/repo.git and the like
	// normalize to the same key as the Function's.
	payload := []byte(fmt.Sprintf(`{"ref":"refs/heads/main","repository":{"clone_url":%q,"html_url":%q}}`,
		srv.URL("hooked"), strings.TrimSuffix(srv.URL("hooked"), ".git")))
	push := func(namespace, token string) int {
		t.Helper()
		mac := hmac.New(sha256.New, []byte(token))
		mac.Write(payload)
		req, err := http.NewRequest(http.MethodPost, "http://"+addr+receiver.Path(namespace, "push"), bytes.NewReader(payload))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Event", "push")
		req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0 // not listening yet
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	observed := func() string {
		g := getFunction(t, ns, "hooked").Status.Git
		if g == nil {
			return ""
		}
		return g.ObservedCommit
	}
	// The receiver listens once the operator leads.
	eventually(t, 20*time.Second, func() string {
		if code := push(ns, "wrong"); code != http.StatusUnauthorized {
			return fmt.Sprintf("a push with a wrong signature got %d, want 401", code)
		}
		return ""
	})

	second := repo.Commit(t, "main", map[string]string{"func.yaml": funcYAML("hooked", "node")}, "second")
	// Refused: a wrong signature, and the other namespace's receiver.
	if code := push(ns, "wrong-"+hookToken); code != http.StatusUnauthorized {
		t.Errorf("a push with a wrong signature got %d, want 401", code)
	}
	if code := push(other, hookToken); code != http.StatusOK {
		t.Errorf("a push to the other namespace's receiver got %d, want 200 (no Function there)", code)
	}
	time.Sleep(3 * time.Second)
	if got := observed(); got == second {
		t.Fatalf("the Function saw commit %s without a verified push of its own namespace (checkInterval 1h)", second)
	}

	// A verified push checks it at once, though the listing was made moments ago.
	if code := push(ns, hookToken); code != http.StatusAccepted {
		t.Fatalf("a signed push got %d, want 202", code)
	}
	eventually(t, 10*time.Second, func() string {
		if got := observed(); got != second {
			return fmt.Sprintf("status.git.observedCommit = %s, want %s", got, second)
		}
		return ""
	})
}

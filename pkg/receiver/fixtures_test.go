package receiver

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

const (
	testNamespace = "tenant-a"
	testName      = "github-push"
	testToken     = "t0ps3cret-Token-Value-0123456789"
)

// call is one RepositoryPushed.
type call struct {
	Namespace string
	URLs      []string
}

// fakeTrigger records its calls and enqueues n Functions.
type fakeTrigger struct {
	mu    sync.Mutex
	calls []call
	n     int
}

func (f *fakeTrigger) RepositoryPushed(_ context.Context, namespace string, urls []string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call{Namespace: namespace, URLs: urls})
	return f.n
}

func (f *fakeTrigger) Calls() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.calls...)
}

// fakeSecrets is an API server's Secrets: a Secret, or an error for a namespace.
type fakeSecrets struct {
	mu      sync.Mutex
	secrets map[string]*corev1.Secret
	errs    map[string]error // by namespace
	reads   int
}

func newFakeSecrets(secrets ...*corev1.Secret) *fakeSecrets {
	f := &fakeSecrets{secrets: map[string]*corev1.Secret{}, errs: map[string]error{}}
	for _, s := range secrets {
		f.put(s)
	}
	return f
}

func (f *fakeSecrets) put(s *corev1.Secret) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.secrets[s.Namespace+"/"+s.Name] = s
}

func (f *fakeSecrets) get(_ context.Context, namespace, name string) (*corev1.Secret, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	if err := f.errs[namespace]; err != nil {
		return nil, err
	}
	s, ok := f.secrets[namespace+"/"+name]
	if !ok {
		return nil, nil
	}
	return s.DeepCopy(), nil
}

func (f *fakeSecrets) Reads() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads
}

func forbidden(namespace string) error {
	return apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "x", fmt.Errorf("namespace %s", namespace))
}

// receiverSecretOf returns a receiver Secret with token.
func receiverSecretOf(namespace, name, token string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{ReceiverLabel: "true"}},
		Data:       map[string][]byte{TokenKey: []byte(token)},
	}
}

// fixture is a Receiver with fakes around it, and the log it wrote.
type fixture struct {
	r       *Receiver
	trigger *fakeTrigger
	secrets *fakeSecrets
	clock   *clocktesting.FakeClock
	logs    *bytes.Buffer
	logger  logr.Logger
	bodies  []string // every response body
}

func newFixture(t *testing.T, opts Options, secrets ...*corev1.Secret) *fixture {
	t.Helper()
	f := &fixture{
		trigger: &fakeTrigger{n: 1},
		secrets: newFakeSecrets(secrets...),
		clock:   clocktesting.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)),
		logs:    &bytes.Buffer{},
	}
	var mu sync.Mutex
	f.logger = funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintln(f.logs, prefix, args)
	}, funcr.Options{Verbosity: 10})
	opts.Secrets = f.secrets.get
	opts.Trigger = f.trigger
	f.r = New(opts)
	f.r.clock = f.clock
	return f
}

// do serves req with the fixture's logger.
func (f *fixture) do(req *http.Request) *http.Response {
	req = req.WithContext(log.IntoContext(req.Context(), f.logger))
	rec := httptest.NewRecorder()
	f.r.ServeHTTP(rec, req)
	res := rec.Result()
	body, _ := io.ReadAll(res.Body)
	res.Body = io.NopCloser(bytes.NewReader(body))
	f.bodies = append(f.bodies, string(body))
	return res
}

// count is the value of the requests counter for result.
func (f *fixture) count(result string) float64 {
	return testutil.ToFloat64(f.r.requests.WithLabelValues(result))
}

// counts are the requests counter's values that are not 0.
func (f *fixture) counts() map[string]float64 {
	m := map[string]float64{}
	for _, r := range results {
		if v := f.count(r); v != 0 {
			m[r] = v
		}
	}
	return m
}

func hmacHex(token string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(token))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// Payloads as the git hosts send them, cut to what matters and a little more.
const (
	githubPush = `{"ref":"refs/heads/main","before":"0000","after":"1111","created":false,"deleted":false,
"repository":{"id":1,"name":"repo","full_name":"org/repo","private":false,"html_url":"https://github.com/org/repo",
"git_url":"git://github.com/org/repo.git","ssh_url":"git@github.com:org/repo.git","clone_url":"https://github.com/org/repo.git",
"created_at":1700000000,"pushed_at":1700000001,"owner":{"login":"org"}},"pusher":{"name":"dev"},"commits":[]}`
	gitlabPush = `{"object_kind":"push","event_name":"push","ref":"refs/heads/main","project_id":15,
"project":{"id":15,"name":"repo","web_url":"https://gitlab.example.com/group/repo","git_ssh_url":"git@gitlab.example.com:group/repo.git",
"git_http_url":"https://gitlab.example.com/group/repo.git","path_with_namespace":"group/repo"},
"repository":{"name":"repo","url":"git@gitlab.example.com:group/repo.git","homepage":"https://gitlab.example.com/group/repo",
"git_http_url":"https://gitlab.example.com/group/repo.git","git_ssh_url":"git@gitlab.example.com:group/repo.git"},"commits":[]}`
	giteaPush = `{"ref":"refs/heads/main","before":"0000","after":"1111",
"repository":{"id":1,"name":"repo","full_name":"org/repo","html_url":"https://gitea.example.com/org/repo",
"ssh_url":"ssh://git@gitea.example.com:2222/org/repo.git","clone_url":"https://gitea.example.com/org/repo.git"},"commits":[]}`
)

var (
	githubURLs = []string{"https://github.com/org/repo.git", "git@github.com:org/repo.git", "git://github.com/org/repo.git", "https://github.com/org/repo"}
	gitlabURLs = []string{"https://gitlab.example.com/group/repo.git", "git@gitlab.example.com:group/repo.git", "https://gitlab.example.com/group/repo"}
	giteaURLs  = []string{"https://gitea.example.com/org/repo.git", "ssh://git@gitea.example.com:2222/org/repo.git", "https://gitea.example.com/org/repo"}
)

// signer makes a provider's request for a receiver.
type signer struct {
	name    string
	payload string
	urls    []string
	// headers signs body with token, for event.
	headers func(event, token string, body []byte) http.Header
	push    string // the push event's name
}

var signers = []signer{
	{
		name: ProviderGitHub, payload: githubPush, urls: githubURLs, push: "push",
		headers: func(event, token string, body []byte) http.Header {
			return http.Header{"X-Github-Event": {event}, "X-Hub-Signature-256": {"sha256=" + hmacHex(token, body)},
				"X-Github-Delivery": {fmt.Sprintf("d-%d", deliverySeq.Add(1))}}
		},
	},
	{
		name: ProviderGitLab, payload: gitlabPush, urls: gitlabURLs, push: "Push Hook",
		headers: func(event, token string, _ []byte) http.Header {
			return http.Header{"X-Gitlab-Event": {event}, "X-Gitlab-Token": {token}}
		},
	},
	{
		name: ProviderGitea, payload: giteaPush, urls: giteaURLs, push: "push",
		headers: func(event, token string, body []byte) http.Header {
			sig := hmacHex(token, body)
			// Gitea sends GitHub's and Gogs's headers too.
			return http.Header{"X-Gitea-Event": {event}, "X-Gitea-Signature": {sig}, "X-Gogs-Event": {event}, "X-Gogs-Signature": {sig},
				"X-Github-Event": {event}, "X-Hub-Signature-256": {"sha256=" + sig}}
		},
	},
	{
		name: ProviderForgejo, payload: giteaPush, urls: giteaURLs, push: "push",
		headers: func(event, token string, body []byte) http.Header {
			sig := hmacHex(token, body)
			return http.Header{"X-Forgejo-Event": {event}, "X-Forgejo-Signature": {sig}, "X-Gitea-Event": {event}, "X-Gitea-Signature": {sig},
				"X-Github-Event": {event}, "X-Hub-Signature-256": {"sha256=" + sig}}
		},
	},
}

// request is a POST of body to path with headers, as JSON.
func request(path string, h http.Header, body string) *http.Request {
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	for k, vs := range h {
		req.Header[http.CanonicalHeaderKey(k)] = vs
	}
	if req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}

// request is s's signed push to the test receiver, a delivery of its own.
func (s signer) request(token string) *http.Request {
	body := fresh(s.payload)
	return request(Path(testNamespace, testName), s.headers(s.push, token, []byte(body)), body)
}

// deliverySeq numbers the test deliveries.
var deliverySeq atomic.Int64

// fresh is payload as a delivery of its own: a push the receiver has not seen, not
// a replay of one (the hosts' bodies differ by commit and time).
func fresh(payload string) string {
	return fmt.Sprintf(`{"test_delivery":%d,`, deliverySeq.Add(1)) + strings.TrimPrefix(payload, "{")
}

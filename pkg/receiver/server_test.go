package receiver

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

var _ manager.LeaderElectionRunnable = &Receiver{}
var _ manager.Runnable = &Receiver{}

// TestStart: Start serves the receivers on Addr and, when its context ends, lets a
// request under way finish before it returns.
func TestStart(t *testing.T) {
	gh := signers[0]
	secrets := newFakeSecrets(receiverSecretOf(testNamespace, testName, testToken))
	entered, release := make(chan struct{}), make(chan struct{})
	trigger := TriggerFunc(func(_ context.Context, namespace string, urls []string) int {
		close(entered)
		<-release
		return 1
	})
	r := New(Options{Addr: "127.0.0.1:0", Secrets: secrets.get, Trigger: trigger})
	if !r.NeedLeaderElection() {
		t.Errorf("NeedLeaderElection false: a push would enqueue into a controller that does not run")
	}
	addrs := make(chan net.Addr, 1)
	r.listening = func(a net.Addr) { addrs <- a }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- r.Start(ctx) }()
	var addr net.Addr
	select {
	case addr = <-addrs:
	case err := <-stopped:
		t.Fatalf("Start: %v", err)
	}
	url := "http://" + addr.String() + Path(testNamespace, testName)
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(gh.payload))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = gh.headers("push", testToken, []byte(gh.payload))
	req.Header.Set("Content-Type", "application/json")
	type result struct {
		status int
		body   string
		err    error
	}
	answered := make(chan result, 1)
	go func() {
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- result{err: err}
			return
		}
		defer func() { _ = res.Body.Close() }()
		b, _ := io.ReadAll(res.Body)
		answered <- result{status: res.StatusCode, body: string(b)}
	}()
	<-entered
	cancel()
	select {
	case err := <-stopped:
		t.Fatalf("Start returned (%v) with a request under way", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	got := <-answered
	if got.err != nil || got.status != http.StatusAccepted || got.body != "1 Function(s) to check\n" {
		t.Errorf("answer %d %q %v, want 202", got.status, got.body, got.err)
	}
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("Start: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Start did not return")
	}
}

func TestStartListenError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	r := New(Options{Addr: ln.Addr().String(), Secrets: newFakeSecrets().get, Trigger: &fakeTrigger{}})
	err = r.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "listening for webhooks on "+ln.Addr().String()) {
		t.Errorf("Start on a busy address: %v", err)
	}
}

func TestNewRequires(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("New without Secrets and Trigger did not panic")
		}
	}()
	New(Options{})
}

func TestDefaults(t *testing.T) {
	got := Options{}.withDefaults()
	want := Options{Addr: ":9292", MaxBodyBytes: 1 << 20, ReceiverRate: 1, ReceiverBurst: 10, GlobalRate: 20, GlobalBurst: 100,
		SecretTTL: 5 * time.Second, ShutdownTimeout: 10 * time.Second}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}

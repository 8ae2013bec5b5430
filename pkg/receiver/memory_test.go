package receiver

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestAttack_BodiesInFlight (issue 22, receiver memory): many clients of real
// receivers in eight namespaces each announce a body of MaxBodyBytes, send half of
// it and stall. The receiver must not hold them all in memory: the heap grows by at
// most the bodies in flight it allows (and a margin for the connections), and the
// clients past it are answered 503 at once. The positive control: the receiver
// takes the first ones, up to its budget, and a complete push still triggers
// afterwards.
//
// The rates are raised out of the way: a tenant with many receivers gets the global
// rate (20 a second by default, for the 10 s a body may take: 200 bodies).
func TestAttack_BodiesInFlight(t *testing.T) {
	const (
		clients    = 64
		namespaces = 8
		maxBody    = 1 << 20
	)
	all := make([]*corev1.Secret, 0, clients+1)
	for i := range namespaces {
		for j := range clients / namespaces {
			all = append(all, receiverSecretOf(fmt.Sprintf("tenant-%d", i), fmt.Sprintf("hook-%d", j), testToken))
		}
	}
	all = append(all, receiverSecretOf(testNamespace, testName, testToken))
	addr := startReceiver(t, newFakeSecrets(all...), maxBody)

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var (
		mu    sync.Mutex
		conns []net.Conn
		busy  int
		wg    sync.WaitGroup
	)
	for i := range namespaces {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, c := stall(t, addr, receivers(fmt.Sprintf("tenant-%d", i), clients/namespaces), maxBody)
			mu.Lock()
			defer mu.Unlock()
			busy += b
			conns = append(conns, c...)
		}()
	}
	wg.Wait()
	// What the receiver holds is reachable: a collection leaves it, and takes the rest.
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	allowed := int64(maxBodiesInFlight) + 6<<20
	t.Logf("%d clients, each half of a %d-byte body sent: heap grew by %.1f MiB; %d answered 503 at once",
		clients, maxBody, float64(grown)/(1<<20), busy)
	if grown > allowed {
		t.Errorf("the heap grew by %d bytes with %d stalled bodies, want at most %d (the bodies in flight allowed and a margin)",
			grown, clients, allowed)
	}
	if want := clients - maxBodiesInFlight/maxBody; busy < want {
		t.Errorf("%d clients answered 503 at once, want %d or more (past the bodies in flight allowed)", busy, want)
	}
	if busy == clients {
		t.Errorf("every client was answered 503: the receiver took none (the positive control)")
	}
	for _, c := range conns {
		_ = c.Close()
	}
	// A complete push is taken once the stalled ones are gone.
	eventually(t, 5*time.Second, func() string { return signedPush(t, addr, testNamespace) })
}

// TestAttack_NamespaceShare: a tenant whose clients stall on its own receivers holds
// at most its namespace's share of the bodies in flight, not the whole budget:
// another namespace's push is taken meanwhile. (Before shares, 16 stalled bodies of
// tenant B held all 16 MiB, and tenant A's push was answered 503.) The positive
// control: B's first bodies are taken, up to its share.
func TestAttack_NamespaceShare(t *testing.T) {
	const maxBody = 1 << 20
	n := maxBodiesInFlight / maxBody
	secrets := newFakeSecrets(receiverSecretOf(testNamespace, testName, testToken))
	for _, p := range receivers("tenant-b", n) {
		secrets.put(receiverSecretOf("tenant-b", p[strings.LastIndex(p, "/")+1:], testToken))
	}
	addr := startReceiver(t, secrets, maxBody)
	busy, conns := stall(t, addr, receivers("tenant-b", n), maxBody)
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	if taken, want := n-busy, maxNamespaceBodies/maxBody; taken != want {
		t.Errorf("tenant B had %d of its %d stalled bodies taken, want %d (its share)", taken, n, want)
	}
	if msg := signedPush(t, addr, testNamespace); msg != "" {
		t.Errorf("tenant A's push while tenant B stalls: %s", msg)
	}
}

// TestAttack_ReceiverShare: one receiver reads one body as large as may be at a
// time: a second stalled one is answered 503 at once, so that filling a namespace's
// share takes as many receivers. The positive control: the first is taken.
func TestAttack_ReceiverShare(t *testing.T) {
	const maxBody = 1 << 20
	addr := startReceiver(t, newFakeSecrets(receiverSecretOf(testNamespace, testName, testToken)), maxBody)
	one := Path(testNamespace, testName)
	busy, conns := stall(t, addr, []string{one, one, one}, maxBody)
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	if busy != 2 {
		t.Errorf("%d of 3 stalled bodies to one receiver answered 503 at once, want 2 (one taken)", busy)
	}
}

// receivers are the paths of n receivers hook-0 … of namespace.
func receivers(namespace string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = Path(namespace, fmt.Sprintf("hook-%d", i))
	}
	return out
}

// startReceiver serves a Receiver on the loopback until the test ends, with the
// rates raised out of the way, and returns its address.
func startReceiver(t *testing.T, secrets *fakeSecrets, maxBody int64) string {
	t.Helper()
	r := New(Options{Addr: "127.0.0.1:0", Secrets: secrets.get, Trigger: &fakeTrigger{n: 1}, MaxBodyBytes: maxBody,
		ReceiverRate: 1000, ReceiverBurst: 1000, GlobalRate: 1000, GlobalBurst: 1000})
	addrs := make(chan net.Addr, 1)
	r.listening = func(a net.Addr) { addrs <- a }
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- r.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Errorf("Start: %v", err)
		}
	})
	return (<-addrs).String()
}

// stall sends a request to each path at once, each announcing a body of maxBody
// bytes and sending half of it, and returns how many were answered 503 at once, and
// the connections (the taken ones wait for the rest of their bodies).
func stall(t *testing.T, addr string, paths []string, maxBody int) (busy int, conns []net.Conn) {
	half := strings.Repeat(" ", maxBody/2) // one for all: the test's own garbage stays small
	var (
		wg sync.WaitGroup
		mu sync.Mutex
	)
	for _, path := range paths {
		msg := []byte(fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-GitHub-Event: push\r\n"+
			"X-Hub-Signature-256: sha256=00\r\nContent-Length: %d\r\n\r\n", path, maxBody) + half)
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			_, _ = c.Write(msg)
			// A client past the budget is answered at once; one taken is read, and
			// waits for the rest of its body.
			_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
			res, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				return
			}
			_ = res.Body.Close()
			if res.StatusCode == http.StatusServiceUnavailable {
				mu.Lock()
				busy++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return busy, conns
}

// signedPush sends a signed GitHub push to namespace's receiver: "" when it is taken (202).
func signedPush(t *testing.T, addr, namespace string) string {
	gh := signers[0]
	body := fresh(gh.payload)
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+Path(namespace, testName), strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = gh.headers("push", testToken, []byte(body))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err.Error()
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusAccepted {
		return fmt.Sprintf("a signed push got %d, want 202", res.StatusCode)
	}
	return ""
}

// eventually polls check until it returns "" or timeout passes.
func eventually(t *testing.T, timeout time.Duration, check func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		msg := check()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", timeout, msg)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

package webhook

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
)

// TestAttack_BodiesInFlight (issue 22, receiver memory): many clients of a real
// receiver each announce a body of MaxBodyBytes, send half of it and stall. The
// receiver must not hold them all in memory: the heap grows by at most the bodies
// in flight it allows (and a margin for the connections), and the clients past it
// are answered 503 at once. The positive control: the receiver takes the first
// ones, up to its budget, and a complete push still triggers afterwards.
//
// The rates are raised out of the way: a tenant with many receivers gets the global
// rate (20 a second by default, for the 30 s a body may take: 600 bodies).
func TestAttack_BodiesInFlight(t *testing.T) {
	const (
		clients = 64
		maxBody = 1 << 20
	)
	secrets := newFakeSecrets(receiverSecretOf(testNamespace, testName, testToken))
	trigger := &fakeTrigger{n: 1}
	r := New(Options{Addr: "127.0.0.1:0", Secrets: secrets.get, Trigger: trigger, MaxBodyBytes: maxBody,
		ReceiverRate: 1000, ReceiverBurst: 1000, GlobalRate: 1000, GlobalBurst: 1000})
	addrs := make(chan net.Addr, 1)
	r.listening = func(a net.Addr) { addrs <- a }
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- r.Start(ctx) }()
	addr := (<-addrs).String()
	t.Cleanup(func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Errorf("Start: %v", err)
		}
	})

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-GitHub-Event: push\r\n"+
		"X-Hub-Signature-256: sha256=00\r\nContent-Length: %d\r\n\r\n", Path(testNamespace, testName), maxBody)
	msg := []byte(head + strings.Repeat(" ", maxBody/2)) // one for all: the test's own garbage stays small
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
		busy  int
	)
	for i := 0; i < clients; i++ {
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
	gh := signers[0]
	eventually(t, 5*time.Second, func() string {
		body := fresh(gh.payload)
		req, err := http.NewRequest(http.MethodPost, "http://"+addr+Path(testNamespace, testName), strings.NewReader(body))
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
	})
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

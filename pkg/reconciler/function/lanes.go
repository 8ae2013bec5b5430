package function

import (
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/google/go-containerregistry/pkg/name"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/rerror"
)

// Lanes keeps one remote host, and one namespace (tenant), from holding every
// worker: a repository or registry is read by at most half the workers at once, and
// by one once it was slow (an operation ran into its timeout) until it answers in
// time again; the Functions of one namespace hold at most half the workers in
// remote reads, whatever hosts they name. A Function without a free lane is
// checked again shortly, without holding a worker: a tenant's slow or hanging hosts
// delay its own Functions, not everyone's checks.
type Lanes struct {
	// Workers is how many Functions are reconciled at once.
	Workers int
	// SlowFor is how long a host that timed out stays in the slow lane, unless it
	// answers in time before (default 10 minutes).
	SlowFor time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time

	mu        sync.Mutex
	inFlight  map[string]int
	slowUntil map[string]time.Time
}

// laneWait is how soon a Function without a free lane is checked again (jittered
// by up to half): soon, as lanes of hosts that answer free in moments.
const laneWait = 500 * time.Millisecond

// Enter takes a lane of host and one of namespace, when both are free. The caller
// must call leave once, with whether the operation ran into its timeout.
func (l *Lanes) Enter(host, namespace string) (leave func(timedOut bool), ok bool) {
	if l == nil {
		return func(bool) {}, true
	}
	tenant := "namespace " + namespace
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inFlight == nil {
		l.inFlight, l.slowUntil = map[string]int{}, map[string]time.Time{}
	}
	if (host != "" && l.inFlight[host] >= l.limit(host)) || l.inFlight[tenant] >= max(1, l.Workers/2) {
		return nil, false
	}
	if host != "" {
		l.inFlight[host]++
	}
	l.inFlight[tenant]++
	var once sync.Once
	return func(timedOut bool) {
		once.Do(func() { l.leave(host, tenant, timedOut) })
	}, true
}

func (l *Lanes) leave(host, tenant string, timedOut bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range []string{host, tenant} {
		if k == "" {
			continue
		}
		if l.inFlight[k]--; l.inFlight[k] <= 0 {
			delete(l.inFlight, k)
		}
	}
	if host == "" {
		return
	}
	if timedOut {
		slowFor := l.SlowFor
		if slowFor <= 0 {
			slowFor = 10 * time.Minute
		}
		l.slowUntil[host] = l.now().Add(slowFor)
		return
	}
	delete(l.slowUntil, host)
}

// limit is how many operations on host may run at once.
func (l *Lanes) limit(host string) int {
	if until, ok := l.slowUntil[host]; ok {
		if l.now().Before(until) {
			return 1
		}
		delete(l.slowUntil, host)
	}
	return max(1, l.Workers/2)
}

// Slow reports whether host is in the slow lane.
func (l *Lanes) Slow(host string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	until, ok := l.slowUntil[host]
	return ok && l.now().Before(until)
}

func (l *Lanes) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

// gitHost is the host:port a repository URL is read from, "" when it cannot tell.
func gitHost(url string) string {
	ep, err := transport.NewEndpoint(url)
	if err != nil || ep.Host == "" {
		return ""
	}
	port := ep.Port
	if port == 0 {
		switch ep.Protocol {
		case "https":
			port = 443
		case "http":
			port = 80
		case "ssh":
			port = 22
		}
	}
	return net.JoinHostPort(strings.Trim(strings.ToLower(ep.Host), "[]"), strconv.Itoa(port))
}

// registryHost is the registry an image is read from, "" when it cannot tell.
func registryHost(image string) string {
	ref, err := name.ParseReference(strings.TrimSpace(image))
	if err != nil {
		return ""
	}
	return "registry " + ref.Context().RegistryStr()
}

// laneBusy is the wait of a Function whose host has no free lane: nothing about
// the Function changes, and it is checked again shortly.
func laneBusy(host string) error {
	return rerror.NewWaiting(v1alpha1.ReasonHostBusy, wait.Jitter(laneWait, 0.5),
		"%s, or this namespace's Functions, hold as many workers as they may: checked again shortly", host)
}

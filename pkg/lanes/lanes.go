package lanes

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/google/go-containerregistry/pkg/name"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/rerror"
)

// Lanes keeps one remote host, and one namespace (tenant), from holding every
// worker: a repository or registry is read by at most half the workers at once; the
// Functions of one namespace hold at most half the workers in remote reads,
// whatever hosts they name; namespaces that already read hold all but one worker
// between them, the last kept for a namespace that reads nothing yet (so that, with
// 3 workers or more, two namespaces of hanging hosts cannot hold every worker: each
// namespace that reads nothing yet is let in, so with 2 workers two can); and
// a namespace whose read of a host was slow (ran into its timeout) reads that host
// one at a time until it answers that namespace in time again. A Function without a free lane is checked again shortly, without
// holding a worker: a tenant's slow or hanging hosts delay its own Functions, not
// everyone's checks.
//
// The slow lane is kept per host and namespace, not per host: on a registry or git
// host that tenants share, one tenant's huge image or repository (which times out
// at every check) would otherwise slow that host for everyone for SlowFor, and
// another tenant's read in time would lift it for the tenant whose reads time out.
// A host down for everyone puts each namespace reading it in its slow lane at its
// first timeout; the host's own cap (half the workers) holds meanwhile.
type Lanes struct {
	// Workers is how many Functions are reconciled at once.
	Workers int
	// SlowFor is how long a namespace's reads of a host that timed out stay in the
	// slow lane, unless the host answers them in time before (default 10 minutes).
	SlowFor time.Duration
	// Clock is the clock of the slow lanes; the real clock when nil.
	Clock clock.PassiveClock

	mu        sync.Mutex
	inFlight  map[string]int
	slowUntil map[string]time.Time // slowKey -> until when
}

// laneWait is how soon a Function without a free lane is checked again (jittered
// by up to half): soon, as lanes of hosts that answer free in moments.
const laneWait = 500 * time.Millisecond

// allReads is the inFlight key that counts every remote read in flight: hosts have
// no spaces, and the other keys do not read so.
const allReads = "every read"

// slowKey names the reads of host by namespace's Functions.
func slowKey(host, namespace string) string { return host + " for namespace " + namespace }

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
	half := max(1, l.Workers/2)
	hk := ""
	if host != "" {
		hk = slowKey(host, namespace)
		if l.inFlight[host] >= half || (l.slow(hk) && l.inFlight[hk] >= 1) {
			return nil, false
		}
	}
	if n := l.inFlight[tenant]; n >= half || (n > 0 && l.inFlight[allReads] >= l.Workers-1) {
		return nil, false
	}
	for _, k := range []string{host, hk, tenant, allReads} {
		if k != "" {
			l.inFlight[k]++
		}
	}
	var once sync.Once
	return func(timedOut bool) {
		once.Do(func() { l.leave(host, hk, tenant, timedOut) })
	}, true
}

func (l *Lanes) leave(host, hk, tenant string, timedOut bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range []string{host, hk, tenant, allReads} {
		if k == "" {
			continue
		}
		if l.inFlight[k]--; l.inFlight[k] <= 0 {
			delete(l.inFlight, k)
		}
	}
	if hk == "" {
		return
	}
	if timedOut {
		slowFor := l.SlowFor
		if slowFor <= 0 {
			slowFor = 10 * time.Minute
		}
		l.slowUntil[hk] = l.now().Add(slowFor)
		return
	}
	delete(l.slowUntil, hk)
}

// slow reports whether the reads slowKey hk names are in the slow lane.
func (l *Lanes) slow(hk string) bool {
	until, ok := l.slowUntil[hk]
	if !ok {
		return false
	}
	if l.now().Before(until) {
		return true
	}
	delete(l.slowUntil, hk)
	return false
}

// Slow reports whether namespace's reads of host are in the slow lane.
func (l *Lanes) Slow(host, namespace string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.slow(slowKey(host, namespace))
}

func (l *Lanes) now() time.Time {
	if l.Clock != nil {
		return l.Clock.Now()
	}
	return time.Now()
}

// GitHost is the host:port a repository URL is read from, "" when it cannot tell.
func GitHost(url string) string {
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

// RegistryHost is the registry an image is read from, "" when it cannot tell.
func RegistryHost(image string) string {
	ref, err := name.ParseReference(strings.TrimSpace(image))
	if err != nil {
		return ""
	}
	return "registry " + ref.Context().RegistryStr()
}

// Busy is the wait of a Function whose host has no free lane: nothing about the
// Function changes, and it is checked again shortly.
func Busy(host string) error {
	return &rerror.Waiting{Reason: v1alpha1.ReasonHostBusy, RequeueAfter: wait.Jitter(laneWait, 0.5), Err: &BusyError{Host: host}}
}

// BusyError is a Function's wait for a lane of its host (HostBusy): callers tell it
// with IsHostBusy, never by its reason.
type BusyError struct{ Host string }

func (e *BusyError) Error() string {
	return e.Host + ", or this namespace's Functions, hold as many workers as they may: checked again shortly"
}

// IsHostBusy reports whether err's chain holds a BusyError.
func IsHostBusy(err error) bool {
	var b *BusyError
	return errors.As(err, &b)
}

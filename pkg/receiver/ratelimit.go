package receiver

import (
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// limiter keeps a token bucket (golang.org/x/time/rate) for each key: a full bucket
// is the same as none, so buckets are dropped once full again, and there are at most
// max of them.
type limiter struct {
	rate  rate.Limit
	burst int
	max   int

	mu      sync.Mutex
	buckets map[string]*rate.Limiter
}

func newLimiter(r float64, burst, max int) *limiter {
	return &limiter{rate: rate.Limit(r), burst: burst, max: max, buckets: map[string]*rate.Limiter{}}
}

// take takes a token of key's bucket at now. It returns 0 when it could, else how
// long until one is there.
func (l *limiter) take(key string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[key]
	if !ok {
		if len(l.buckets) >= l.max {
			l.sweep(now)
		}
		b = rate.NewLimiter(l.rate, l.burst)
		l.buckets[key] = b
	}
	if b.AllowN(now, 1) {
		return 0
	}
	// rate's own delay would reserve the token; a refused request takes none.
	return time.Duration(math.Ceil((1 - b.TokensAt(now)) / float64(l.rate) * float64(time.Second)))
}

// sweep drops the full buckets and, if that is not enough, any one.
func (l *limiter) sweep(now time.Time) {
	for k, b := range l.buckets {
		if b.TokensAt(now) >= float64(l.burst) {
			delete(l.buckets, k)
		}
	}
	for k := range l.buckets {
		if len(l.buckets) < l.max {
			break
		}
		delete(l.buckets, k) // a fresh burst for one receiver, rather than unbounded memory
	}
}

// len is how many buckets l holds.
func (l *limiter) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}

package receiver

import (
	"math"
	"sync"
	"time"
)

// bucket is a token bucket: it holds up to burst tokens and gains rate a second.
type bucket struct {
	tokens float64
	last   time.Time
}

// refill brings b's tokens up to now.
func (b *bucket) refill(now time.Time, rate, burst float64) {
	if elapsed := now.Sub(b.last); elapsed > 0 {
		b.tokens = math.Min(burst, b.tokens+elapsed.Seconds()*rate)
		b.last = now
	}
}

// limiter keeps a bucket for each key: a full bucket is the same as none, so buckets
// are dropped once full again, and there are at most max of them.
type limiter struct {
	rate, burst float64
	max         int

	mu      sync.Mutex
	buckets map[string]*bucket
}

func newLimiter(rate float64, burst, max int) *limiter {
	return &limiter{rate: rate, burst: float64(burst), max: max, buckets: map[string]*bucket{}}
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
		b = &bucket{tokens: l.burst, last: now}
		l.buckets[key] = b
	}
	b.refill(now, l.rate, l.burst)
	if b.tokens >= 1 {
		b.tokens--
		return 0
	}
	return time.Duration(math.Ceil((1 - b.tokens) / l.rate * float64(time.Second)))
}

// sweep drops the full buckets and, if that is not enough, any one.
func (l *limiter) sweep(now time.Time) {
	for k, b := range l.buckets {
		if b.refill(now, l.rate, l.burst); b.tokens >= l.burst {
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

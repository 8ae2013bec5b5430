// Package buildqueue admits rebuilds under a fleet-wide budget, in a fair order.
package buildqueue

import (
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Key names a Function.
type Key = types.NamespacedName

// Seed returns the builds that already run and the Functions that already wait, as
// the cluster records them: it rebuilds the queue after an operator restart.
type Seed func() (running []Key, waiting map[Key]time.Time, err error)

// Queue holds the running rebuilds and the ones that wait for a slot. At most
// limit() run at once; a freed slot goes to the waiting Function whose namespace runs
// the fewest rebuilds (counting those ahead of it in the queue), then to the one that
// waits longest. So one namespace with a hundred outdated functions cannot starve
// another with one. Queue is safe for concurrent use.
//
// The waiting Functions are kept sorted per namespace, so a Function's position costs
// one step per namespace, not a sort of the whole queue.
type Queue struct {
	limit func() int
	wake  func(Key)
	seed  Seed

	mu      sync.Mutex
	seeded  bool
	running map[Key]struct{}
	// runningIn counts the running Keys by namespace.
	runningIn map[string]int
	// waiting maps a waiting Key to when it joined the queue.
	waiting map[Key]time.Time
	// byNS holds the waiting Keys of each namespace, oldest first.
	byNS map[string][]Key
}

// New returns a Queue admitting at most limit() rebuilds at once. wake is called,
// without the Queue's lock held, for each waiting Key that a freed slot may admit.
// seed, when not nil, is called once, before the first decision.
func New(limit func() int, wake func(Key), seed Seed) *Queue {
	return &Queue{
		limit:     limit,
		wake:      wake,
		seed:      seed,
		running:   map[Key]struct{}{},
		runningIn: map[string]int{},
		waiting:   map[Key]time.Time{},
		byNS:      map[string][]Key{},
	}
}

// Admit asks a slot for key, which needs a rebuild since queuedAt. When admitted, key
// holds a slot until Release or Forget. Otherwise it waits in the queue, at position
// (1 is next) of length.
func (q *Queue) Admit(key Key, queuedAt time.Time) (admitted bool, position, length int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	seeded := q.ensureSeeded()
	if _, ok := q.running[key]; ok {
		return true, 0, len(q.waiting)
	}
	if t, ok := q.waiting[key]; !ok || !t.Equal(queuedAt) {
		q.removeWaiting(key)
		q.addWaiting(key, queuedAt)
	}
	pos := q.position(key)
	// Until the running builds are known, nothing is admitted: the budget could be spent.
	if seeded && pos <= q.limit()-len(q.running) {
		q.removeWaiting(key)
		q.addRunning(key)
		return true, 0, len(q.waiting)
	}
	return false, pos, len(q.waiting)
}

// Running records that key's build runs, such as one adopted after a restart: it
// holds a slot, even beyond the limit, until Release or Forget.
func (q *Queue) Running(key Key) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.ensureSeeded()
	q.removeWaiting(key)
	q.addRunning(key)
}

// Release frees key's slot, when it holds one, and wakes the Keys the free slots admit.
func (q *Queue) Release(key Key) {
	q.remove(key, false)
}

// Forget takes key out of the queue and frees its slot: it no longer needs a rebuild,
// or it was deleted.
func (q *Queue) Forget(key Key) {
	q.remove(key, true)
}

// Kick wakes the Keys the free slots admit, as after the limit grew.
func (q *Queue) Kick() {
	q.mu.Lock()
	q.ensureSeeded()
	next := q.admissible()
	q.mu.Unlock()
	q.wakeAll(next)
}

// Len returns how many rebuilds run and how many wait.
func (q *Queue) Len() (running, waiting int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.running), len(q.waiting)
}

// IsWaiting reports whether key waits in the queue.
func (q *Queue) IsWaiting(key Key) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	_, ok := q.waiting[key]
	return ok
}

// IsRunning reports whether key holds a slot.
func (q *Queue) IsRunning(key Key) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	_, ok := q.running[key]
	return ok
}

func (q *Queue) remove(key Key, fromWaiting bool) {
	q.mu.Lock()
	q.ensureSeeded()
	if _, ok := q.running[key]; ok {
		delete(q.running, key)
		if q.runningIn[key.Namespace]--; q.runningIn[key.Namespace] <= 0 {
			delete(q.runningIn, key.Namespace)
		}
	}
	if fromWaiting {
		q.removeWaiting(key)
	}
	next := q.admissible()
	q.mu.Unlock()
	q.wakeAll(next)
}

func (q *Queue) wakeAll(keys []Key) {
	if q.wake == nil {
		return
	}
	for _, k := range keys {
		q.wake(k)
	}
}

func (q *Queue) addRunning(key Key) {
	if _, ok := q.running[key]; !ok {
		q.running[key] = struct{}{}
		q.runningIn[key.Namespace]++
	}
}

// addWaiting inserts key in its namespace's list, in order. Call with the lock held.
func (q *Queue) addWaiting(key Key, at time.Time) {
	q.waiting[key] = at
	list := q.byNS[key.Namespace]
	i := sort.Search(len(list), func(i int) bool { return q.less(key, list[i]) })
	list = append(list, Key{})
	copy(list[i+1:], list[i:])
	list[i] = key
	q.byNS[key.Namespace] = list
}

// removeWaiting takes key out of the queue, when it is there. Call with the lock held.
func (q *Queue) removeWaiting(key Key) {
	if _, ok := q.waiting[key]; !ok {
		return
	}
	list := q.byNS[key.Namespace]
	i := sort.Search(len(list), func(i int) bool { return !q.less(list[i], key) })
	if i < len(list) && list[i] == key {
		list = append(list[:i], list[i+1:]...)
	}
	if len(list) == 0 {
		delete(q.byNS, key.Namespace)
	} else {
		q.byNS[key.Namespace] = list
	}
	delete(q.waiting, key)
}

// rank of the i-th waiting Key of namespace ns: the rebuilds of ns running or ahead of it.
func (q *Queue) rank(ns string, i int) int { return q.runningIn[ns] + i }

// before orders two waiting Keys in the admission order: rank, then queuedAt, then name.
func (q *Queue) before(a Key, ra int, b Key, rb int) bool {
	if ra != rb {
		return ra < rb
	}
	return q.less(a, b)
}

// position returns key's place in the admission order (1 is next). It costs one step
// per namespace. Call with the lock held.
func (q *Queue) position(key Key) int {
	list := q.byNS[key.Namespace]
	idx := sort.Search(len(list), func(i int) bool { return !q.less(list[i], key) })
	r := q.rank(key.Namespace, idx)
	pos := 1
	for ns, keys := range q.byNS {
		// Keys of ns whose rank is below r are ahead; the one of rank r maybe.
		n := r - q.runningIn[ns]
		if n < 0 {
			n = 0
		}
		if n > len(keys) {
			n = len(keys)
		}
		if ns == key.Namespace {
			pos += idx // the Keys of its own namespace ahead of it
			continue
		}
		pos += n
		if n < len(keys) && q.before(keys[n], q.rank(ns, n), key, r) {
			pos++
		}
	}
	return pos
}

// admissible returns the waiting Keys the free slots admit, in order. Call with the
// lock held.
func (q *Queue) admissible() []Key {
	free := q.limit() - len(q.running)
	if !q.seeded || free <= 0 || len(q.waiting) == 0 {
		return nil
	}
	// Merge the namespaces' lists by rank: each is already in rank order.
	next := map[string]int{}
	var out []Key
	for len(out) < free {
		var best Key
		bestRank, found := 0, false
		for ns, keys := range q.byNS {
			i := next[ns]
			if i >= len(keys) {
				continue
			}
			if r := q.rank(ns, i); !found || q.before(keys[i], r, best, bestRank) {
				best, bestRank, found = keys[i], r, true
			}
		}
		if !found {
			break
		}
		out = append(out, best)
		next[best.Namespace]++
	}
	return out
}

// ensureSeeded calls the Seed once; it reports whether the Queue is seeded. Call it
// with the lock held.
func (q *Queue) ensureSeeded() bool {
	if q.seeded || q.seed == nil {
		q.seeded = true
		return true
	}
	running, waiting, err := q.seed()
	if err != nil {
		return false // try again at the next decision
	}
	q.seeded = true
	for _, k := range running {
		q.removeWaiting(k)
		q.addRunning(k)
	}
	for k, t := range waiting {
		if _, ok := q.running[k]; !ok {
			if _, ok := q.waiting[k]; !ok {
				q.addWaiting(k, t)
			}
		}
	}
	return true
}

// less orders two waiting Keys by queuedAt, then by namespace and name.
func (q *Queue) less(a, b Key) bool {
	ta, tb := q.waiting[a], q.waiting[b]
	if !ta.Equal(tb) {
		return ta.Before(tb)
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}

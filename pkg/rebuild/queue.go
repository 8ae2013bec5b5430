package rebuild

import (
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Key names a Function.
type Key = types.NamespacedName

// Queue holds the running rebuilds and the ones that wait for a slot. At most
// limit() run at once; a freed slot goes to the waiting Function whose namespace runs
// the fewest rebuilds (counting those ahead of it in the queue), then to the one that
// waits longest. So one namespace with a hundred outdated functions cannot starve
// another with one. Queue is safe for concurrent use.
//
// Until Seed is called the Queue does not know the builds that already run, so it
// admits nothing and wakes nobody.
//
// The waiting Functions are kept sorted per namespace, so a Function's position costs
// one step per namespace, not a sort of the whole queue.
type Queue struct {
	limit func() int
	wake  func(Key)

	mu      sync.Mutex
	seeded  bool
	running map[Key]struct{}
	// runningIn counts the running Keys by namespace.
	runningIn map[string]int
	// waiting maps a waiting Key to when it joined the queue.
	waiting map[Key]time.Time
	// byNS holds the waiting Keys of each namespace, oldest first.
	byNS map[string][]Key
	// settled holds the Keys released or forgotten before the first Seed: the data
	// Seed gets was read before, so it must not bring them back.
	settled map[Key]struct{}
}

// NewQueue returns a Queue admitting at most limit() rebuilds at once. wake is called,
// without the Queue's lock held, for each waiting Key that a freed slot may admit;
// limit is called without the lock held too. The Queue admits nothing until Seed is
// called: an owner that has no builds to recover after a restart (a test, or an
// operator without Tekton) calls Seed(nil, nil) right after NewQueue.
func NewQueue(limit func() int, wake func(Key)) *Queue {
	return &Queue{
		limit:     limit,
		wake:      wake,
		running:   map[Key]struct{}{},
		runningIn: map[string]int{},
		waiting:   map[Key]time.Time{},
		byNS:      map[string][]Key{},
		settled:   map[Key]struct{}{},
	}
}

// Seed records what the cluster says of builds after an operator restart: running,
// the Keys whose builds already run, and waiting, the Keys that already wait with
// their queuedAt. The caller does the I/O and calls Seed once it succeeded; until then
// the Queue admits nothing and wakes nobody. Seed merges the data into the Queue: a
// running Key holds a slot, even beyond the limit, until Release or Forget, and no
// longer waits (a Key listed twice holds one slot); a waiting Key joins the queue
// unless it runs or already waits, so a Key queued before Seed keeps its queuedAt.
// Then, without the lock held, Seed wakes the Keys the free slots admit, as Kick does.
//
// The data was read before Seed, while reconciles may already release Keys: a Key
// released or forgotten before the first Seed (and not admitted or running again
// since) is not brought back by it, or its slot would never be freed. A later Seed
// merges again and only adds: the same data changes nothing (Seed then only wakes, as
// Kick) unless one of its Keys was released or forgotten in between.
func (q *Queue) Seed(running []Key, waiting map[Key]time.Time) {
	limit := q.limit()
	q.mu.Lock()
	q.seeded = true
	for _, k := range running {
		if _, ok := q.settled[k]; ok {
			continue
		}
		q.removeWaiting(k)
		q.addRunning(k)
	}
	for k, t := range waiting {
		if _, ok := q.settled[k]; ok {
			continue
		}
		if _, ok := q.running[k]; !ok {
			if _, ok := q.waiting[k]; !ok {
				q.addWaiting(k, t)
			}
		}
	}
	q.settled = nil // recorded only until the first Seed
	next := q.admissible(limit)
	q.mu.Unlock()
	q.wakeAll(next)
}

// isSeeded reports whether Seed was called.
func (q *Queue) isSeeded() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.seeded
}

// Admit asks a slot for key, which needs a rebuild since queuedAt. When admitted, key
// holds a slot until Release or Forget. Otherwise it waits in the queue, at position
// (1 is next) of length. Before Seed, key is admitted only when it already holds a slot.
func (q *Queue) Admit(key Key, queuedAt time.Time) (admitted bool, position, length int) {
	limit := q.limit()
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.running[key]; ok {
		return true, 0, len(q.waiting)
	}
	if t, ok := q.waiting[key]; !ok || !t.Equal(queuedAt) {
		q.removeWaiting(key)
		q.addWaiting(key, queuedAt)
	}
	pos := q.position(key)
	// Until the running builds are known, nothing is admitted: the budget could be spent.
	if q.seeded && pos <= limit-len(q.running) {
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
	delete(q.settled, key)
	q.removeWaiting(key)
	q.addRunning(key)
}

// Release frees key's slot, when it holds one, and wakes the Keys the free slots admit
// (none before Seed).
func (q *Queue) Release(key Key) {
	q.remove(key, false)
}

// Forget takes key out of the queue and frees its slot: it no longer needs a rebuild,
// or it was deleted. It wakes the Keys the free slots admit (none before Seed).
func (q *Queue) Forget(key Key) {
	q.remove(key, true)
}

// Kick wakes the Keys the free slots admit, as after the limit grew (none before Seed).
func (q *Queue) Kick() {
	limit := q.limit()
	q.mu.Lock()
	next := q.admissible(limit)
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
	limit := q.limit()
	q.mu.Lock()
	if !q.seeded {
		q.settled[key] = struct{}{}
	}
	if _, ok := q.running[key]; ok {
		delete(q.running, key)
		if q.runningIn[key.Namespace]--; q.runningIn[key.Namespace] <= 0 {
			delete(q.runningIn, key.Namespace)
		}
	}
	if fromWaiting {
		q.removeWaiting(key)
	}
	next := q.admissible(limit)
	q.mu.Unlock()
	q.wakeAll(next)
}

// wakeAll calls wake for each of keys. Call it without the lock held.
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

// admissible returns the waiting Keys the free slots under limit admit, in order;
// none before Seed. Call with the lock held.
func (q *Queue) admissible(limit int) []Key {
	free := limit - len(q.running)
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

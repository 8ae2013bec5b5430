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
// limit() run at once, and at most the namespace limit (WithNamespaceLimit) of one
// namespace; a freed slot goes to the waiting Function whose namespace runs the
// fewest rebuilds (counting those ahead of it in the queue), then to the one that
// waits longest. So one namespace with a hundred outdated functions cannot starve
// another with one, nor can one whose builds hang until buildTimeout hold more than
// its share of the slots. Queue is safe for concurrent use.
//
// Until Seed is called the Queue does not know the builds that already run, so it
// admits nothing and wakes nobody.
//
// The waiting Functions are kept sorted per namespace, so a Function's position costs
// one step per namespace, not a sort of the whole queue.
type Queue struct {
	limit func() int
	// perNamespace is the namespace limit; nil or a result of 0 or less: none.
	perNamespace func() int
	wake         func(Key)

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

// WithNamespaceLimit makes q run at most perNamespace() rebuilds of one namespace at
// once (0 or less: no limit but limit()), and returns q. A Key whose namespace runs
// as many waits, whatever slots are free; the Keys of other namespaces are admitted
// past it. perNamespace is called without the lock held. Call it before q is used.
func (q *Queue) WithNamespaceLimit(perNamespace func() int) *Queue {
	q.perNamespace = perNamespace
	return q
}

// limits returns limit() and the namespace limit (0: none). Call it without the lock.
func (q *Queue) limits() (limit, perNamespace int) {
	limit = q.limit()
	if q.perNamespace != nil {
		perNamespace = max(q.perNamespace(), 0)
	}
	return limit, perNamespace
}

// NamespaceFull reports whether namespace ns runs as many rebuilds as the namespace
// limit lets it, or more (running), and that limit; never without one.
func (q *Queue) NamespaceFull(ns string) (full bool, running, limit int) {
	_, limit = q.limits()
	q.mu.Lock()
	defer q.mu.Unlock()
	running = q.runningIn[ns]
	return limit > 0 && running >= limit, running, limit
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
	limit, perNS := q.limits()
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
	next := q.admissible(limit, perNS)
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
// (1 is next) of length; past the namespace limit it waits for its namespace, at the
// place it would have. Before Seed, key is admitted only when it already holds a slot.
func (q *Queue) Admit(key Key, queuedAt time.Time) (admitted bool, position, length int) {
	limit, perNS := q.limits()
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
	if q.seeded && pos <= limit-len(q.running) && !q.overNamespaceLimit(key, perNS) {
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
	limit, perNS := q.limits()
	q.mu.Lock()
	next := q.admissible(limit, perNS)
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
	limit, perNS := q.limits()
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
	next := q.admissible(limit, perNS)
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

// overNamespaceLimit reports whether waiting key's namespace runs perNS rebuilds or
// more, counting those of it ahead of key (0: no limit). Keys are admitted in rank
// order, so no Key past the limit is ever counted ahead of one under it (position).
// Call with the lock held.
func (q *Queue) overNamespaceLimit(key Key, perNS int) bool {
	if perNS <= 0 {
		return false
	}
	list := q.byNS[key.Namespace]
	idx := sort.Search(len(list), func(i int) bool { return !q.less(list[i], key) })
	return q.rank(key.Namespace, idx) >= perNS
}

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

// admissible returns the waiting Keys the free slots under limit, and the namespace
// limit perNS (0: none), admit, in order; none before Seed. Call with the lock held.
func (q *Queue) admissible(limit, perNS int) []Key {
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
			if i >= len(keys) || (perNS > 0 && q.rank(ns, i) >= perNS) {
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

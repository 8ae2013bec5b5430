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
type Queue struct {
	limit func() int
	wake  func(Key)
	seed  Seed

	mu      sync.Mutex
	seeded  bool
	running map[Key]struct{}
	waiting map[Key]time.Time
	// order is the waiting Keys in admission order; nil when it must be recomputed.
	order    []Key
	position map[Key]int
}

// New returns a Queue admitting at most limit() rebuilds at once. wake is called,
// without the Queue's lock held, for each waiting Key that a freed slot may admit.
// seed, when not nil, is called once, before the first decision.
func New(limit func() int, wake func(Key), seed Seed) *Queue {
	return &Queue{
		limit:   limit,
		wake:    wake,
		seed:    seed,
		running: map[Key]struct{}{},
		waiting: map[Key]time.Time{},
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
		q.waiting[key] = queuedAt
		q.order = nil
	}
	q.sort()
	pos := q.position[key]
	// Until the running builds are known, nothing is admitted: the budget could be spent.
	if seeded && pos <= q.limit()-len(q.running) {
		delete(q.waiting, key)
		q.running[key] = struct{}{}
		q.order = nil
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
	if _, ok := q.waiting[key]; ok {
		delete(q.waiting, key)
		q.order = nil
	}
	if _, ok := q.running[key]; !ok {
		q.running[key] = struct{}{}
		q.order = nil
	}
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
		q.order = nil
	}
	if _, ok := q.waiting[key]; ok && fromWaiting {
		delete(q.waiting, key)
		q.order = nil
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

// admissible returns the waiting Keys the free slots admit. Call with the lock held.
func (q *Queue) admissible() []Key {
	free := q.limit() - len(q.running)
	if !q.seeded || free <= 0 || len(q.waiting) == 0 {
		return nil
	}
	q.sort()
	if free > len(q.order) {
		free = len(q.order)
	}
	return append([]Key(nil), q.order[:free]...)
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
		q.running[k] = struct{}{}
		delete(q.waiting, k)
	}
	for k, t := range waiting {
		if _, ok := q.running[k]; !ok {
			if _, ok := q.waiting[k]; !ok {
				q.waiting[k] = t
			}
		}
	}
	q.order = nil
	return true
}

// sort computes the admission order: by the number of rebuilds of the Key's namespace
// running or ahead of it, then by queuedAt, then by name. Call with the lock held.
func (q *Queue) sort() {
	if q.order != nil {
		return
	}
	byNS := map[string][]Key{}
	for k := range q.waiting {
		byNS[k.Namespace] = append(byNS[k.Namespace], k)
	}
	runningIn := map[string]int{}
	for k := range q.running {
		runningIn[k.Namespace]++
	}
	type ranked struct {
		key  Key
		rank int
		at   time.Time
	}
	all := make([]ranked, 0, len(q.waiting))
	for ns, keys := range byNS {
		sort.Slice(keys, func(i, j int) bool { return q.less(keys[i], keys[j]) })
		for i, k := range keys {
			all = append(all, ranked{key: k, rank: runningIn[ns] + i, at: q.waiting[k]})
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].rank != all[j].rank {
			return all[i].rank < all[j].rank
		}
		return q.less(all[i].key, all[j].key)
	})
	q.order = make([]Key, len(all))
	q.position = make(map[Key]int, len(all))
	for i, r := range all {
		q.order[i] = r.key
		q.position[r.key] = i + 1
	}
}

// less orders two waiting Keys by queuedAt, then by name.
func (q *Queue) less(a, b Key) bool {
	ta, tb := q.waiting[a], q.waiting[b]
	if !ta.Equal(tb) {
		return ta.Before(tb)
	}
	return a.String() < b.String()
}

package function

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/fnops/func-operator/pkg/git"
)

// Repositories knows which Functions read which repository with which credentials,
// so that all of them are checked at once when its listing changes or a push webhook
// names it. A Function is known from its first check until it is deleted or suspended.
//
// It also keeps, for each Function a push webhook of its namespace named, the
// listing mark of the push (see git.Fetcher.ListingMark): its next check needs a
// listing begun after it, and no other Function's does.
type Repositories struct {
	mu     sync.Mutex
	byKey  map[git.ListingKey]map[types.NamespacedName]struct{}
	byFn   map[types.NamespacedName]git.ListingKey
	pushed map[types.NamespacedName]uint64
}

// NewRepositories returns an empty Repositories.
func NewRepositories() *Repositories {
	return &Repositories{
		byKey:  map[git.ListingKey]map[types.NamespacedName]struct{}{},
		byFn:   map[types.NamespacedName]git.ListingKey{},
		pushed: map[types.NamespacedName]uint64{},
	}
}

// Watch records that fn reads key. A nil Repositories records nothing.
func (rs *Repositories) Watch(fn types.NamespacedName, key git.ListingKey) {
	if rs == nil {
		return
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if old, ok := rs.byFn[fn]; ok {
		if old == key {
			return
		}
		rs.drop(fn, old)
	}
	rs.byFn[fn] = key
	set := rs.byKey[key]
	if set == nil {
		set = map[types.NamespacedName]struct{}{}
		rs.byKey[key] = set
	}
	set[fn] = struct{}{}
}

// Forget drops fn.
func (rs *Repositories) Forget(fn types.NamespacedName) {
	if rs == nil {
		return
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if old, ok := rs.byFn[fn]; ok {
		rs.drop(fn, old)
	}
}

func (rs *Repositories) drop(fn types.NamespacedName, key git.ListingKey) {
	delete(rs.byFn, fn)
	delete(rs.pushed, fn)
	if set := rs.byKey[key]; set != nil {
		delete(set, fn)
		if len(set) == 0 {
			delete(rs.byKey, key)
		}
	}
}

// Functions returns the Functions reading key.
func (rs *Repositories) Functions(key git.ListingKey) []types.NamespacedName {
	if rs == nil {
		return nil
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	fns := make([]types.NamespacedName, 0, len(rs.byKey[key]))
	for fn := range rs.byKey[key] {
		fns = append(fns, fn)
	}
	return fns
}

// Pushed records that a push webhook of namespace named the repositories match
// accepts, at the listing mark given, and returns the Functions of namespace on them:
// their next check needs a listing begun after mark. Only they: a push a namespace
// receives never makes another namespace's Functions list again.
func (rs *Repositories) Pushed(namespace string, match func(url string) bool, mark uint64) []types.NamespacedName {
	if rs == nil {
		return nil
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var fns []types.NamespacedName
	for key, set := range rs.byKey {
		if !match(key.URL) {
			continue
		}
		for fn := range set {
			if fn.Namespace == namespace {
				fns = append(fns, fn)
				if mark > rs.pushed[fn] {
					rs.pushed[fn] = mark
				}
			}
		}
	}
	return fns
}

// PushMark returns the listing mark of the latest push that named fn's repository
// and that fn's checks have not yet seen; 0 when there is none.
func (rs *Repositories) PushMark(fn types.NamespacedName) uint64 {
	if rs == nil {
		return 0
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.pushed[fn]
}

// PushSeen records that fn read a listing begun after mark: a push with a later
// mark, come in meanwhile, still needs its own.
func (rs *Repositories) PushSeen(fn types.NamespacedName, mark uint64) {
	if rs == nil || mark == 0 {
		return
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.pushed[fn] == mark {
		delete(rs.pushed, fn)
	}
}

// RepositoryChanged brings back every Function reading key: its listing changed. It
// does not wait; what cannot be handed over within a check interval is left to the
// periodic checks.
func (r *Reconciler) RepositoryChanged(key git.ListingKey) {
	fns := r.watch.repositories.Functions(key)
	if len(fns) == 0 || r.watch.wakeups == nil {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), r.config.Load().CheckInterval)
		defer cancel()
		r.watch.wakeups.EnqueueAll(ctx, fns)
	}()
}

// checkFloor is the shortest time between two periodic checks of a Function: they
// come back after 90–100% of checkInterval, so that each is checked within its
// interval, and a listing younger than that is fresh enough to share.
func checkFloor(interval time.Duration) time.Duration { return interval * 9 / 10 }

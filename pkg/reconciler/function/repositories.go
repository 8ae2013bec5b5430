package function

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/fnops/func-operator/pkg/source"
)

// Repositories knows which Functions read which repository with which credentials,
// so that all of them are checked at once when its listing changes or a push webhook
// names it. A Function is known from its first check until it is deleted or suspended.
type Repositories struct {
	mu    sync.Mutex
	byKey map[source.ListingKey]map[types.NamespacedName]struct{}
	byFn  map[types.NamespacedName]source.ListingKey
}

// NewRepositories returns an empty Repositories.
func NewRepositories() *Repositories {
	return &Repositories{
		byKey: map[source.ListingKey]map[types.NamespacedName]struct{}{},
		byFn:  map[types.NamespacedName]source.ListingKey{},
	}
}

// Watch records that fn reads key. A nil Repositories records nothing.
func (rs *Repositories) Watch(fn types.NamespacedName, key source.ListingKey) {
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

func (rs *Repositories) drop(fn types.NamespacedName, key source.ListingKey) {
	delete(rs.byFn, fn)
	if set := rs.byKey[key]; set != nil {
		delete(set, fn)
		if len(set) == 0 {
			delete(rs.byKey, key)
		}
	}
}

// Functions returns the Functions reading key.
func (rs *Repositories) Functions(key source.ListingKey) []types.NamespacedName {
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

// Matching returns the Functions of namespace whose repository URL match accepts, and
// the listing keys they read.
func (rs *Repositories) Matching(namespace string, match func(url string) bool) ([]types.NamespacedName, []source.ListingKey) {
	if rs == nil {
		return nil, nil
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var (
		fns  []types.NamespacedName
		keys []source.ListingKey
	)
	for key, set := range rs.byKey {
		if !match(key.URL) {
			continue
		}
		found := false
		for fn := range set {
			if fn.Namespace == namespace {
				fns = append(fns, fn)
				found = true
			}
		}
		if found {
			keys = append(keys, key)
		}
	}
	return fns, keys
}

// RepositoryChanged brings back every Function reading key: its listing changed. It
// does not wait; what cannot be handed over within a check interval is left to the
// periodic checks.
func (r *Reconciler) RepositoryChanged(key source.ListingKey) {
	fns := r.Repositories.Functions(key)
	if len(fns) == 0 || r.Wakeups == nil {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), r.Config.Load().CheckInterval)
		defer cancel()
		r.Wakeups.EnqueueAll(ctx, fns)
	}()
}

// checkFloor is the shortest time between two periodic checks of a Function: they
// come back after 90–100% of checkInterval, so that each is checked within its
// interval, and a listing younger than that is fresh enough to share.
func checkFloor(interval time.Duration) time.Duration { return interval * 9 / 10 }

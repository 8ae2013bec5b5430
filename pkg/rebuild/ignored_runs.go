package rebuild

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/lru"
)

// maxIgnoredRuns bounds the look-alike runs remembered as logged: past it, the
// oldest may be logged once more.
const maxIgnoredRuns = 4096

// IgnoredRuns remembers, by UID, the PipelineRuns that carry a Function's build
// labels but no build the operator started, once logged: a tenant's look-alikes are
// reported once each, not at every check of their Function.
type IgnoredRuns struct {
	once sync.Once
	seen *lru.Cache
}

// First reports whether uid is seen for the first time, and remembers it. The zero
// IgnoredRuns is ready to use.
func (i *IgnoredRuns) First(uid types.UID) bool {
	i.once.Do(func() { i.seen = lru.New(maxIgnoredRuns) })
	if _, ok := i.seen.Get(uid); ok {
		return false
	}
	i.seen.Add(uid, struct{}{})
	return true
}

// Package git reads a function's func.yaml from its git repository: branch-head checks,
// shallow clones, credentials and a cache of what was read.
//
// The shared listings (listings.go) keep their own LRU on container/list rather than
// k8s.io/utils/lru (used for the clone cache): they are bounded by bytes, not entries,
// which that cache cannot evict by (RemoveOldest does not say what it removed, and Get
// promotes a stale entry).
//
// It must not import pkg/reconciler or pkg/operator (depguard rule top) nor
// knative.dev/func (rule func-adapter; func's types come through pkg/funclib).
package git

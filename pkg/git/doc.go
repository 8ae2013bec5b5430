// Package git reads a function's func.yaml from its git repository: branch-head checks,
// shallow clones, credentials and a cache of what was read.
//
// Credentials come from the Secret a Function names (auth.go); an SSH Secret's keys may
// be named as this operator, Flux or the upstream operator (functions-dev/func-operator)
// names them (sshsecret.go).
//
// The shared listings (listings.go) keep their own LRU on container/list rather than
// k8s.io/utils/lru (which pkg/tenancy's Secret cache uses): that cache's Get promotes
// every entry it finds and it has no Peek, so a stale listing (past its age, or begun
// before a push's mark) would move ahead of fresh ones; here only a listing served is
// promoted, and the bound is in bytes, evicted in the same lock.
//
// It must not import pkg/reconciler or pkg/operator (depguard rule top) nor
// knative.dev/func (rule func-adapter; func's types come through pkg/funclib).
package git

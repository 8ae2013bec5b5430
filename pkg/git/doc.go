// Package git reads a function's func.yaml from its git repository: branch-head checks,
// shallow clones, credentials and a cache of what was read.
//
// Credentials come from the Secret a Function names (auth.go); an SSH Secret's keys may
// be named as this operator, Flux or the upstream operator (functions-dev/func-operator)
// names them (sshsecret.go).
//
// The shared listings (listings.go) and the commit store (commits.go) are bounded by
// bytes, not by entries: both keep a byteLRU (bytelru.go), golang-lru's simplelru
// with the sum of its entries' sizes, guarded by the owner's lock and trimmed in it.
// Not k8s.io/utils/lru (which pkg/tenancy's Secret cache uses): its Get promotes every
// entry it finds and it has no Peek, so a stale listing (past its age, or begun before
// a push's mark) would move ahead of fresh ones; here only a listing served is
// promoted.
//
// Each commit is transferred once per (url, commit, credentials identity, CA bundle,
// limits), however many function directories of it are read (commits.go): the fetch is
// the same bounded shallow clone, into a temporary directory removed when it ends, and
// what reading any directory needs (the commit, its trees, every func.yaml and
// source-middleware file) is kept in memory, in an LRU bounded by bytes
// (Fetcher.CommitStoreBytes), so that the work directory's disk holds only the clones
// in flight. Memory rather than disk: the kept part of a commit is small (no sources),
// needs no sweep, and a process that dies leaves nothing; what it costs is a fetch
// again after a restart. The key holds the credentials identity, as listings do, and
// so do the keys of the path cache and of the reads in flight (cacheKey), so content
// fetched with one tenant's credentials or trust, or an error, is never read with
// another's.
//
// It must not import pkg/reconciler or pkg/operator (depguard rule top) nor
// knative.dev/func (rule func-adapter). Of pkg/funclib it imports only funcyaml, and its
// tests none: what func's templates say of a function's source middleware comes in as
// a Manifests (funclib.SourceManifests), so that its fuzz targets instrument 600
// packages, not func's 1,900 (test/hygiene TestFuzzTargets_Lean).
package git

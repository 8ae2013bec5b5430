package git

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"
	"k8s.io/utils/clock"
	"k8s.io/utils/lru"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/funclib/funcyaml"
	"github.com/fnops/func-operator/pkg/netguard"
	"github.com/fnops/func-operator/pkg/rerror"
)

// DefaultCacheSize is how many (url, commit, path) results a Fetcher keeps.
const DefaultCacheSize = 4096

// Fetcher reads func.yaml from git repositories. What it read is cached by
// (url, commit, path, credentials identity): a commit never changes, so neither does
// what it holds. Behind that cache, each commit is transferred once per credentials
// identity and kept (its trees and function files, see commits.go), so that every
// directory of a monorepo is read from one transfer. Callers list with their own
// credentials (List) before every Read, for the heads they read.
type Fetcher struct {
	// TmpDir holds the temporary clones. It must be set: the operator never writes
	// to the process temporary directory (read-only in its Deployment).
	TmpDir string
	// Guard, when set, dials every connection to a git host (see Install).
	Guard *netguard.Guard
	// Limits, when set, returns the bounds of each operation.
	Limits func() Limits
	// OnChange, when set, is told when a repository's listing differs from the one
	// before (see List).
	OnChange func(ListingKey)
	// Clock dates the listings (see List); the real clock when nil.
	Clock clock.PassiveClock
	// CommitStoreBytes, when set, returns the bound of what is kept, in memory, of
	// the commits fetched (see commits.go; the operator's ConfigMap key
	// commitStoreMaxBytes); DefaultCommitStoreBytes when nil or not above 0. A lower
	// bound takes effect at the next fetch, or at TrimCommitStore.
	CommitStoreBytes func() int64

	// manifests reads the middleware version a function's source pins; kept names
	// the files a snapshot keeps: every func.yaml and every file manifests reads.
	manifests Manifests
	kept      map[string]bool

	cache  *lru.Cache
	flight singleflight.Group
	// commits keeps what was fetched of recent commits; commitFlight makes one
	// transfer of each (url, commit, identity, limits) at a time.
	commits      *commitStore
	commitFlight singleflight.Group
	// clones counts the clones made, for the tests; retried the transfers made again
	// after go-git's close race (see againAfterCloseRace).
	clones, retried atomic.Int64

	listings listings
}

// TransferRetries counts the transfers made again at once because go-git v5 had failed
// an SSH exchange the server completed (see againAfterCloseRace): each is one more
// upload-pack at the server.
func (f *Fetcher) TransferRetries() int64 { return f.retried.Load() }

// Manifests reads the middleware version a function's own source pins, for the
// runtimes whose middleware lives there (package.json, pom.xml, requirements.txt):
// funclib.SourceManifests, which func's templates decide. It is passed in rather than
// imported so that this package, its tests and its fuzz targets link none of the
// func library's dependencies (600 packages instead of 1,900).
type Manifests interface {
	// Files are the files of a function's directory that pin runtime's middleware,
	// none when its source pins none.
	Files(runtime string) []string
	// All is every name Files gives, for any runtime.
	All() []string
	// Version reads the version from the contents of the Files found, keyed by name.
	Version(runtime, invoke string, files map[string][]byte) (string, error)
}

// NewFetcher returns a Fetcher that caches up to cacheSize results and reads the
// source middleware with manifests (nil: reads none, Result.SourceMiddleware is empty).
func NewFetcher(tmpDir string, cacheSize int, manifests Manifests) *Fetcher {
	if cacheSize <= 0 {
		cacheSize = DefaultCacheSize
	}
	kept := map[string]bool{funcyaml.FuncYAML: true}
	if manifests != nil {
		for _, name := range manifests.All() {
			kept[name] = true
		}
	}
	return &Fetcher{TmpDir: tmpDir, manifests: manifests, kept: kept, cache: lru.New(cacheSize), commits: newCommitStore(), listings: newListings()}
}

// Result is what was read of a function's source.
type Result struct {
	Head
	// Metadata is what func.yaml says.
	Metadata funcyaml.Metadata
	// Cloned is true when this call transferred the commit (or shared the read of
	// the call that did), false when the result came from the cache or the commit
	// store.
	Cloned bool
	// SourceMiddleware is the middleware version the function's own source pins, for
	// runtimes whose middleware lives there.
	SourceMiddleware SourceMiddleware
	// Tree is the id of the git tree of the function's directory at the commit: two
	// commits hold the same function source exactly when their Trees are equal.
	Tree string
	// PipelinesAsCode is true when the repository root holds a .tekton/ directory,
	// where Tekton Pipelines-as-Code keeps the pipelines it runs on a push.
	PipelinesAsCode bool
}

// SourceMiddleware is what the function's source says of its middleware.
type SourceMiddleware struct {
	// Version as the source pins it; empty when not found.
	Version string
	// Problem says why Version is empty, when the runtime has source-managed middleware.
	Problem string
}

// cached is a cache entry: a result, or the stalling error reading the commit gave.
type cached struct {
	commit   string
	metadata funcyaml.Metadata
	source   SourceMiddleware
	layout   layout
	err      error
}

// Read returns what func.yaml of directory fnPath says at head. When the cache has
// nothing for (url, head.Commit, fnPath), it reads the directory from the commit
// store, and fetches the commit (bounded by timeout) only when the store does not
// hold it for auth's identity and the current limits.
func (f *Fetcher) Read(ctx context.Context, url string, head Head, fnPath string, auth *Auth, timeout time.Duration) (Result, error) {
	if auth == nil {
		auth = &Auth{}
	}
	lim := f.limits()
	key := cacheKey(url, head.Commit, fnPath, lim, auth)
	if v, ok := f.cache.Get(key); ok {
		return f.result(head, v.(cached), false)
	}
	type read struct {
		c       cached
		fetched bool
	}
	v, err, _ := f.flight.Do(key, func() (interface{}, error) {
		if v, ok := f.cache.Get(key); ok {
			return read{c: v.(cached)}, nil
		}
		s, fetched, err := f.snapshot(ctx, url, head, fnPath, auth, lim, timeout)
		if err != nil {
			return nil, err
		}
		content, files, err := s.read(fnPath)
		c, err := f.load(s.commit, content, files, err)
		c.layout = s.layoutOf(fnPath)
		if err != nil {
			return nil, err
		}
		f.cache.Add(cacheKey(url, c.commit, fnPath, lim, auth), c)
		return read{c: c, fetched: fetched}, nil
	})
	if err != nil {
		return Result{}, err
	}
	r := v.(read)
	return f.result(head, r.c, r.fetched)
}

// cacheKey names a result by what it was read from and under which limits (a commit
// refused as too large is read again when the limits grow), and with whose
// credentials and trust (Auth.Identity: the credentials, an SSH key's known hosts, a
// CA bundle), as the commit store and the listings are: a result, or the stalling
// error, read with one tenant's credentials never answers another's, a concurrent
// read with other credentials is never joined to this one, and a fixed commit is
// read for a caller only from a transfer its own credentials made.
func cacheKey(url, commit, fnPath string, lim Limits, auth *Auth) string {
	return fmt.Sprintf("%s\x00%s\x00%s\x00%d/%d/%d\x00%s", url, commit, fnPath, lim.MaxBytes, lim.MaxFiles, lim.MaxObjectBytes, auth.Identity())
}

func (f *Fetcher) limits() Limits {
	if f.Limits == nil {
		return Limits{}
	}
	return f.Limits()
}

// netOptions are the bounds and the SSH dialer of an operation on url that may
// take timeout: a branch listing (listing) or a clone.
func (f *Fetcher) netOptions(url string, timeout time.Duration, listing bool) netOptions {
	o := netOptions{limits: f.limits(), listing: listing, retried: &f.retried}
	if p, _ := Protocol(url); p == protocolSSH && f.Guard != nil {
		o.proxy.URL = f.Guard.SSHProxyURL(o.readLimit(), timeout)
	}
	return o
}

func (f *Fetcher) result(head Head, c cached, cloned bool) (Result, error) {
	h := head
	h.Commit = c.commit
	r := Result{Head: h, Metadata: c.metadata, Cloned: cloned, SourceMiddleware: c.source,
		Tree: c.layout.tree, PipelinesAsCode: c.layout.pipelinesAsCode}
	if c.err != nil {
		return r, c.err
	}
	return r, nil
}

// load turns what was read of commit (func.yaml's content and the other files of its
// directory, or err) into a cache entry.
func (f *Fetcher) load(commit string, content []byte, files fileReader, err error) (cached, error) {
	if err != nil {
		if rerror.IsStalling(err) && cacheable(err) {
			return cached{commit: commit, err: err}, nil
		}
		return cached{}, err
	}
	md, err := funcyaml.LoadFuncYAML(content, f.TmpDir)
	switch {
	case funcyaml.IsUnsafe(err):
		return cached{commit: commit, err: stalling(v1alpha1.ReasonUnsafeFuncYaml, "%s", err)}, nil
	case funcyaml.IsInvalid(err):
		return cached{commit: commit, err: stalling(v1alpha1.ReasonFuncYamlInvalid, "%s", err)}, nil
	case err != nil:
		return cached{}, fmt.Errorf("loading func.yaml: %w", err)
	}
	return cached{commit: commit, metadata: md, source: f.sourceMiddleware(files, md)}, nil
}

// cacheable is true for the failures that depend only on what the commit holds (and
// the limits, part of the key): every one but a repositoryError, a failure to reach
// the repository or to find a ref or commit in it.
func cacheable(err error) bool {
	var re *repositoryError
	return !errors.As(err, &re)
}

// sourceMiddleware reads the middleware version from the function's own manifest
// (package.json, pom.xml, requirements.txt), for runtimes whose middleware lives there.
func (f *Fetcher) sourceMiddleware(read fileReader, md funcyaml.Metadata) SourceMiddleware {
	if f.manifests == nil {
		return SourceMiddleware{}
	}
	names := f.manifests.Files(md.Runtime)
	if len(names) == 0 {
		return SourceMiddleware{}
	}
	files := map[string][]byte{}
	for _, name := range names {
		if content, ok := read(name); ok {
			files[name] = content
		}
	}
	v, err := f.manifests.Version(md.Runtime, md.Invoke, files)
	if err != nil {
		return SourceMiddleware{Problem: err.Error()}
	}
	return SourceMiddleware{Version: v}
}

package git

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing/object"
	"golang.org/x/sync/singleflight"
	"k8s.io/utils/lru"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/netguard"
	"github.com/fnops/func-operator/pkg/rerror"
)

// DefaultCacheSize is how many (url, commit, path) results a Fetcher keeps.
const DefaultCacheSize = 4096

// Fetcher reads func.yaml from git repositories. What it read is cached by
// (url, commit, path): a commit never changes, so neither does what it holds.
// Callers check access with List, using their own credentials, before every Read.
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
	// Now returns the current time; time.Now when nil.
	Now func() time.Time

	cache  *lru.Cache
	flight singleflight.Group
	// clones counts the clones made, for the tests.
	clones atomic.Int64

	listings listings
}

// NewFetcher returns a Fetcher that caches up to cacheSize results.
func NewFetcher(tmpDir string, cacheSize int) *Fetcher {
	if cacheSize <= 0 {
		cacheSize = DefaultCacheSize
	}
	return &Fetcher{TmpDir: tmpDir, cache: lru.New(cacheSize), listings: newListings()}
}

// Result is what was read of a function's source.
type Result struct {
	Head
	// Metadata is what func.yaml says.
	Metadata funclib.Metadata
	// Cloned is true when this call cloned the repository, false when the result
	// came from the cache.
	Cloned bool
	// SourceMiddleware is the middleware version the function's own source pins, for
	// runtimes whose middleware lives there.
	SourceMiddleware SourceMiddleware
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
	metadata funclib.Metadata
	source   SourceMiddleware
	err      error
}

// Read returns what func.yaml of directory fnPath says at head. It clones only when
// the cache has nothing for (url, head.Commit, fnPath). The clone is bounded by timeout.
func (f *Fetcher) Read(ctx context.Context, url string, head Head, fnPath string, auth *Auth, timeout time.Duration) (Result, error) {
	if auth == nil {
		auth = &Auth{}
	}
	lim := f.limits()
	key := cacheKey(url, head.Commit, fnPath, lim, auth)
	if v, ok := f.cache.Get(key); ok {
		return f.result(head, v.(cached), false)
	}
	v, err, _ := f.flight.Do(key, func() (interface{}, error) {
		if v, ok := f.cache.Get(key); ok {
			return v, nil
		}
		c, err := f.clone(ctx, url, head, fnPath, auth, timeout)
		if err != nil {
			return nil, err
		}
		f.cache.Add(cacheKey(url, c.commit, fnPath, lim, auth), c)
		return c, nil
	})
	if err != nil {
		return Result{}, err
	}
	return f.result(head, v.(cached), true)
}

// cacheKey names a result by what it was read from and under which limits (a commit
// refused as too large is read again when the limits grow), and whom it trusted: a
// server only a tenant's CA vouches for never answers for anyone else.
func cacheKey(url, commit, fnPath string, lim Limits, auth *Auth) string {
	trust := ""
	if len(auth.CABundle) > 0 {
		sum := sha256.Sum256(auth.CABundle)
		trust = hex.EncodeToString(sum[:])
	}
	return fmt.Sprintf("%s\x00%s\x00%s\x00%d/%d/%d\x00%s", url, commit, fnPath, lim.MaxBytes, lim.MaxFiles, lim.MaxObjectBytes, trust)
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
	o := netOptions{limits: f.limits(), listing: listing}
	if p, _ := Protocol(url); p == protocolSSH && f.Guard != nil {
		o.proxy.URL = f.Guard.SSHProxyURL(o.readLimit(), timeout)
	}
	return o
}

func (f *Fetcher) result(head Head, c cached, cloned bool) (Result, error) {
	h := head
	h.Commit = c.commit
	r := Result{Head: h, Metadata: c.metadata, Cloned: cloned, SourceMiddleware: c.source}
	if c.err != nil {
		return r, c.err
	}
	return r, nil
}

// clone reads func.yaml from a fresh clone in a temporary directory that is always
// removed. Stalling errors about what the commit holds come back inside the entry, so
// they are cached too; errors reaching the repository are not, as the cache is shared
// by every caller whatever its credentials.
func (f *Fetcher) clone(ctx context.Context, url string, head Head, fnPath string, auth *Auth, timeout time.Duration) (cached, error) {
	ctx, cancel := timeoutContext(ctx, timeout)
	defer cancel()
	dir, err := os.MkdirTemp(f.TmpDir, "clone-")
	if err != nil {
		return cached{}, fmt.Errorf("creating a temporary directory for the clone: %w", err)
	}
	defer func() { _ = os.RemoveAll(dir) }()

	f.clones.Add(1)
	commit, content, fnDir, err := readFuncYAML(ctx, url, head, dir, fnPath, auth, f.netOptions(url, timeout, false))
	if commit == "" {
		commit = head.Commit
	}
	return f.load(commit, content, fnDir, err)
}

// load turns what a clone read of commit (func.yaml's content and its directory, or
// err) into a cache entry.
func (f *Fetcher) load(commit string, content []byte, fnDir *object.Tree, err error) (cached, error) {
	if err != nil {
		if rerror.IsStalling(err) && cacheable(err) {
			return cached{commit: commit, err: err}, nil
		}
		return cached{}, err
	}
	md, err := funclib.LoadFuncYAML(content, f.TmpDir)
	switch {
	case funclib.IsUnsafe(err):
		return cached{commit: commit, err: stalling(v1alpha1.ReasonUnsafeFuncYaml, "%s", err)}, nil
	case funclib.IsInvalid(err):
		return cached{commit: commit, err: stalling(v1alpha1.ReasonFuncYamlInvalid, "%s", err)}, nil
	case err != nil:
		return cached{}, fmt.Errorf("loading func.yaml: %w", err)
	}
	return cached{commit: commit, metadata: md, source: sourceMiddleware(fnDir, md)}, nil
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
func sourceMiddleware(fnDir *object.Tree, md funclib.Metadata) SourceMiddleware {
	names := funclib.SourceMiddlewareFiles(md.Runtime)
	if len(names) == 0 {
		return SourceMiddleware{}
	}
	files := map[string][]byte{}
	for _, name := range names {
		if content, ok := readOptional(fnDir, name); ok {
			files[name] = content
		}
	}
	v, err := funclib.SourceMiddleware(md.Runtime, md.Invoke, files)
	if err != nil {
		return SourceMiddleware{Problem: err.Error()}
	}
	return SourceMiddleware{Version: v}
}

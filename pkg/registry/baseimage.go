package registry

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

const (
	// DefaultBaseTTL is how long Base trusts what a tag pointed to when
	// Inspector.BaseTTL is not set.
	DefaultBaseTTL = 10 * time.Minute

	// baseCacheSize bounds the base tags and the base configs kept: a fleet runs on
	// few bases.
	baseCacheSize = 256
)

// BaseImage is what a base image's reference points to now.
type BaseImage struct {
	// Ref is the reference resolved, as given to Base.
	Ref string
	// Digest is the sha256:... of the image manifest the reference points to: for an
	// index, its linux/amd64 image (else the first, as Inspect picks).
	Digest string
	// Index is the digest of the index the reference points to, when it points to one.
	Index string
	// TopLayer is the diffID of the image's top layer.
	TopLayer string
	// DiffIDs are the image's layers' diffIDs, bottom first.
	DiffIDs []string
	// Platform is the image's os/architecture, from its config.
	Platform string
}

func (b BaseImage) clone() BaseImage {
	b.DiffIDs = cloneStrings(b.DiffIDs)
	return b
}

// baseTag is what a tag pointed to, for one identity of credentials and CA
// bundle, until expires.
type baseTag struct {
	img     BaseImage
	expires time.Time
}

func (i *Inspector) baseTTL() time.Duration {
	if i.BaseTTL != nil {
		if d := i.BaseTTL(); d > 0 {
			return d
		}
	}
	return DefaultBaseTTL
}

// Base resolves ref, a base image (Base.Image, or one of Candidates), to the image
// it points to now. What a tag points to is kept for BaseTTL per reference,
// credentials identity and CA bundle: a fleet of Functions on one run image costs
// one request per BaseTTL per credentials. The config of an image is kept per
// repository, digest and CA bundle, served to the credentials that resolved a tag
// to it or were shown to reach it (as Inspect's results are). Concurrent calls
// for one tag with one identity share one resolution, and its error.
//
// Credentials, CA bundles, the network guard, limits, the timeout and errors are
// those of Inspect: *UnreachableError, *AuthError, *InspectError (NotFound when
// the tag or repository does not exist, TooLarge for a config over the memory cap
// or an image of more than 256 layers).
func (i *Inspector) Base(ctx context.Context, ref string, kc authn.Keychain) (BaseImage, error) {
	ctx, c, err := i.start(ctx, ref, kc)
	defer c.cancel()
	if err != nil {
		return BaseImage{}, err
	}
	b, err := i.baseRef(ctx, c)
	if err != nil {
		return BaseImage{}, err
	}
	b = b.clone()
	b.Ref = ref
	return b, nil
}

func (i *Inspector) baseRef(ctx context.Context, c *call) (BaseImage, error) {
	if d, ok := c.r.(name.Digest); ok {
		top, err := v1.NewHash(d.DigestStr())
		if err != nil {
			return BaseImage{}, c.ec.invalid(ReasonInvalidReference, err, "invalid digest: %v", err)
		}
		b, err := i.baseConfig(ctx, c, top, nil, false)
		if err != nil {
			i.pullers.Remove(c.pkey)
		}
		return b, err
	}

	key := c.r.Context().Scheme() + "://" + c.r.Name() + " " + c.cred + " " + caKey(c.ca)
	for {
		if v, ok := i.baseTags.Get(key); ok && i.clock.Now().Before(v.(baseTag).expires) {
			i.baseHits.Add(1)
			return v.(baseTag).img, nil
		}
		b, err, shared := i.baseFlights.do(ctx, key, func() (BaseImage, error) {
			top, desc, err := i.resolveTag(ctx, c.p, c.r, c.ec)
			if err != nil {
				return BaseImage{}, err
			}
			b, err := i.baseConfig(ctx, c, top, desc, true)
			if err != nil {
				return BaseImage{}, err
			}
			i.baseTags.Add(key, baseTag{img: b, expires: i.clock.Now().Add(i.baseTTL())})
			return b, nil
		})
		if shared && err != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
			if ctx.Err() == nil {
				// The resolution failed because its own caller gave up, which says
				// nothing of the registry: this caller tries itself.
				continue
			}
			return BaseImage{}, c.ec.classify(ctx.Err(), ReasonRequestFailed, "manifest "+c.r.String())
		}
		if err != nil {
			i.pullers.Remove(c.pkey)
		}
		return b, err
	}
}

// baseConfig returns the layers of the image whose manifest (or index) has digest
// top in c's repository: kept per repository, digest and CA bundle, and served to
// c's credentials when shown (they resolved a tag to top during this call) or when
// the registry lets them reach top (showAccess). desc, when not nil, is top's.
func (i *Inspector) baseConfig(ctx context.Context, c *call, top v1.Hash, desc *remote.Descriptor, shown bool) (BaseImage, error) {
	ck := contentKey(c.repo, top, c.ca)
	ak := accessKey(ck, c.cred)
	if v, ok := i.baseConfigs.Get(ck); ok {
		if !shown && !i.accessShown(ak) {
			if err := i.showAccess(ctx, c.p, c.repo, top, c.ec); err != nil {
				return BaseImage{}, err
			}
		}
		i.access.Add(ak, struct{}{})
		return v.(BaseImage), nil
	}

	i.baseReads.Add(1)
	what := "manifest " + top.String()
	if desc == nil {
		var err error
		if desc, err = c.p.Get(ctx, c.repo.Digest(top.String())); err != nil {
			return BaseImage{}, c.ec.classify(err, ReasonBadManifest, what)
		}
	}
	img, digest, what, err := imageOf(desc, top, c.ec)
	if err != nil {
		return BaseImage{}, err
	}
	b := BaseImage{Digest: digest.String()}
	if digest != top {
		b.Index = top.String()
	}
	cf, err := configOf(img, what, c.lim, c.ec)
	if err != nil {
		return BaseImage{}, err
	}
	diffIDs := cf.RootFS.DiffIDs
	switch {
	case len(diffIDs) == 0:
		return BaseImage{}, c.ec.invalid(ReasonBadManifest, nil, "%s has no layers: not a base image", what)
	case len(diffIDs) > maxDiffIDs:
		return BaseImage{}, c.ec.invalid(ReasonTooLarge, nil, "%s has %d layers, more than the %d the operator compares", what, len(diffIDs), maxDiffIDs)
	}
	b.Platform = platformOf(cf)
	b.DiffIDs = make([]string, len(diffIDs))
	for k, d := range diffIDs {
		b.DiffIDs[k] = d.String()
	}
	b.TopLayer = b.DiffIDs[len(b.DiffIDs)-1]
	i.baseConfigs.Add(ck, b)
	i.access.Add(ak, struct{}{})
	return b, nil
}

// flights runs one call per key at a time; the callers that come while it runs
// share its outcome.
type flights[T any] struct {
	mu    sync.Mutex
	calls map[string]*flight[T]
}

type flight[T any] struct {
	done    chan struct{}
	v       T
	err     error
	waiters int // under flights.mu; tests wait on it
}

// do runs fn unless a call for key is running, whose outcome it then waits for
// (until ctx is done) and returns with shared true.
func (f *flights[T]) do(ctx context.Context, key string, fn func() (T, error)) (v T, err error, shared bool) {
	f.mu.Lock()
	if c, ok := f.calls[key]; ok {
		c.waiters++
		f.mu.Unlock()
		defer func() {
			f.mu.Lock()
			c.waiters--
			f.mu.Unlock()
		}()
		select {
		case <-c.done:
			return c.v, c.err, true
		case <-ctx.Done():
			var zero T
			return zero, ctx.Err(), true
		}
	}
	if f.calls == nil {
		f.calls = map[string]*flight[T]{}
	}
	// What the waiters get should fn panic.
	c := &flight[T]{done: make(chan struct{}), err: errors.New("the call they waited for panicked")}
	f.calls[key] = c
	f.mu.Unlock()

	defer func() {
		f.mu.Lock()
		delete(f.calls, key)
		f.mu.Unlock()
		close(c.done)
	}()
	c.v, c.err = fn()
	return c.v, c.err, false
}

// running reports whether a call for key runs; waiting how many callers wait for it.
func (f *flights[T]) running(key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.calls[key]
	return ok
}

func (f *flights[T]) waiting(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.calls[key]; ok {
		return c.waiters
	}
	return 0
}

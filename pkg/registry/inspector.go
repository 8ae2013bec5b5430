package registry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"k8s.io/utils/clock"
	"k8s.io/utils/lru"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/netguard"
)

const (
	// LabelMiddlewareVersion is the OCI config label in which func (>= v0.48)
	// records the middleware version of the image it builds
	// (fn.MiddlewareVersionLabelKey; this package may not import func, a test
	// asserts it is funclib.MiddlewareVersionLabel: TestRegistryLabelsAreFuncs).
	LabelMiddlewareVersion = "middleware-version"
	// LabelRevision is the OCI config label in which func (>= v0.48) records the
	// git commit it built the image from (fn.CommitLabelKey; a test asserts it is
	// funclib.RevisionLabel: TestRegistryLabelsAreFuncs).
	LabelRevision = "org.opencontainers.image.revision"
	// unknownLabelVersion is what func's scaffold step labels an image with when
	// it could not tell the middleware version (cmd/func-util): no version.
	unknownLabelVersion = "<unknown>"
	// FuncGoModule is the Go middleware module of Knative Functions.
	FuncGoModule = "knative.dev/func-go"

	// SourceLabel: Middleware.Version comes from LabelMiddlewareVersion.
	SourceLabel = v1alpha1.MiddlewareSourceLabel
	// SourceBuildInfo: Middleware.Version comes from the Go build info of an
	// executable in the image's layers that depends on FuncGoModule.
	SourceBuildInfo = v1alpha1.MiddlewareSourceBuildInfo

	// DefaultCacheSize is used by NewInspector when cacheSize <= 0.
	DefaultCacheSize = 1024

	// DefaultMaxMemory caps what one inspection holds: a manifest, a config, or
	// the build information of one executable.
	DefaultMaxMemory = 16 << 20
	// DefaultMaxBytes caps the layer bytes, uncompressed, read for one image.
	DefaultMaxBytes = 4 << 30
	// DefaultConcurrentScans bounds how many images have their layers scanned
	// at once (CPU: decompression).
	DefaultConcurrentScans = 2

	// DefaultTimeout bounds an Inspect call whose context has no deadline.
	DefaultTimeout = 5 * time.Minute

	pullerCacheSize = 256

	// maxVersion is the longest middleware version taken from an image: it goes
	// into the status and the result cache.
	maxVersion = 128
	// maxRevision is the longest revision label taken from an image (a git object
	// name is 40 or 64 hex digits); a longer one is left out.
	maxRevision = 128
)

// Middleware is what an image says about the middleware it was built with.
type Middleware struct {
	Digest  string // sha256:... of the image manifest inspected
	Version string // "" when unknown
	// Source is where Version comes from: "label" (OCI config label middleware-version,
	// as upstream func >= v0.48 writes), "buildinfo" (knative.dev/func-go version read
	// from a Go binary's build info in the layers), or "" (unknown).
	Source string
	// Revision is the git commit the image was built from, from the OCI config
	// label org.opencontainers.image.revision (func >= v0.48 writes it when the
	// source is a git repository); "" when the image has none, or one longer than
	// maxRevision or with other than printable ASCII.
	Revision string
	// Base is the image the image was built on, as its labels tell (base.go); read
	// from the config with the labels, at no cost of its own.
	Base Base
}

// Inspector reads images; safe for concurrent use.
//
// A verdict is drawn only from bytes verified against their digests: the manifest
// by its digest, the config by the manifest's descriptor, and every layer read, to
// the end of its compressed stream (DigestMismatch otherwise). A registry cannot
// pass a forged layer off under another image's manifest.
//
// Results are cached per repository, digest and CA bundle (the content a verdict
// was read from), and served only to callers whose credentials were shown to reach
// that image in that repository: the credentials that inspected it, that resolved a
// tag to it, or that a manifest HEAD by digest (cached per repository, digest, CA
// bundle and credentials identity) let through. Whoever knows the digest of an
// image they may not pull learns nothing from the cache; at fleet scale a
// Function costs one HEAD per image it runs, once, and no request after while its
// access stays cached. The same digest in another repository is inspected again.
// Errors are never cached; an image over the limits is (see Limits), behind the
// same access check.
//
// Base (baseimage.go) shares the credentials, transports, limits and access
// records; it keeps what base tags point to for BaseTTL, and base images' layers
// per repository, digest and CA bundle.
//
// An Inspector also keeps the authenticated transports it opened, per
// repository and credentials, so that resolving a tag costs one request
// (no new /v2/ ping or token exchange each time). A transport is dropped
// when a request through it fails.
type Inspector struct {
	opts []remote.Option

	results *lru.Cache // contentKey -> Middleware
	// access holds the callers shown to reach a cached image: contentKey + " " +
	// credentials identity -> struct{}.
	access *lru.Cache
	// tooLarge holds the images over the limits: "contentKey maxMemory maxBytes" -> why.
	tooLarge *lru.Cache
	pullers  *lru.Cache // pullerKey -> *remote.Puller
	// credKey keys the HMAC that names credentials in cache keys, drawn at random
	// by NewInspector: no credential is kept in a key, nor a plain hash of one.
	credKey []byte

	mu       sync.Mutex
	inflight map[string]*inflightCall

	scanSlots chan struct{}
	// Limits, when set, returns the bounds of each inspection.
	Limits func() Limits
	// Guard gives the transport of an inspection whose keychain carries a CA
	// bundle (KeychainWithCA): the Guard's transport for that bundle, replacing
	// the one of the options. Without it such an inspection fails.
	Guard *netguard.Guard

	// BaseTTL, when set and positive, is how long Base trusts what a tag pointed
	// to; DefaultBaseTTL otherwise.
	BaseTTL func() time.Duration
	// baseTags holds what base tags pointed to: scheme://name credentials-identity
	// CA -> baseTag.
	baseTags *lru.Cache
	// baseConfigs holds the layers of base images: contentKey -> BaseImage.
	baseConfigs *lru.Cache
	baseFlights flights[BaseImage]
	clock       clock.PassiveClock

	inspections  atomic.Int64
	cacheHits    atomic.Int64
	accessChecks atomic.Int64
	baseReads    atomic.Int64 // base manifests and configs read
	baseHits     atomic.Int64 // Base calls answered without a request
}

type inflightCall struct {
	done chan struct{}
	m    Middleware
	err  error
}

// retryBackoff is how go-containerregistry retries a request that failed with a
// network error or a retryable status (5xx, 408, 429): three tries, 100 ms then
// 300 ms apart, as it did before v0.21, whose default waits 1 s then 3 s. A registry
// that answers 503 is then reported as unreachable (RegistryUnreachable) within the
// registryTimeout, not timed out waiting on retries (test/faults: "registry answers
// 503 across a restart").
var retryBackoff = remote.Backoff{Duration: 100 * time.Millisecond, Factor: 3, Jitter: 0.1, Steps: 3}

// NewInspector returns an Inspector caching up to cacheSize results
// (DefaultCacheSize when <= 0). opts are passed to every go-containerregistry
// remote call, e.g. remote.WithTransport or remote.WithUserAgent; credentials
// come from the keychain given to Inspect, so do not pass remote.WithAuth or
// remote.WithAuthFromKeychain.
func NewInspector(cacheSize int, opts ...remote.Option) *Inspector { // opts e.g. remote.WithTransport for tests
	if cacheSize <= 0 {
		cacheSize = DefaultCacheSize
	}
	return &Inspector{
		opts:      append([]remote.Option{remote.WithRetryBackoff(retryBackoff)}, opts...),
		results:   lru.New(cacheSize),
		access:    lru.New(cacheSize * accessPerResult),
		tooLarge:  lru.New(cacheSize),
		pullers:   lru.New(pullerCacheSize),
		credKey:   newCredKey(),
		inflight:  map[string]*inflightCall{},
		scanSlots: make(chan struct{}, DefaultConcurrentScans),

		baseTags:    lru.New(baseCacheSize),
		baseConfigs: lru.New(baseCacheSize),
		clock:       clock.RealClock{},
	}
}

// Limits bound one inspection.
type Limits struct {
	// MaxMemory caps a manifest, a config, or an executable's build information.
	MaxMemory int64
	// MaxBytes caps the layer bytes read, uncompressed (and compressed).
	MaxBytes int64
}

func (i *Inspector) limits() Limits {
	l := Limits{MaxMemory: DefaultMaxMemory, MaxBytes: DefaultMaxBytes}
	if i.Limits != nil {
		if got := i.Limits(); got.MaxMemory > 0 && got.MaxBytes > 0 {
			l = got
		}
	}
	return l
}

// stats returns how many images were actually inspected (manifests and
// layers read) and how many Inspect calls were answered from the cache.
func (i *Inspector) stats() (inspections, cacheHits int64) {
	return i.inspections.Load(), i.cacheHits.Load()
}

// Inspect resolves ref (tag or digest) and returns the middleware. For a ref by digest whose image is cached
// and was shown reachable with these credentials, it makes NO registry request at all; with other credentials,
// one (HEAD of the manifest by digest), once. For a tag it needs one request to resolve the digest (HEAD/GET
// manifest), then the cache.
// Multi-arch indexes: pick linux/amd64 (fall back to the first manifest) and say which in errors.
//
// The label middleware-version answers first (no layer is read then); an empty
// one, or func's "<unknown>", counts as none, and the layers' Go build info is read.
// A label is as func wrote it: what its scaffolding brought (func-go for go,
// func-python for python), but for runtimes without scaffolding (node, typescript,
// quarkus, springboot) and for legacy parliament python functions func v0.50.1
// labels the version of its own template, not the function's, so such labels say
// nothing of what the image runs. Revision is read from the config either way.
//
// kc may be nil for anonymous access. An image without a label and without a
// Go executable depending on knative.dev/func-go gives a Middleware with an
// empty Version and Source and no error. Errors are *UnreachableError,
// *AuthError or *InspectError (DigestMismatch: a layer that is not its digest).
// A ctx without deadline gets DefaultTimeout.
func (i *Inspector) Inspect(ctx context.Context, ref string, kc authn.Keychain) (Middleware, error) {
	ctx, c, err := i.start(ctx, ref, kc)
	defer c.cancel()
	if err != nil {
		return Middleware{}, err
	}
	m, err := i.inspectRef(ctx, c)
	// The result is the cache's: the caller gets its own slices.
	return m.clone(), err
}

// call is what one Inspect or Base call works with once its reference is parsed
// and its credentials resolved.
type call struct {
	ref    string // as given
	r      name.Reference
	repo   name.Repository
	ec     *errContext
	ca     []byte // the keychain's CA bundle, nil for the system roots
	cred   string // the credentials' identity (credID)
	p      *remote.Puller
	pkey   string // p's key in i.pullers, to drop it when a request through it fails
	lim    Limits
	cancel context.CancelFunc
}

// start parses ref, resolves its credentials in kc (nil: anonymous) and finds the
// puller of the call; the context it returns carries the read limits and, when ctx
// has no deadline, DefaultTimeout. c.cancel must be called, even with an error.
func (i *Inspector) start(ctx context.Context, ref string, kc authn.Keychain) (context.Context, *call, error) {
	c := &call{ref: ref, cancel: func() {}}
	if _, ok := ctx.Deadline(); !ok {
		ctx, c.cancel = context.WithTimeout(ctx, DefaultTimeout)
	}
	// Blobs (layers, streamed; configs are checked by their descriptor first) are
	// read under the byte cap; anything else (manifests, token answers, errors)
	// under the memory cap.
	lim := i.limits()
	c.lim = lim
	ctx = netguard.WithReadLimitFunc(ctx, func(req *http.Request) int64 {
		if strings.Contains(req.URL.Path, "/blobs/") {
			return lim.MaxBytes
		}
		return lim.MaxMemory
	})
	r, err := name.ParseReference(strings.TrimSpace(ref))
	if err != nil {
		return ctx, c, &InspectError{Ref: ref, Reason: ReasonInvalidReference, Err: err,
			detail: "not a valid image reference: " + err.Error()}
	}
	c.r, c.repo = r, r.Context()
	if kc == nil {
		kc = &secretKeychain{}
	}
	auth, err := authn.Resolve(ctx, kc, c.repo)
	var cfg *authn.AuthConfig
	if err == nil {
		cfg, err = auth.Authorization()
	}
	if err != nil {
		// The keychain's error text may hold anything: do not quote it.
		return ctx, c, &AuthError{Ref: ref, Registry: c.repo.RegistryStr(), Err: err,
			detail: "the keychain failed to resolve credentials"}
	}
	if cfg == nil {
		cfg = &authn.AuthConfig{}
	}
	c.ec = newErrContext(ref, c.repo.RegistryStr(), cfg)
	c.ca = caBundle(kc)
	c.cred = i.credID(cfg)
	if c.p, c.pkey, err = i.puller(c.repo, c.cred, cfg, c.ca); err != nil {
		return ctx, c, c.ec.invalid(ReasonRequestFailed, err, "invalid registry client options: %v", err)
	}
	return ctx, c, nil
}

// inspectRef is Inspect once the call has started.
func (i *Inspector) inspectRef(ctx context.Context, c *call) (Middleware, error) {
	// The names Inspect's body had before Base shared its start.
	r, repo, ec, ca, cred, p, key, lim, ref := c.r, c.repo, c.ec, c.ca, c.cred, c.p, c.pkey, c.lim, c.ref
	var err error
	var top v1.Hash
	var desc *remote.Descriptor
	// shown: the registry let these credentials reach top in repo during this call.
	shown := false
	if d, ok := r.(name.Digest); ok {
		if top, err = v1.NewHash(d.DigestStr()); err != nil {
			return Middleware{}, ec.invalid(ReasonInvalidReference, err, "invalid digest: %v", err)
		}
	} else {
		top, desc, err = i.resolveTag(ctx, p, r, ec)
		if err != nil {
			i.pullers.Remove(key)
			return Middleware{}, err
		}
		shown = true
	}

	ck := contentKey(repo, top, ca)
	ak := accessKey(ck, cred)
	// An image too large to read stays so under the same limits: it is not read
	// again (a zip bomb would cost its decompression at every check). Kept per
	// repository and CA bundle, as results are: a layer is read before its digest
	// can be verified, so another registry, or a server a tenant's own CA vouches
	// for under the name of a registry, could serve a bomb under the digests of
	// someone else's image.
	tooLargeKey := fmt.Sprintf("%s %d %d", ck, lim.MaxMemory, lim.MaxBytes)
	for {
		m, cached := i.results.Get(ck)
		why, tooLarge := i.tooLarge.Get(tooLargeKey)
		if cached || tooLarge {
			if !shown && !i.accessShown(ak) {
				if err := i.showAccess(ctx, p, repo, top, ec); err != nil {
					i.pullers.Remove(key)
					return Middleware{}, err
				}
			}
			i.access.Add(ak, struct{}{})
			i.cacheHits.Add(1)
			if !cached {
				return Middleware{}, &InspectError{Ref: ref, Reason: ReasonTooLarge, detail: why.(string)}
			}
			return m.(Middleware), nil
		}
		m2, err, ran := i.inspectOnce(ctx, ck, ec, func() (Middleware, error) {
			m, err := i.inspect(ctx, p, repo, top, desc, lim, ec)
			if ie := (*InspectError)(nil); errors.As(err, &ie) && ie.Reason == ReasonTooLarge {
				i.tooLarge.Add(tooLargeKey, ie.detail) // names digests, never the reference
			}
			return m, err
		}, func(m Middleware) {
			// Under i.mu, before any waiter wakes: the caller's access is the
			// inspection itself.
			i.access.Add(ak, struct{}{})
			// The image an index led to, by its own digest, in the same repository.
			if h, err := v1.NewHash(m.Digest); err == nil && h != top {
				child := contentKey(repo, h, ca)
				i.results.Add(child, m)
				i.access.Add(accessKey(child, cred), struct{}{})
			}
		})
		if !ran {
			continue // another call inspected it, or failed: look again
		}
		if err != nil {
			i.pullers.Remove(key)
		}
		return m2, err
	}
}

// resolveTag finds the digest a tag points to with one HEAD request; when
// HEAD fails for another reason than auth or reachability (some registries
// do not answer HEAD properly) it falls back to GET, whose descriptor is then
// reused.
func (i *Inspector) resolveTag(ctx context.Context, p *remote.Puller, r name.Reference, ec *errContext) (v1.Hash, *remote.Descriptor, error) {
	what := "manifest " + r.String()
	hd, err := p.Head(ctx, r)
	if err == nil {
		return hd.Digest, nil, nil
	}
	switch ec.classify(err, ReasonBadManifest, what).(type) {
	case *AuthError, *UnreachableError:
		return v1.Hash{}, nil, ec.classify(err, ReasonBadManifest, what)
	}
	desc, err := p.Get(ctx, r)
	if err != nil {
		return v1.Hash{}, nil, ec.classify(err, ReasonBadManifest, what)
	}
	return desc.Digest, desc, nil
}

// inspectOnce runs fn for the image of content key ck unless another call is
// already inspecting it, in which case it waits for that call and returns
// ran false: the caller then looks at the cache again (the other call's result
// is served only once this caller's own access is shown) or, when the other
// call failed, tries itself (errors are not shared between callers, whose
// references and credentials may differ). On success the result is cached, and
// done runs under the same lock, before any waiter wakes.
func (i *Inspector) inspectOnce(ctx context.Context, ck string, ec *errContext, fn func() (Middleware, error), done func(Middleware)) (m Middleware, err error, ran bool) {
	i.mu.Lock()
	if _, ok := i.results.Get(ck); ok {
		i.mu.Unlock()
		return Middleware{}, nil, false
	}
	c, running := i.inflight[ck]
	if !running {
		c = &inflightCall{done: make(chan struct{})}
		i.inflight[ck] = c
		i.mu.Unlock()

		c.m, c.err = fn()
		i.mu.Lock()
		if c.err == nil {
			i.results.Add(ck, c.m)
			done(c.m)
		}
		delete(i.inflight, ck)
		i.mu.Unlock()
		close(c.done)
		return c.m, c.err, true
	}
	i.mu.Unlock()
	select {
	case <-c.done:
		return Middleware{}, nil, false
	case <-ctx.Done():
		return Middleware{}, ec.classify(ctx.Err(), ReasonRequestFailed, "image "+ck), true
	}
}

// puller returns the cached remote.Puller for repo, credentials cfg (whose
// identity is cred) and CA bundle ca, or a new one. A Puller keeps the
// authenticated transport of each repository; one with a CA bundle is never
// shared with a caller of another.
func (i *Inspector) puller(repo name.Repository, cred string, cfg *authn.AuthConfig, ca []byte) (*remote.Puller, string, error) {
	key := repo.Scheme() + "://" + repo.String() + "#" + cred + "#" + caKey(ca)
	if v, ok := i.pullers.Get(key); ok {
		return v.(*remote.Puller), key, nil
	}
	auth := authn.Anonymous
	if *cfg != (authn.AuthConfig{}) {
		auth = authn.FromConfig(*cfg)
	}
	opts := append(append([]remote.Option(nil), i.opts...), remote.WithAuth(auth))
	if ca != nil {
		if i.Guard == nil {
			return nil, "", errors.New("the operator has no transport for a registry Secret's ca.crt (Inspector.Guard is not set)")
		}
		rt, err := i.Guard.TransportWithCA(0, ca)
		if err != nil {
			return nil, "", fmt.Errorf("key %s: %w", KeyCACert, err)
		}
		opts = append(opts, remote.WithTransport(rt)) // the last transport given wins
	}
	p, err := remote.NewPuller(opts...)
	if err != nil {
		return nil, "", err
	}
	i.pullers.Add(key, p)
	return p, key, nil
}

// caKey names a CA bundle in cache keys: "system" for the system roots.
func caKey(ca []byte) string {
	if ca == nil {
		return "system"
	}
	sum := sha256.Sum256(ca)
	return "ca-" + hex.EncodeToString(sum[:])
}

// inspect reads the manifest, config and, when needed, the layers of the
// image (or of its linux/amd64 member) whose manifest has digest top.
// Every bound of one inspection comes from lim, read once when it starts.
func (i *Inspector) inspect(ctx context.Context, p *remote.Puller, repo name.Repository, top v1.Hash, desc *remote.Descriptor, lim Limits, ec *errContext) (Middleware, error) {
	i.inspections.Add(1)
	what := "manifest " + top.String()
	if desc == nil {
		var err error
		desc, err = p.Get(ctx, repo.Digest(top.String()))
		if err != nil {
			return Middleware{}, ec.classify(err, ReasonBadManifest, what)
		}
	}

	img, digest, what, err := imageOf(desc, top, ec)
	if err != nil {
		return Middleware{}, err
	}
	m := Middleware{Digest: digest.String()}
	cf, err := configOf(img, what, lim, ec)
	if err != nil {
		return Middleware{}, err
	}
	m.Revision = revisionLabel(cf.Config.Labels[LabelRevision])
	m.Base = baseOf(cf)
	if v := strings.TrimSpace(cf.Config.Labels[LabelMiddlewareVersion]); v != "" && v != unknownLabelVersion {
		if len(v) > maxVersion {
			return Middleware{}, ec.invalid(ReasonBadManifest, nil, "the %s label of %s is %d bytes long: not a version", LabelMiddlewareVersion, what, len(v))
		}
		m.Version, m.Source = v, SourceLabel
		return m, nil
	}

	v, err := i.scanLayers(ctx, img, what, lim, ec)
	if err != nil {
		return Middleware{}, err
	}
	if len(v) > maxVersion {
		return Middleware{}, ec.invalid(ReasonBadManifest, nil, "the %s version in the build information of %s is %d bytes long: not a version", FuncGoModule, what, len(v))
	}
	if v != "" {
		m.Version, m.Source = v, SourceBuildInfo
	}
	return m, nil
}

// imageOf returns the image of manifest desc (of digest top), or of its
// linux/amd64 member when desc is an index, with that image's digest and a name
// of it for errors.
func imageOf(desc *remote.Descriptor, top v1.Hash, ec *errContext) (v1.Image, v1.Hash, string, error) {
	what := "manifest " + top.String()
	switch {
	case desc.MediaType.IsIndex():
		idx, err := desc.ImageIndex()
		if err != nil {
			return nil, v1.Hash{}, "", ec.classify(err, ReasonBadManifest, "index "+top.String())
		}
		return pickImage(idx, top, ec)
	case desc.MediaType.IsSchema1():
		return nil, v1.Hash{}, "", ec.invalid(ReasonBadManifest, nil,
			"%s is a Docker schema 1 manifest (%s), which is not supported", what, desc.MediaType)
	default:
		// Images, and manifests whose Content-Type a registry got wrong.
		img, err := desc.Image()
		if err != nil {
			return nil, v1.Hash{}, "", ec.classify(err, ReasonBadManifest, what)
		}
		return img, top, "image " + top.String(), nil
	}
}

// configOf reads the config of img (named what in errors), verified against the
// manifest's descriptor, when it is within the memory cap.
func configOf(img v1.Image, what string, lim Limits, ec *errContext) (*v1.ConfigFile, error) {
	mf, err := img.Manifest()
	if err != nil {
		return nil, ec.classify(err, ReasonBadManifest, "manifest of "+what)
	}
	if mf.Config.Size > lim.MaxMemory {
		return nil, ec.invalid(ReasonTooLarge, nil, "the config of %s is %d bytes, more than the %d the operator reads (ConfigMap key inspectMaxMemory)",
			what, mf.Config.Size, lim.MaxMemory)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, ec.classify(err, ReasonBadManifest, "config of "+what)
	}
	return cf, nil
}

// revisionLabel returns the revision label's value when it is one: short, printable
// ASCII without spaces.
func revisionLabel(v string) string {
	v = strings.TrimSpace(v)
	if len(v) > maxRevision {
		return ""
	}
	for i := 0; i < len(v); i++ {
		if v[i] <= ' ' || v[i] > '~' {
			return ""
		}
	}
	return v
}

// pickImage chooses the linux/amd64 image of an index, else its first image
// (attestation manifests are passed over), following nested indexes.
func pickImage(idx v1.ImageIndex, top v1.Hash, ec *errContext) (v1.Image, v1.Hash, string, error) {
	path := "index " + top.String()
	for depth := 0; depth < 4; depth++ {
		im, err := idx.IndexManifest()
		if err != nil {
			return nil, v1.Hash{}, "", ec.classify(err, ReasonBadManifest, path)
		}
		child, which, ok := choosePlatform(im.Manifests)
		if !ok {
			return nil, v1.Hash{}, "", ec.invalid(ReasonBadManifest, nil, "%s lists no image manifest", path)
		}
		path = fmt.Sprintf("%s manifest %s of %s", which, child.Digest, path)
		if child.MediaType.IsIndex() {
			if idx, err = idx.ImageIndex(child.Digest); err != nil {
				return nil, v1.Hash{}, "", ec.classify(err, ReasonBadManifest, path)
			}
			continue
		}
		img, err := idx.Image(child.Digest)
		if err != nil {
			return nil, v1.Hash{}, "", ec.classify(err, ReasonBadManifest, path)
		}
		return img, child.Digest, path, nil
	}
	return nil, v1.Hash{}, "", ec.invalid(ReasonBadManifest, nil, "%s: indexes nested too deeply", path)
}

func choosePlatform(manifests []v1.Descriptor) (v1.Descriptor, string, bool) {
	for _, d := range manifests {
		if d.Platform != nil && d.Platform.OS == "linux" && d.Platform.Architecture == "amd64" &&
			(d.MediaType.IsImage() || d.MediaType.IsIndex()) {
			return d, "linux/amd64", true
		}
	}
	for _, d := range manifests {
		if (!d.MediaType.IsImage() && !d.MediaType.IsIndex()) || isAttestation(d) {
			continue
		}
		plat := "no platform"
		if d.Platform != nil {
			plat = d.Platform.String()
		}
		return d, fmt.Sprintf("first (%s; the index has no linux/amd64)", plat), true
	}
	return v1.Descriptor{}, "", false
}

// isAttestation recognises BuildKit's attestation manifests, which are
// listed in indexes with platform unknown/unknown.
func isAttestation(d v1.Descriptor) bool {
	if d.Annotations["vnd.docker.reference.type"] == "attestation-manifest" {
		return true
	}
	return d.Platform != nil && d.Platform.OS == "unknown" && d.Platform.Architecture == "unknown"
}

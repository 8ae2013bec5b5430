package rebase

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/buildpacks/lifecycle/api"
	"github.com/buildpacks/lifecycle/phase"
	"github.com/buildpacks/lifecycle/platform"
	"github.com/buildpacks/lifecycle/platform/files"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/fnops/func-operator/pkg/netguard"
)

const (
	// DefaultTimeout bounds a Rebase whose context has no deadline.
	DefaultTimeout = 10 * time.Minute
	// DefaultMaxMemory caps a manifest, a config, a token answer or an error body.
	DefaultMaxMemory = 16 << 20
	// DefaultMaxBytes caps one blob read: a layer copied from a run image in
	// another registry than the target.
	DefaultMaxBytes = 4 << 30
)

// defaultPlatform is the image taken from an index when the Request names none.
var defaultPlatform = v1.Platform{OS: "linux", Architecture: "amd64"}

// Rebaser rebases app images; safe for concurrent use.
type Rebaser struct {
	// Transport carries every registry request: the operator's guarded transport
	// (netguard.Guard.Transport(0)). nil: remote.DefaultTransport, for tests.
	Transport http.RoundTripper
	// Guard gives the transport of a Request with a CA bundle
	// (Guard.TransportWithCA(0, Request.CA)), in place of Transport. Without it
	// such a Request fails.
	Guard *netguard.Guard
	// Options are passed to every go-containerregistry call (remote.WithRetryBackoff,
	// remote.WithUserAgent, ...), before this package's: never remote.WithAuth (the
	// Request's keychain is used) nor remote.WithTransport (Transport is).
	Options []remote.Option
	// MaxMemory caps what is read of a manifest, a config or any answer but a blob
	// (DefaultMaxMemory when 0); MaxBytes caps a blob (DefaultMaxBytes when 0).
	MaxMemory, MaxBytes int64
}

// Request is one rebase.
type Request struct {
	// App is the app image, by digest (repo@sha256:...): an image, or an index
	// from which Platform's image is taken.
	App string
	// RunImage is the run image to rebase onto, by digest (repo@sha256:...), in
	// the repository it is read from (a mirror's, maybe). An index gives the image
	// of the app's os, architecture and variant.
	RunImage string
	// RunImageName is the name the app's metadata knows the run image by
	// (runImage.image, or one of runImage.mirrors, tag included): lifecycle
	// refuses a run image whose name the metadata does not list. Digests are
	// ignored and a missing tag is "latest" in that comparison. "": RunImage's
	// repository, that is repository:latest.
	RunImageName string
	// Target is the repository the rebased image is pushed to, by digest, with no
	// tag; "": the App's repository.
	Target string
	// Keychain gives the credentials to read App and RunImage and to push to
	// Target; nil: anonymous.
	Keychain authn.Keychain
	// CA is a PEM bundle of CA certificates trusted besides the system roots (a
	// registry Secret's ca.crt); nil: the system roots. See Rebaser.Guard.
	CA []byte
	// Platform is the image taken when App is an index; nil: linux/amd64.
	Platform *v1.Platform
}

// Result is a rebased image.
type Result struct {
	// Image is the rebased image by digest: Target@sha256:...
	Image string
	// Digest is the rebased image's manifest digest.
	Digest string
	// TopLayer is the new run image's top layer (diff ID), now in the metadata.
	TopLayer string
	// Reference is the run image reference, by digest, now in the metadata.
	Reference string
	// Mounted and Uploaded count the blobs the push mounted from another
	// repository of the target registry and those it uploaded (config included);
	// blobs already in the target repository count in neither.
	Mounted, Uploaded int
	// UploadedBytes is what the push uploaded.
	UploadedBytes int64
}

// Rebase reads req.App and req.RunImage, has lifecycle rebase the first onto the
// second, and pushes the result to req.Target by digest. Errors are *Error. A ctx
// without deadline gets DefaultTimeout.
func (r *Rebaser) Rebase(ctx context.Context, req Request) (Result, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	maxMemory, maxBytes := r.MaxMemory, r.MaxBytes
	if maxMemory <= 0 {
		maxMemory = DefaultMaxMemory
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	ctx = netguard.WithReadLimitFunc(ctx, func(req *http.Request) int64 {
		if isBlobRead(req) {
			return maxBytes
		}
		return maxMemory
	})

	ec := &errContext{}
	appRef, runRef, target, err := parseRequest(ec, req)
	if err != nil {
		return Result{}, err
	}
	ec.target = target.RegistryStr()
	kc := req.Keychain
	if kc == nil {
		kc = anonymous{}
	}
	for _, repo := range []name.Repository{appRef.Context(), runRef.Context(), target} {
		auth, err := authn.Resolve(ctx, kc, repo)
		var cfg *authn.AuthConfig
		if err == nil {
			cfg, err = auth.Authorization()
		}
		if err != nil {
			// The keychain's error text may hold anything: it is not quoted.
			return Result{}, ec.newError(Failed, repo.Name(), err, "cannot get the credentials for registry %s", repo.RegistryStr())
		}
		ec.addCredentials(cfg)
	}

	base := r.Transport
	if base == nil {
		base = remote.DefaultTransport
	}
	if req.CA != nil {
		if r.Guard == nil {
			return Result{}, ec.newError(Failed, req.App, nil, "the rebaser has no transport for a CA bundle (Rebaser.Guard is not set)")
		}
		if base, err = r.Guard.TransportWithCA(0, req.CA); err != nil {
			return Result{}, ec.newError(InvalidRequest, req.App, err, "Request.CA: %v", err)
		}
	}
	counter := &countingTransport{next: base}
	opts := append(slices.Clone(r.Options),
		remote.WithContext(ctx), remote.WithAuthFromKeychain(kc), remote.WithTransport(counter))

	plat := defaultPlatform
	if req.Platform != nil {
		plat = *req.Platform
	}
	app, err := readImage(ec, appRef, plat, AppImageNotFound, "the app image", opts)
	if err != nil {
		return Result{}, err
	}
	if err := checkApp(ec, req.App, app); err != nil {
		return Result{}, err
	}
	appCfg, _ := app.ConfigFile() // read by readImage
	run, err := readImage(ec, runRef,
		v1.Platform{OS: appCfg.OS, Architecture: appCfg.Architecture, Variant: appCfg.Variant},
		RunImageNotFound, "the run image", opts)
	if err != nil {
		return Result{}, err
	}
	if runCfg, _ := run.ConfigFile(); len(runCfg.RootFS.DiffIDs) == 0 {
		return Result{}, ec.newError(NotRebasable, req.RunImage, nil, "the run image %s has no layer", req.RunImage)
	}

	wopts := opts
	if mountsFrom(target, appRef.Context(), runRef.Context()) {
		// go-containerregistry (< v0.21.9) swaps its HTTP client, for the token of
		// a mount's source repository, under the feet of its concurrent uploads: a
		// data race (google/go-containerregistry#2391). Mounts are one request
		// each: they are made one at a time.
		wopts = append(slices.Clone(opts), remote.WithJobs(1))
	}
	write := func(ref name.Digest, img v1.Image) error {
		if err := remote.Write(ref, img, wopts...); err != nil {
			return ec.classify(err, opWrite, ref.String(), PushRefused, "pushing the rebased image to "+ref.Context().Name())
		}
		return nil
	}
	working, err := newCNBImage(app, appRef.Context().Name(), appRef.Context(), write)
	if err != nil {
		return Result{}, ec.newError(Failed, req.App, err, "the app image %s: %v", req.App, err)
	}
	runName := req.RunImageName
	if runName == "" {
		runName = runRef.Context().Name()
	}
	newBase, err := newCNBImage(run, runName, runRef.Context(), nil)
	if err != nil {
		return Result{}, ec.newError(Failed, req.RunImage, err, "the run image %s: %v", req.RunImage, err)
	}

	lc := &phase.Rebaser{Logger: discardLogger{}, PlatformAPI: api.Platform.Latest()}
	if _, err := lc.Rebase(working, newBase, target.Name(), nil); err != nil {
		return Result{}, lifecycleError(ec, err, working, req)
	}
	if working.saved == nil {
		return Result{}, ec.newError(Failed, req.App, nil, "lifecycle rebased %s but did not save it", req.App)
	}

	res := Result{
		Image:         working.saved.String(),
		Digest:        working.saved.DigestStr(),
		Mounted:       int(counter.mounted.Load()),
		Uploaded:      int(counter.uploaded.Load()),
		UploadedBytes: counter.uploadedBytes.Load(),
	}
	var after files.LayersMetadataCompat
	if label, err := working.Label(platform.LifecycleMetadataLabel); err == nil && json.Unmarshal([]byte(label), &after) == nil {
		res.TopLayer, res.Reference = after.RunImage.TopLayer, after.RunImage.Reference
	}
	return res, nil
}

// isBlobRead reports whether req reads a blob: a GET of /v2/<repo>/blobs/<digest>,
// or a request it was redirected to (registries backed by object storage, GCR's,
// ECR's, Quay's, send blobs from another host and path).
func isBlobRead(req *http.Request) bool {
	for hops := 0; req != nil && hops < 20; hops++ {
		if p := req.URL.Path; strings.Contains(p, "/blobs/") && !strings.Contains(p, "/blobs/uploads/") {
			return true
		}
		if req.Response == nil {
			return false
		}
		req = req.Response.Request
	}
	return false
}

// mountsFrom reports whether a push to target may mount blobs from one of
// sources: another repository of the same registry.
func mountsFrom(target name.Repository, sources ...name.Repository) bool {
	for _, src := range sources {
		if src.Registry == target.Registry && src.String() != target.String() {
			return true
		}
	}
	return false
}

// parseRequest checks the references of req: App and RunImage by digest, Target
// a repository (App's when empty), RunImageName a name.
func parseRequest(ec *errContext, req Request) (app, run name.Digest, target name.Repository, err error) {
	if app, err = name.NewDigest(strings.TrimSpace(req.App)); err != nil {
		return app, run, target, ec.newError(InvalidRequest, req.App, err, "the app image %q is no reference by digest (repository@sha256:...)", req.App)
	}
	if run, err = name.NewDigest(strings.TrimSpace(req.RunImage)); err != nil {
		return app, run, target, ec.newError(InvalidRequest, req.RunImage, err, "the run image %q is no reference by digest (repository@sha256:...)", req.RunImage)
	}
	if req.RunImageName != "" {
		if _, err = name.ParseReference(req.RunImageName); err != nil {
			return app, run, target, ec.newError(InvalidRequest, req.RunImageName, err, "the run image name %q is no image name", req.RunImageName)
		}
	}
	target = app.Context()
	if req.Target != "" {
		if target, err = name.NewRepository(strings.TrimSpace(req.Target)); err != nil {
			return app, run, target, ec.newError(InvalidRequest, req.Target, err, "the target %q is no repository (a repository, without tag or digest)", req.Target)
		}
	}
	return app, run, target, nil
}

// readImage reads the image of ref (of plat, when ref is an index): its manifest
// and config now, so that lifecycle, which reads them through its own calls
// without a context, finds them read. Layers are not read.
func readImage(ec *errContext, ref name.Digest, plat v1.Platform, notFound Reason, what string, opts []remote.Option) (v1.Image, error) {
	what += " " + ref.String()
	img, err := remote.Image(ref, append(slices.Clone(opts), remote.WithPlatform(plat))...)
	if err != nil {
		if strings.Contains(err.Error(), "no child with platform") {
			return nil, ec.newError(notFound, ref.String(), err, "%s is an index without an image for %s", what, plat.String())
		}
		return nil, ec.classify(err, opRead, ref.String(), notFound, "reading "+what)
	}
	if _, err := img.Manifest(); err != nil {
		return nil, ec.classify(err, opRead, ref.String(), notFound, "reading the manifest of "+what)
	}
	if _, err := img.ConfigFile(); err != nil {
		return nil, ec.classify(err, opRead, ref.String(), notFound, "reading the config of "+what)
	}
	return img, nil
}

// checkApp checks what lifecycle takes on trust: a metadata label it can decode,
// whose run image top layer is a layer of the app, and a platform API it can parse
// (lifecycle panics on one it cannot).
func checkApp(ec *errContext, ref string, app v1.Image) error {
	var md files.LayersMetadataCompat
	cf, err := app.ConfigFile()
	if err != nil {
		return ec.newError(Failed, ref, err, "the config of the app image %s: %v", ref, err)
	}
	label, ok := cf.Config.Labels[platform.LifecycleMetadataLabel]
	if !ok || strings.TrimSpace(label) == "" {
		return ec.newError(MetadataInvalid, ref, nil, "the app image %s has no %s label: it was not built by buildpacks", ref, platform.LifecycleMetadataLabel)
	}
	if err := json.Unmarshal([]byte(label), &md); err != nil {
		return ec.newError(MetadataInvalid, ref, err, "the %s label of the app image %s is not lifecycle metadata: %v", platform.LifecycleMetadataLabel, ref, err)
	}
	top, err := v1.NewHash(md.RunImage.TopLayer)
	if err != nil {
		return ec.newError(MetadataInvalid, ref, err, "the %s label of the app image %s gives no run image top layer (runImage.topLayer %q)",
			platform.LifecycleMetadataLabel, ref, md.RunImage.TopLayer)
	}
	if !slices.Contains(cf.RootFS.DiffIDs, top) {
		return ec.newError(MetadataInvalid, ref, nil, "the %s label of the app image %s names run image top layer %s, which is not a layer of the image",
			platform.LifecycleMetadataLabel, ref, top)
	}
	for _, e := range cf.Config.Env {
		if v, ok := strings.CutPrefix(e, platform.EnvPlatformAPI+"="); ok && v != "" {
			if _, err := api.NewVersion(v); err != nil {
				return ec.newError(MetadataInvalid, ref, err, "the app image %s has %s=%q, no platform API version", ref, platform.EnvPlatformAPI, v)
			}
		}
	}
	return nil
}

// lifecycleError classifies an error of lifecycle's Rebaser: a push error is
// already an *Error; before the layer swap, and in the run image name check after
// it, lifecycle refuses the rebase (NotRebasable); anything else failed.
func lifecycleError(ec *errContext, err error, working *cnbImage, req Request) error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	// lifecycle's advice is to its command line's users.
	msg := strings.ReplaceAll(err.Error(), "; please provide -force to override", "")
	if !working.swapped || strings.Contains(msg, "not found in existing run image metadata") {
		return ec.newError(NotRebasable, req.App, err, "lifecycle refuses to rebase %s onto %s: %s", req.App, req.RunImage, netguard.ServerText(msg))
	}
	return ec.newError(Failed, req.App, err, "rebasing %s onto %s: %s", req.App, req.RunImage, netguard.ServerText(msg))
}

// anonymous resolves every registry to no credentials.
type anonymous struct{}

func (anonymous) Resolve(authn.Resource) (authn.Authenticator, error) { return authn.Anonymous, nil }

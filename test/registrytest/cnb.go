package registrytest

import (
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/buildpacks/imgutil"
	"github.com/buildpacks/lifecycle/buildpack"
	"github.com/buildpacks/lifecycle/platform"
	"github.com/buildpacks/lifecycle/platform/files"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// CNBImage is a buildpacks image (a run image or an app image) pushed to a Registry.
type CNBImage struct {
	// Ref is the image by digest: repository@sha256:...
	Ref string
	// Image is what was pushed.
	Image v1.Image
	// DiffIDs are its layers' diff IDs, bottom first.
	DiffIDs []v1.Hash
}

// TopLayer is the diff ID of the image's top layer.
func (c CNBImage) TopLayer() v1.Hash { return c.DiffIDs[len(c.DiffIDs)-1] }

// runLayerSize is the size of the random content of a run image's layer.
const runLayerSize = 1024

// PushRunImage pushes to tag a linux/amd64 run image as a stack author builds one
// (Paketo's jammy tiny: stack and target labels, a non-root user). On nil it has two
// layers of random content; otherwise it is the next version of on: on's layers but
// its top one, then a new top layer, as a run image update with patched packages is.
func (r *Registry) PushRunImage(t testing.TB, tag string, on *CNBImage) CNBImage {
	t.Helper()
	var kept []v1.Layer
	if on != nil {
		layers, err := on.Image.Layers()
		if err != nil {
			t.Fatal(err)
		}
		kept = layers[:len(layers)-1]
	} else {
		l, err := random.Layer(runLayerSize, types.DockerLayer)
		if err != nil {
			t.Fatal(err)
		}
		kept = []v1.Layer{l}
	}
	top, err := random.Layer(runLayerSize, types.DockerLayer)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &v1.ConfigFile{
		OS: imageOS, Architecture: imageArch,
		Created: v1.Time{Time: time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)},
		Config: v1.Config{
			Env:  []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
			User: "1002:1000",
			Labels: map[string]string{
				platform.StackIDLabel:         "io.buildpacks.stacks.jammy.tiny",
				platform.MixinsLabel:          `["ca-certificates","run:tzdata"]`,
				platform.OSDistroNameLabel:    "ubuntu",
				platform.OSDistroVersionLabel: "22.04",
			},
		},
		RootFS: v1.RootFS{Type: "layers"},
	}
	img, err := mutate.ConfigFile(mutate.MediaType(empty.Image, types.DockerManifestSchema2), cfg)
	if err != nil {
		t.Fatal(err)
	}
	adds := make([]mutate.Addendum, 0, len(kept)+1)
	for _, l := range append(kept, top) {
		adds = append(adds, mutate.Addendum{Layer: l, MediaType: types.DockerLayer, History: v1.History{CreatedBy: "RUN apt-get install"}})
	}
	if img, err = mutate.Append(img, adds...); err != nil {
		t.Fatal(err)
	}
	return r.PushCNB(t, tag, img)
}

// CNBApp describes an app image as lifecycle's exporter writes it.
type CNBApp struct {
	// RunImage is the run image's name as the exporter records it (runImage.image):
	// the tag it was pulled by.
	RunImage string
	// Labels are more labels, such as MiddlewareLabel and RevisionLabel.
	Labels map[string]string
	// TopLayer, when set, is written as runImage.topLayer in place of the run
	// image's top layer: a label that lies.
	TopLayer string
}

// PushCNBApp pushes to tag an app image built on run, as lifecycle's exporter writes
// it: the run image's config and layers, two app layers, the metadata label
// io.buildpacks.lifecycle.metadata (runImage.image, reference run.Ref and topLayer,
// decoded with lifecycle's own types), io.buildpacks.build.metadata,
// CNB_PLATFORM_API, created 1980, and app's labels.
func (r *Registry) PushCNBApp(t testing.TB, tag string, run CNBImage, app CNBApp) CNBImage {
	t.Helper()
	img := run.Image
	adds := make([]mutate.Addendum, 0, 2)
	appLayers := make([]files.LayerMetadata, 0, 2)
	for _, size := range []int64{1024, 2048} {
		l, err := random.Layer(size, types.DockerLayer)
		if err != nil {
			t.Fatal(err)
		}
		d, err := l.DiffID()
		if err != nil {
			t.Fatal(err)
		}
		appLayers = append(appLayers, files.LayerMetadata{SHA: d.String()})
		adds = append(adds, mutate.Addendum{Layer: l, MediaType: types.DockerLayer})
	}
	img, err := mutate.Append(img, adds...)
	if err != nil {
		t.Fatal(err)
	}
	top := app.TopLayer
	if top == "" {
		top = run.TopLayer().String()
	}
	md := files.LayersMetadataCompat{
		App: appLayers,
		Buildpacks: []buildpack.LayersMetadata{{
			ID: "paketo-buildpacks/go-build", Version: "1.2.3",
			Layers: map[string]buildpack.LayerMetadata{"targets": {SHA: appLayers[0].SHA}},
		}},
		Config:   files.LayerMetadata{SHA: appLayers[1].SHA},
		Launcher: files.LayerMetadata{SHA: appLayers[0].SHA},
		RunImage: files.RunImageForRebase{
			TopLayer: top, Reference: run.Ref,
			RunImageForExport: files.RunImageForExport{Image: app.RunImage},
		},
	}
	label, err := json.Marshal(md)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.Created = v1.Time{Time: imgutil.NormalizedDateTime}
	cf.Config.Labels[platform.LifecycleMetadataLabel] = string(label)
	cf.Config.Labels[platform.BuildMetadataLabel] = `{"processes":[{"type":"web","command":["/layers/app/bin/fn"]}],"launcher":{"version":"0.21.0"}}`
	for k, v := range app.Labels {
		cf.Config.Labels[k] = v
	}
	cf.Config.Env = append(cf.Config.Env, platform.EnvPlatformAPI+"=0.14")
	cf.Config.Entrypoint = []string{"/cnb/process/web"}
	cf.Config.WorkingDir = "/workspace"
	cf.History = make([]v1.History, len(cf.RootFS.DiffIDs))
	for i := range cf.History {
		cf.History[i].Created = v1.Time{Time: imgutil.NormalizedDateTime}
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	return r.PushCNB(t, tag, img)
}

// ReadCNB reads ref (by digest) from the registry, with its credentials, layers
// included: every layer blob is read from ref's repository and checked against its
// digest, so an image whose layers that repository does not hold fails.
func (r *Registry) ReadCNB(t testing.TB, ref string) CNBImage {
	t.Helper()
	d, err := name.NewDigest(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(d, remote.WithAuth(r.auth()))
	if err != nil {
		t.Fatalf("reading %s: %v", ref, err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range layers {
		if err := readLayer(l); err != nil {
			t.Fatalf("reading a layer of %s: %v", ref, err)
		}
	}
	return describeCNB(t, ref, img)
}

// readLayer reads l's compressed blob whole: go-containerregistry checks its digest
// at the end.
func readLayer(l v1.Layer) error {
	rc, err := l.Compressed()
	if err != nil {
		return err
	}
	defer func() { _ = rc.Close() }()
	_, err = io.Copy(io.Discard, rc)
	return err
}

// DeleteManifest deletes the manifest ref names (a tag, or a digest) from the
// registry, with its credentials. A tag's manifest stays under its digest, and the
// other way round: deleting a digest leaves a tag that names a manifest no longer
// there, as a registry's garbage collection can leave it.
func (r *Registry) DeleteManifest(t testing.TB, ref string) {
	t.Helper()
	parsed, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Delete(parsed, remote.WithAuth(r.auth())); err != nil {
		t.Fatalf("deleting %s: %v", ref, err)
	}
}

// auth is the registry's credentials, anonymous for a public one.
func (r *Registry) auth() authn.Authenticator {
	if r.user == "" {
		return authn.Anonymous
	}
	return &authn.Basic{Username: r.user, Password: r.password}
}

// PushCNB pushes img to ref, a tag or a digest, with the registry's credentials and
// returns it by digest. (A push to a tag that names img already writes nothing: a
// manifest deleted by digest comes back with a push by digest.)
func (r *Registry) PushCNB(t testing.TB, ref string, img v1.Image) CNBImage {
	t.Helper()
	parsed, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(parsed, img, remote.WithAuth(r.auth())); err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return describeCNB(t, parsed.Context().Name()+"@"+d.String(), img)
}

func describeCNB(t testing.TB, ref string, img v1.Image) CNBImage {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if len(cf.RootFS.DiffIDs) == 0 {
		t.Fatalf("image %s has no layers", ref)
	}
	return CNBImage{Ref: ref, Image: img, DiffIDs: append([]v1.Hash(nil), cf.RootFS.DiffIDs...)}
}

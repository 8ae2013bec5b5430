package rebase

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
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

	"github.com/fnops/func-operator/test/registrytest"
)

// Labels func v0.50 writes on every function image, besides lifecycle's.
const (
	middlewareLabel = registrytest.MiddlewareLabel
	revisionLabel   = registrytest.RevisionLabel
)

// fastBackoff retries a failed request once, at once: tests of outages do not wait.
var fastBackoff = remote.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 2}

// image is an image pushed to a test registry.
type image struct {
	ref     string // repository@sha256:...
	img     v1.Image
	diffIDs []v1.Hash
	digests []v1.Hash // of the layers
}

// runSpec describes a run image as a stack author builds it (a Dockerfile).
type runSpec struct {
	layers    []int64           // sizes of the layers' random content
	labels    map[string]string // besides the defaults of runLabels
	arch      string            // "": amd64
	oci       bool              // OCI media types, else Docker's
	noHistory bool
}

// runLabels are a Paketo-like run image's labels: stack id (platform API < 0.12)
// and target labels (>= 0.12).
func runLabels(distroVersion string) map[string]string {
	return map[string]string{
		platform.StackIDLabel:            "io.buildpacks.stacks.jammy.tiny",
		platform.MixinsLabel:             `["ca-certificates","run:tzdata"]`,
		platform.OSDistroNameLabel:       "ubuntu",
		platform.OSDistroVersionLabel:    distroVersion,
		"io.buildpacks.stack.maintainer": "test",
		"io.buildpacks.base.maintainer":  "test",
	}
}

// buildRun builds a run image; layers given come first (a base shared with an
// older run image), then random ones of spec.layers.
func buildRun(t testing.TB, spec runSpec, shared ...v1.Layer) v1.Image {
	t.Helper()
	lt, mt, ct := types.DockerLayer, types.DockerManifestSchema2, types.DockerConfigJSON
	if spec.oci {
		lt, mt, ct = types.OCILayer, types.OCIManifestSchema1, types.OCIConfigJSON
	}
	arch := spec.arch
	if arch == "" {
		arch = "amd64"
	}
	labels := runLabels("22.04")
	for k, v := range spec.labels {
		labels[k] = v
	}
	cfg := &v1.ConfigFile{
		OS: "linux", Architecture: arch,
		Created: v1.Time{Time: time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)},
		Config: v1.Config{
			Env:    []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
			User:   "1002:1000",
			Labels: labels,
		},
		RootFS: v1.RootFS{Type: "layers"},
	}
	img, err := mutate.ConfigFile(mutate.MediaType(empty.Image, mt), cfg)
	if err != nil {
		t.Fatal(err)
	}
	img = mutate.ConfigMediaType(img, ct)
	adds := make([]mutate.Addendum, 0, len(shared)+len(spec.layers)+1)
	for _, l := range shared {
		adds = append(adds, mutate.Addendum{Layer: l, MediaType: lt, History: v1.History{CreatedBy: "COPY shared /"}})
	}
	for _, size := range spec.layers {
		l, err := random.Layer(size, lt)
		if err != nil {
			t.Fatal(err)
		}
		adds = append(adds, mutate.Addendum{Layer: l, MediaType: lt, History: v1.History{CreatedBy: "RUN apt-get install"}})
	}
	// An ENV line: history without a layer, as Dockerfiles leave.
	adds = append(adds, mutate.Addendum{History: v1.History{CreatedBy: "ENV CNB_USER_ID=1002", EmptyLayer: true}})
	if img, err = mutate.Append(img, adds...); err != nil {
		t.Fatal(err)
	}
	if spec.noHistory {
		img = withoutHistory(t, img)
	}
	return img
}

// withoutHistory drops the history of img.
func withoutHistory(t testing.TB, img v1.Image) v1.Image {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.History = nil
	out, err := mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// appSpec describes an app image as lifecycle's exporter writes it.
type appSpec struct {
	layers      []int64 // sizes of the app layers
	platformAPI string  // CNB_PLATFORM_API; "" leaves it out
	runName     string  // runImage.image
	mirrors     []string
	// metadata, when set, edits the metadata label before it is written; its
	// string form, when set, replaces it ("" removes it).
	metadata func(*files.LayersMetadataCompat)
	rawLabel *string
	labels   map[string]string // more labels (io.buildpacks.rebasable...)
	// history: "normal" (one empty entry per layer, as the exporter writes),
	// "none", or "long" (more entries than layers).
	history string
}

// buildApp builds an app image on run (pushed as runRef), as lifecycle's exporter
// does: the run image's config and layers, the app's layers, the lifecycle
// metadata label, CNB_PLATFORM_API, created 1980 and a history of empty entries.
func buildApp(t testing.TB, run v1.Image, runRef string, spec appSpec) v1.Image {
	t.Helper()
	runCfg, err := run.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	m, err := run.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	lt := types.DockerLayer
	if m.MediaType == types.OCIManifestSchema1 {
		lt = types.OCILayer
	}
	img := run
	adds := make([]mutate.Addendum, 0, len(spec.layers))
	appLayers := make([]files.LayerMetadata, 0, len(spec.layers))
	for _, size := range spec.layers {
		l, err := random.Layer(size, lt)
		if err != nil {
			t.Fatal(err)
		}
		d, _ := l.DiffID()
		appLayers = append(appLayers, files.LayerMetadata{SHA: d.String()})
		adds = append(adds, mutate.Addendum{Layer: l, MediaType: lt})
	}
	if img, err = mutate.Append(img, adds...); err != nil {
		t.Fatal(err)
	}
	md := files.LayersMetadataCompat{
		App: appLayers,
		Buildpacks: []buildpack.LayersMetadata{{
			ID: "paketo-buildpacks/go-build", Version: "1.2.3",
			Layers: map[string]buildpack.LayerMetadata{"targets": {SHA: appLayers[0].SHA}},
		}},
		Config:   files.LayerMetadata{SHA: appLayers[len(appLayers)-1].SHA},
		Launcher: files.LayerMetadata{SHA: appLayers[0].SHA},
		RunImage: files.RunImageForRebase{
			TopLayer:  runCfg.RootFS.DiffIDs[len(runCfg.RootFS.DiffIDs)-1].String(),
			Reference: runRef,
			RunImageForExport: files.RunImageForExport{
				Image:   spec.runName,
				Mirrors: spec.mirrors,
			},
		},
	}
	if spec.platformAPI != "" && !atLeast012(spec.platformAPI) {
		// Before platform API 0.12 the exporter wrote the run image under "stack".
		md.Stack = &files.Stack{RunImage: files.RunImageForExport{Image: spec.runName, Mirrors: spec.mirrors}}
	}
	if spec.metadata != nil {
		spec.metadata(&md)
	}
	raw, err := json.Marshal(md)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.Created = v1.Time{Time: imgutil.NormalizedDateTime}
	cf.Config.Labels[platform.LifecycleMetadataLabel] = string(raw)
	if spec.rawLabel != nil {
		if *spec.rawLabel == "" {
			delete(cf.Config.Labels, platform.LifecycleMetadataLabel)
		} else {
			cf.Config.Labels[platform.LifecycleMetadataLabel] = *spec.rawLabel
		}
	}
	cf.Config.Labels[platform.BuildMetadataLabel] = `{"processes":[{"type":"web","command":["/layers/app/bin/fn"]}],"launcher":{"version":"0.21.0"}}`
	cf.Config.Labels[middlewareLabel] = "v0.21.3"
	cf.Config.Labels[revisionLabel] = "0123456789abcdef0123456789abcdef01234567"
	for k, v := range spec.labels {
		cf.Config.Labels[k] = v
	}
	if spec.platformAPI != "" {
		cf.Config.Env = append(cf.Config.Env, platform.EnvPlatformAPI+"="+spec.platformAPI)
	}
	cf.Config.Entrypoint = []string{"/cnb/process/web"}
	cf.Config.WorkingDir = "/workspace"
	switch spec.history {
	case "none":
		cf.History = nil
	case "long":
		cf.History = make([]v1.History, len(cf.RootFS.DiffIDs)+3)
	default:
		cf.History = make([]v1.History, len(cf.RootFS.DiffIDs))
		for i := range cf.History {
			cf.History[i].Created = v1.Time{Time: imgutil.NormalizedDateTime}
		}
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	return img
}

func atLeast012(v string) bool {
	var major, minor int
	if _, err := fmt.Sscanf(v, "%d.%d", &major, &minor); err != nil {
		return true
	}
	return major > 0 || minor >= 12
}

// push writes img to ref (a tag) with opts and returns it by digest.
func push(t testing.TB, ref string, img v1.Image, opts ...remote.Option) image {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img, opts...); err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
	return describe(t, r.Context().Name(), img)
}

// describe returns img of repository by digest, with its layers.
func describe(t testing.TB, repository string, img v1.Image) image {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	out := image{ref: repository + "@" + d.String(), img: img}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range layers {
		diffID, err := l.DiffID()
		if err != nil {
			t.Fatal(err)
		}
		digest, err := l.Digest()
		if err != nil {
			t.Fatal(err)
		}
		out.diffIDs = append(out.diffIDs, diffID)
		out.digests = append(out.digests, digest)
	}
	return out
}

// pull reads ref (by digest) from the registry, with opts.
func pull(t testing.TB, ref string, opts ...remote.Option) image {
	t.Helper()
	r, err := name.NewDigest(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(r, opts...)
	if err != nil {
		t.Fatalf("pulling %s: %v", ref, err)
	}
	return describe(t, r.Context().Name(), img)
}

// keychain resolves registries (host:port) to credentials; others are anonymous.
type keychain map[string]authn.Authenticator

func (k keychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	if a, ok := k[r.RegistryStr()]; ok {
		return a, nil
	}
	return authn.Anonymous, nil
}

// scene is a registry with a run image, an app built on it, and the run image's
// tag moved to a new run image whose top layers differ.
type scene struct {
	reg            *registrytest.Registry // nil for another registry than registrytest's
	oldRun, newRun image
	app            image
}

// sceneSpec tunes a scene.
type sceneSpec struct {
	app    appSpec
	run    runSpec // the old run image; the new one shares its first layer
	newRun runSpec // "": like run, with a new top layer
	// runRepo is where the run images are pushed ("run").
	runRepo string
}

// newScene pushes the scene to a new registry (blobs kept per repository).
func newScene(t testing.TB, spec sceneSpec) *scene {
	t.Helper()
	reg := registrytest.Start(t)
	reg.ScopeBlobs()
	return newSceneIn(t, reg, spec, nil)
}

// newSceneIn pushes the scene to reg, with auth.
func newSceneIn(t testing.TB, reg *registrytest.Registry, spec sceneSpec, auth authn.Authenticator) *scene {
	t.Helper()
	var opts []remote.Option
	if auth != nil {
		opts = append(opts, remote.WithAuth(auth))
	}
	s := newSceneAt(t, reg.Host, spec, opts...)
	s.reg = reg
	return s
}

// newSceneAt pushes the scene to the registry at host, with opts.
func newSceneAt(t testing.TB, host string, spec sceneSpec, opts ...remote.Option) *scene {
	t.Helper()
	if spec.runRepo == "" {
		spec.runRepo = "run"
	}
	if len(spec.run.layers) == 0 {
		spec.run.layers = []int64{2048, 1024, 512}
	}
	if len(spec.app.layers) == 0 {
		spec.app.layers = []int64{1024, 2048}
	}
	if spec.app.platformAPI == "" {
		spec.app.platformAPI = "0.14"
	}
	runTag := host + "/" + spec.runRepo + ":latest"
	if spec.app.runName == "" {
		spec.app.runName = runTag
	}
	old := buildRun(t, spec.run)
	oldRun := push(t, runTag, old, opts...)
	app := push(t, host+"/app:latest", buildApp(t, old, oldRun.ref, spec.app), opts...)

	newSpec := spec.newRun
	if len(newSpec.layers) == 0 {
		newSpec = spec.run
		newSpec.layers = spec.run.layers[1:]
	}
	first, err := old.Layers()
	if err != nil {
		t.Fatal(err)
	}
	newRun := push(t, runTag, buildRun(t, newSpec, first[0]), opts...)
	return &scene{oldRun: oldRun, newRun: newRun, app: app}
}

// request is the rebase of the scene's app onto its new run image.
func (s *scene) request() Request {
	return Request{App: s.app.ref, RunImage: s.newRun.ref}
}

// rebaser returns a Rebaser for tests: the default transport, fast retries.
func rebaser() *Rebaser {
	return &Rebaser{Options: []remote.Option{remote.WithRetryBackoff(fastBackoff)}}
}

// pushed counts the successful manifest and blob writes to repository, and
// lists its tags.
func pushed(t testing.TB, reg *registrytest.Registry, repository string, auth authn.Authenticator) (manifests, blobs int, tags []string) {
	t.Helper()
	prefix := "/v2/" + repository + "/"
	for _, l := range reg.Log() {
		if !strings.HasPrefix(l.Path, prefix) || l.Status/100 != 2 {
			continue
		}
		switch {
		case l.Method == http.MethodPut && strings.Contains(l.Path, "/manifests/"):
			manifests++
		case strings.Contains(l.Path, "/blobs/uploads/") && l.Status == http.StatusCreated:
			blobs++
		}
	}
	return manifests, blobs, listTags(t, reg.Host+"/"+repository, auth)
}

// listTags lists the tags of repository; none when it does not exist.
func listTags(t testing.TB, repository string, auth authn.Authenticator) []string {
	t.Helper()
	repo, err := name.NewRepository(repository)
	if err != nil {
		t.Fatal(err)
	}
	if auth == nil {
		auth = authn.Anonymous
	}
	tags, err := remote.List(repo, remote.WithAuth(auth), remote.WithContext(context.Background()))
	if err != nil {
		if strings.Contains(err.Error(), "NAME_UNKNOWN") {
			return nil
		}
		t.Fatalf("listing the tags of %s: %v", repository, err)
	}
	slices.Sort(tags)
	return tags
}

// metadata decodes the lifecycle metadata label of img as lifecycle does.
func metadata(t testing.TB, img v1.Image) files.LayersMetadataCompat {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	var md files.LayersMetadataCompat
	if err := json.Unmarshal([]byte(cf.Config.Labels[platform.LifecycleMetadataLabel]), &md); err != nil {
		t.Fatalf("decoding the metadata label: %v", err)
	}
	return md
}

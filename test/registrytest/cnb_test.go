package registrytest

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/buildpacks/lifecycle/platform"
	"github.com/buildpacks/lifecycle/platform/files"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestPushCNB: a run image's next version keeps all but its top layer; an app image
// is its run image's layers and two of its own, with lifecycle metadata (read with
// lifecycle's types) naming the run image; a manifest deleted by digest leaves its
// tag naming a manifest the registry does not serve, until pushed by digest again.
func TestPushCNB(t *testing.T) {
	reg := StartPrivate(t, "robot", "pw")
	reg.ScopeBlobs()
	tag := reg.Host + "/paketo/run:latest"
	run1 := reg.PushRunImage(t, tag, nil)
	run2 := reg.PushRunImage(t, tag, &run1)
	if len(run1.DiffIDs) != 2 || len(run2.DiffIDs) != 2 || run2.DiffIDs[0] != run1.DiffIDs[0] || run2.TopLayer() == run1.TopLayer() {
		t.Fatalf("run1 %v, run2 %v: want two layers each, the bottom one shared, the top one new", run1.DiffIDs, run2.DiffIDs)
	}

	app := reg.PushCNBApp(t, reg.Host+"/fns/hello:latest", run1, CNBApp{RunImage: tag, Labels: map[string]string{MiddlewareLabel: "v1"}})
	got := reg.ReadCNB(t, app.Ref)
	if len(got.DiffIDs) != 4 || !slices.Equal(got.DiffIDs[:2], run1.DiffIDs) {
		t.Fatalf("app layers %v, want run1's %v then two", got.DiffIDs, run1.DiffIDs)
	}
	cf, err := got.Image.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	var md files.LayersMetadataCompat
	if err := json.Unmarshal([]byte(cf.Config.Labels[platform.LifecycleMetadataLabel]), &md); err != nil {
		t.Fatal(err)
	}
	if md.RunImage.TopLayer != run1.TopLayer().String() || md.RunImage.Reference != run1.Ref || md.RunImage.Image != tag || cf.Config.Labels[MiddlewareLabel] != "v1" {
		t.Errorf("metadata runImage %+v, labels %v; want run1 by digest, its top layer, the tag, the labels given", md.RunImage, cf.Config.Labels)
	}
	lie := reg.PushCNBApp(t, reg.Host+"/fns/liar:latest", run1, CNBApp{RunImage: tag, TopLayer: run2.TopLayer().String()})
	cf, err = lie.Image.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(cf.Config.Labels[platform.LifecycleMetadataLabel]), &md); err != nil {
		t.Fatal(err)
	}
	if md.RunImage.TopLayer != run2.TopLayer().String() || slices.Contains(lie.DiffIDs, run2.TopLayer()) {
		t.Errorf("a lying label names %s, want run2's top layer, which the image does not hold", md.RunImage.TopLayer)
	}

	reg.DeleteManifest(t, run2.Ref)
	opt := remote.WithAuth(reg.auth())
	ref := func(s string) name.Reference {
		r, err := name.ParseReference(s)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	d, err := remote.Head(ref(tag), opt)
	if err != nil || d.Digest.String() != run2.Ref[len(reg.Host+"/paketo/run@"):] {
		t.Fatalf("HEAD %s = %v, %v; want run2's digest still", tag, d, err)
	}
	if _, err := remote.Get(ref(run2.Ref), opt); err == nil {
		t.Fatalf("GET %s after its deletion succeeded", run2.Ref)
	}
	reg.PushCNB(t, run2.Ref, run2.Image)
	if _, err := remote.Get(ref(run2.Ref), opt); err != nil {
		t.Fatalf("GET %s after the push by digest: %v", run2.Ref, err)
	}
}

package registry

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/buildpacks/lifecycle/platform"
	"github.com/buildpacks/lifecycle/platform/files"
	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	s2iconstants "github.com/openshift/source-to-image/pkg/api/constants"
)

func TestBaseLabelsAreTheirs(t *testing.T) {
	if LabelLifecycleMetadata != platform.LifecycleMetadataLabel {
		t.Errorf("LabelLifecycleMetadata = %q, the lifecycle's is %q", LabelLifecycleMetadata, platform.LifecycleMetadataLabel)
	}
	if LabelS2IBuilder != s2iconstants.BuildImageLabel {
		t.Errorf("LabelS2IBuilder = %q, source-to-image's is %q", LabelS2IBuilder, s2iconstants.BuildImageLabel)
	}
}

// ---------------------------------------------------------------------------
// Images laid out as their builders lay them out.

// runImage is a buildpacks run image: a base layer, and one of its own whose
// content is revision (a new revision is the run image updated).
func runImage(t *testing.T, arch, revision string) v1.Image {
	t.Helper()
	return image(t, arch, map[string]string{"io.buildpacks.stack.id": "io.buildpacks.stacks.jammy"},
		baseLayer(t), layer(t, tarFile{name: "etc/run-image-revision", body: []byte(revision + "\n")}))
}

// appLayers are what the lifecycle exports on top of the run image: a launcher
// layer, an app layer, a config layer.
func appLayers(t *testing.T) []v1.Layer {
	t.Helper()
	return []v1.Layer{
		layer(t, tarFile{name: "cnb/lifecycle/launcher", mode: 0o755, body: []byte("launcher")}),
		layer(t, tarFile{name: "workspace/main.go", body: []byte("package main\n")}),
		layer(t, tarFile{name: "layers/config/metadata.toml", body: []byte("[[processes]]\n")}),
	}
}

// cnbImage lays an app image out as the lifecycle's exporter does: run's
// config and layers, the app's layers on top, the metadata label (label, JSON)
// and the lifecycle's environment. labels are added to the config's.
func cnbImage(t *testing.T, run v1.Image, label string, labels map[string]string) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(run, appLayers(t)...)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	if cf.Config.Labels == nil {
		cf.Config.Labels = map[string]string{}
	}
	if label != "" {
		cf.Config.Labels[LabelLifecycleMetadata] = label
	}
	for k, v := range labels {
		cf.Config.Labels[k] = v
	}
	cf.Config.Env = append(cf.Config.Env, "CNB_LAYERS_DIR=/layers", "CNB_APP_DIR=/workspace", "CNB_PLATFORM_API=0.12", "CNB_DEPRECATION_MODE=quiet")
	cf.Config.Entrypoint = []string{"/cnb/process/web"}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	return img
}

// lifecycleLabel is the metadata label the lifecycle's exporter writes for an app
// exported onto run, pulled by runRef (repo@digest) and named runName.
func lifecycleLabel(t *testing.T, run v1.Image, runRef, runName string, mirrors ...string) (label, topLayer string) {
	t.Helper()
	md := files.LayersMetadata{
		App:          []files.LayerMetadata{{SHA: "sha256:" + strings.Repeat("a", 64)}},
		Config:       files.LayerMetadata{SHA: "sha256:" + strings.Repeat("c", 64)},
		Launcher:     files.LayerMetadata{SHA: "sha256:" + strings.Repeat("1", 64)},
		ProcessTypes: files.LayerMetadata{SHA: "sha256:" + strings.Repeat("2", 64)},
		RunImage: files.RunImageForRebase{
			TopLayer:          topDiffID(t, run),
			Reference:         runRef,
			RunImageForExport: files.RunImageForExport{Image: runName, Mirrors: mirrors},
		},
	}
	data, err := json.Marshal(md) // as the exporter does
	if err != nil {
		t.Fatal(err)
	}
	return string(data), md.RunImage.TopLayer
}

func topDiffID(t *testing.T, img v1.Image) string {
	t.Helper()
	ids := diffIDs(t, img)
	return ids[len(ids)-1]
}

func diffIDs(t *testing.T, img v1.Image) []string {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, 0, len(cf.RootFS.DiffIDs))
	for _, d := range cf.RootFS.DiffIDs {
		out = append(out, d.String())
	}
	return out
}

// s2iImage lays an image out as source-to-image builds it: FROM builder, the
// app's layers on top, the builder label as given.
func s2iImage(t *testing.T, builder v1.Image, builderLabel string) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(builder, layer(t, tarFile{name: "opt/app-root/src/index.js", body: []byte("module.exports = {}\n")}))
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	if cf.Config.Labels == nil {
		cf.Config.Labels = map[string]string{}
	}
	// The builder's labels stay; s2i adds its own.
	cf.Config.Labels[LabelS2IBuilder] = builderLabel
	cf.Config.Labels["io.openshift.s2i.build.commit.id"] = testRevision
	cf.Config.Labels[LabelMiddlewareVersion] = "v0.22.0"
	cf.Config.Cmd = []string{"/usr/libexec/s2i/run"}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	return img
}

// ---------------------------------------------------------------------------

// TestBaseOf reads bases from configs, without a registry.
func TestBaseOf(t *testing.T) {
	d := func(c string) string { return "sha256:" + strings.Repeat(c, 64) }
	layers := []string{d("1"), d("2"), d("3"), d("4")}
	const runName = "paketobuildpacks/run-jammy-tiny:latest"
	runRef := "index.docker.io/paketobuildpacks/run-jammy-tiny@" + d("e")
	mirror := "gcr.io/paketo-buildpacks/run-jammy-tiny:latest"
	cnb := func(runImage string) string {
		return `{"app":[{"sha":"` + d("a") + `"}],"config":{"sha":"` + d("c") + `"},"launcher":{"sha":"` + d("b") + `"},` +
			`"buildpacks":[{"key":"paketo-buildpacks/go-dist","version":"2.6.1","layers":{"go":{"sha":"` + d("f") + `","build":false,"launch":false,"cache":true}},"store":{"metadata":{}}}],` +
			`"process-types":{"sha":"` + d("0") + `"},"runImage":` + runImage + `}`
	}
	withStack := func(runImage, stack string) string {
		return strings.TrimSuffix(cnb(runImage), "}") + `,"stack":` + stack + `}`
	}
	many := make([]string, 12)
	for k := range many {
		many[k] = fmt.Sprintf("%q", fmt.Sprintf("127.0.0.1:5000/mirror%d/run:latest", k))
	}
	many[1] = `"` + strings.Repeat("m", maxMirror+1) + `"`
	many[2] = `"NOT an image"`
	want8 := []string{}
	for k := 0; len(want8) < maxMirrors; k++ {
		if k != 1 && k != 2 {
			want8 = append(want8, fmt.Sprintf("127.0.0.1:5000/mirror%d/run:latest", k))
		}
	}

	tests := []struct {
		name   string
		labels map[string]string
		diffs  []string
		want   Base
	}{
		{
			name:   "buildpacks, as pack writes it (runImage and stack)",
			labels: map[string]string{LabelLifecycleMetadata: withStack(`{"topLayer":"`+d("2")+`","reference":"`+runRef+`","image":"`+runName+`","mirrors":["`+mirror+`"]}`, `{"runImage":{"image":"`+runName+`","mirrors":["`+mirror+`"]}}`)},
			diffs:  layers,
			want: Base{Kind: BaseRunImage, Image: runName, Mirrors: []string{mirror}, Reference: runRef, TopLayer: d("2"),
				DiffIDs: layers},
		},
		{
			name:   "buildpacks, older: the run image only under stack",
			labels: map[string]string{LabelLifecycleMetadata: withStack(`{"topLayer":"`+d("2")+`","reference":"`+runRef+`"}`, `{"runImage":{"image":"`+runName+`","mirrors":["`+mirror+`"]}}`)},
			diffs:  layers,
			want: Base{Kind: BaseRunImage, Image: runName, Mirrors: []string{mirror}, Reference: runRef, TopLayer: d("2"),
				DiffIDs: layers},
		},
		{
			name:   "buildpacks, runImage wins over stack",
			labels: map[string]string{LabelLifecycleMetadata: withStack(`{"topLayer":"`+d("2")+`","reference":"`+runRef+`","image":"`+runName+`"}`, `{"runImage":{"image":"other/run:old","mirrors":["`+mirror+`"]}}`)},
			diffs:  layers,
			want:   Base{Kind: BaseRunImage, Image: runName, Reference: runRef, TopLayer: d("2"), DiffIDs: layers},
		},
		{
			name:   "buildpacks, only the reference: its repository",
			labels: map[string]string{LabelLifecycleMetadata: cnb(`{"topLayer":"` + d("2") + `","reference":"` + runRef + `"}`)},
			diffs:  layers,
			want: Base{Kind: BaseRunImage, Image: "index.docker.io/paketobuildpacks/run-jammy-tiny", Reference: runRef, TopLayer: d("2"),
				DiffIDs: layers},
		},
		{
			name:   "buildpacks, mirrors bounded",
			labels: map[string]string{LabelLifecycleMetadata: cnb(`{"topLayer":"` + d("2") + `","image":"` + runName + `","mirrors":[` + strings.Join(many, ",") + `]}`)},
			diffs:  layers,
			want:   Base{Kind: BaseRunImage, Image: runName, Mirrors: want8, TopLayer: d("2"), DiffIDs: layers},
		},
		{
			name:   "buildpacks, the label lies: its top layer is not the image's",
			labels: map[string]string{LabelLifecycleMetadata: cnb(`{"topLayer":"` + d("9") + `","reference":"` + runRef + `","image":"` + runName + `"}`)},
			diffs:  layers,
			want: Base{Kind: BaseRunImage, Image: runName, Reference: runRef, TopLayer: d("9"),
				Problem: "label io.buildpacks.lifecycle.metadata names run image top layer " + d("9") + ", which is not a layer of the image"},
		},
		{
			name:   "buildpacks, no top layer",
			labels: map[string]string{LabelLifecycleMetadata: cnb(`{"reference":"` + runRef + `","image":"` + runName + `"}`)},
			diffs:  layers,
			want: Base{Kind: BaseRunImage, Image: runName, Reference: runRef,
				Problem: "label io.buildpacks.lifecycle.metadata names no run image top layer (runImage.topLayer)"},
		},
		{
			name:   "buildpacks, no run image",
			labels: map[string]string{LabelLifecycleMetadata: cnb(`{"topLayer":"` + d("2") + `"}`)},
			diffs:  layers,
			want:   Base{Kind: BaseRunImage, Problem: "label io.buildpacks.lifecycle.metadata names no run image"},
		},
		{
			name:   "buildpacks, a run image that is no reference",
			labels: map[string]string{LabelLifecycleMetadata: cnb(`{"topLayer":"` + d("2") + `","image":"NOT a reference"}`)},
			diffs:  layers,
			want:   Base{Kind: BaseRunImage, Problem: "label io.buildpacks.lifecycle.metadata names a run image that is not an image reference"},
		},
		{
			name:   "buildpacks, not JSON",
			labels: map[string]string{LabelLifecycleMetadata: `{"runImage": {"image": "secret-looking-text"`},
			diffs:  layers,
			want:   Base{Kind: BaseRunImage, Problem: "label io.buildpacks.lifecycle.metadata is not the lifecycle's metadata: malformed JSON at byte offset 44"},
		},
		{
			name:   "buildpacks, JSON of another shape",
			labels: map[string]string{LabelLifecycleMetadata: `{"runImage": "secret-looking-text"}`},
			diffs:  layers,
			want:   Base{Kind: BaseRunImage, Problem: "label io.buildpacks.lifecycle.metadata is not the lifecycle's metadata: unexpected JSON string at byte offset 34"},
		},
		{
			name: "buildpacks, label too long",
			labels: map[string]string{LabelLifecycleMetadata: cnb(`{"topLayer":"`+d("2")+`","image":"`+runName+`"}`) +
				strings.Repeat(" ", maxBaseLabel)},
			diffs: layers,
			want: Base{Kind: BaseRunImage,
				Problem: fmt.Sprintf("label io.buildpacks.lifecycle.metadata is %d bytes long, more than the 65536 the operator reads", len(cnb(`{"topLayer":"`+d("2")+`","image":"`+runName+`"}`))+maxBaseLabel)},
		},
		{
			name:   "buildpacks, too many layers",
			labels: map[string]string{LabelLifecycleMetadata: cnb(`{"topLayer":"` + d("2") + `","image":"` + runName + `"}`)},
			diffs:  append(make([]string, maxDiffIDs), d("2")),
			want: Base{Kind: BaseRunImage, Image: runName, TopLayer: d("2"),
				Problem: "the image has 257 layers, more than the 256 the operator compares"},
		},
		{
			name:   "s2i",
			labels: map[string]string{LabelS2IBuilder: "registry.access.redhat.com/ubi8/nodejs-20-minimal:latest", "io.openshift.s2i.build.commit.id": testRevision},
			diffs:  layers,
			want:   Base{Kind: BaseBuilder, Image: "registry.access.redhat.com/ubi8/nodejs-20-minimal:latest", DiffIDs: layers},
		},
		{
			name:   "s2i, no reference",
			labels: map[string]string{LabelS2IBuilder: "not a reference"},
			diffs:  layers,
			want:   Base{Kind: BaseBuilder, Problem: "label io.openshift.s2i.build.image is not an image reference"},
		},
		{
			name:   "s2i, no layers",
			labels: map[string]string{LabelS2IBuilder: "builder:latest"},
			want:   Base{Kind: BaseBuilder, Image: "builder:latest", Problem: "the image has no layers"},
		},
		{
			name: "both",
			labels: map[string]string{LabelS2IBuilder: "builder:latest",
				LabelLifecycleMetadata: cnb(`{"topLayer":"` + d("2") + `","image":"` + runName + `"}`)},
			diffs: layers,
			want: Base{Kind: BaseRunImage, Image: runName, TopLayer: d("2"),
				Problem: "the image has both labels io.buildpacks.lifecycle.metadata and io.openshift.s2i.build.image: cannot tell whether buildpacks or source-to-image built it"},
		},
		{name: "neither", labels: map[string]string{LabelMiddlewareVersion: "v0.22.0"}, diffs: layers},
		{name: "empty labels", labels: map[string]string{LabelS2IBuilder: " ", LabelLifecycleMetadata: ""}, diffs: layers},
		{name: "no labels", diffs: layers},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cf := &v1.ConfigFile{Config: v1.Config{Labels: tt.labels}}
			for _, s := range tt.diffs {
				h, _ := v1.NewHash(s) // "" for the filler of "too many layers"
				cf.RootFS.DiffIDs = append(cf.RootFS.DiffIDs, h)
			}
			got := baseOf(cf)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if strings.Contains(got.Problem, "secret-looking-text") {
				t.Errorf("the problem quotes the label: %s", got.Problem)
			}
		})
	}
}

// TestBaseOf_LifecycleAgrees: what the lifecycle writes is read back, in the
// current and in the older (stack) shape, whose fields LayersMetadataCompat keeps.
func TestBaseOf_LifecycleAgrees(t *testing.T) {
	top := "sha256:" + strings.Repeat("2", 64)
	ref := "127.0.0.1:5000/run@sha256:" + strings.Repeat("e", 64)
	run := files.RunImageForExport{Image: "127.0.0.1:5000/run:latest", Mirrors: []string{"127.0.0.1:5001/run:latest"}}
	for name, md := range map[string]files.LayersMetadata{
		"runImage": {RunImage: files.RunImageForRebase{TopLayer: top, Reference: ref, RunImageForExport: run}},
		"stack":    {RunImage: files.RunImageForRebase{TopLayer: top, Reference: ref}, Stack: &files.Stack{RunImage: run}},
	} {
		t.Run(name, func(t *testing.T) {
			data, err := json.Marshal(md)
			if err != nil {
				t.Fatal(err)
			}
			h, _ := v1.NewHash(top)
			got := baseOf(&v1.ConfigFile{Config: v1.Config{Labels: map[string]string{LabelLifecycleMetadata: string(data)}},
				RootFS: v1.RootFS{DiffIDs: []v1.Hash{h}}})
			want := Base{Kind: BaseRunImage, Image: run.Image, Mirrors: run.Mirrors, Reference: ref, TopLayer: top, DiffIDs: []string{top}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestBaseMoved(t *testing.T) {
	d := func(c string) string { return "sha256:" + strings.Repeat(c, 64) }
	app := []string{d("1"), d("2"), d("3")}
	run := Base{Kind: BaseRunImage, Image: "run:latest", TopLayer: d("2"), DiffIDs: app}
	builder := Base{Kind: BaseBuilder, Image: "builder:latest", DiffIDs: app}
	tests := []struct {
		name      string
		base      Base
		now       BaseImage
		moved, ok bool
	}{
		{"run image unchanged", run, BaseImage{TopLayer: d("2"), DiffIDs: []string{d("1"), d("2")}}, false, true},
		{"run image moved", run, BaseImage{TopLayer: d("9"), DiffIDs: []string{d("1"), d("9")}}, true, true},
		{"builder unchanged", builder, BaseImage{TopLayer: d("2"), DiffIDs: []string{d("1"), d("2")}}, false, true},
		{"builder moved: another top", builder, BaseImage{TopLayer: d("9"), DiffIDs: []string{d("1"), d("9")}}, true, true},
		{"builder moved: another bottom", builder, BaseImage{TopLayer: d("2"), DiffIDs: []string{d("0"), d("2")}}, true, true},
		{"builder moved: a layer more than the image", builder, BaseImage{TopLayer: d("4"), DiffIDs: []string{d("1"), d("2"), d("3"), d("4")}}, true, true},
		{"no base", Base{}, BaseImage{TopLayer: d("2"), DiffIDs: []string{d("2")}}, false, false},
		{"a problem", Base{Kind: BaseRunImage, Problem: "lies"}, BaseImage{TopLayer: d("2"), DiffIDs: []string{d("2")}}, false, false},
		{"no layers now", run, BaseImage{}, false, false},
		{"an arm64 image, its base read for amd64: nothing told", withPlatform(run, "linux/arm64"),
			BaseImage{TopLayer: d("9"), DiffIDs: []string{d("1"), d("9")}, Platform: "linux/amd64"}, false, false},
		{"an amd64 image, its base read for amd64: moved", withPlatform(run, "linux/amd64"),
			BaseImage{TopLayer: d("9"), DiffIDs: []string{d("1"), d("9")}, Platform: "linux/amd64"}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			moved, ok := tt.base.Moved(tt.now)
			if moved != tt.moved || ok != tt.ok {
				t.Errorf("Moved = %v, %v; want %v, %v", moved, ok, tt.moved, tt.ok)
			}
		})
	}
}

// TestInspectBase: the base is read from the config Inspect reads anyway.
func TestInspectBase(t *testing.T) {
	tr := newTestRegistry(t)
	run := runImage(t, "amd64", "r1")
	runDigest := tr.push(t, "paketo/run:latest", run)
	runName := tr.ref("paketo/run:latest")
	runRef := tr.host + "/paketo/run@" + runDigest.String()
	label, top := lifecycleLabel(t, run, runRef, runName, "127.0.0.1:1/paketo/run:latest")
	other := runImage(t, "amd64", "other")
	lying, otherTop := lifecycleLabel(t, other, runRef, runName)
	mw := map[string]string{LabelMiddlewareVersion: "v0.22.0"}

	builder := image(t, "amd64", map[string]string{"io.openshift.s2i.scripts-url": "image:///usr/libexec/s2i"}, baseLayer(t),
		layer(t, tarFile{name: "usr/libexec/s2i/run", mode: 0o755, body: []byte("#!/bin/sh\n")}))
	tr.push(t, "ubi/nodejs:20", builder)
	s2i := s2iImage(t, builder, tr.ref("ubi/nodejs:20"))

	cnb := cnbImage(t, run, label, mw)
	tests := []struct {
		name string
		img  v1.Image
		want Base
	}{
		{name: "buildpacks", img: cnb,
			want: Base{Kind: BaseRunImage, Image: runName, Mirrors: []string{"127.0.0.1:1/paketo/run:latest"}, Reference: runRef, TopLayer: top,
				DiffIDs: diffIDs(t, cnb)}},
		{name: "s2i", img: s2i,
			want: Base{Kind: BaseBuilder, Image: tr.ref("ubi/nodejs:20"), DiffIDs: diffIDs(t, s2i)}},
		{name: "lying label", img: cnbImage(t, run, lying, mw),
			want: Base{Kind: BaseRunImage, Image: runName, Reference: runRef, TopLayer: otherTop,
				Problem: "label io.buildpacks.lifecycle.metadata names run image top layer " + otherTop + ", which is not a layer of the image"}},
		{name: "unparsable label", img: cnbImage(t, run, "{", mw),
			want: Base{Kind: BaseRunImage, Problem: "label io.buildpacks.lifecycle.metadata is not the lifecycle's metadata: malformed JSON at byte offset 1"}},
		{name: "oversized label", img: cnbImage(t, run, label+strings.Repeat(" ", maxBaseLabel), mw),
			want: Base{Kind: BaseRunImage, Problem: fmt.Sprintf("label io.buildpacks.lifecycle.metadata is %d bytes long, more than the 65536 the operator reads", len(label)+maxBaseLabel)}},
		{name: "neither", img: cnbImage(t, run, "", mw)},
	}
	for k, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tag := fmt.Sprintf("fn/base:v%d", k)
			d := tr.push(t, tag, tt.img)
			got := mustInspect(t, NewInspector(10), tr.ref(tag), nil)
			want := Middleware{Digest: d.String(), Version: "v0.22.0", Source: SourceLabel, Base: tt.want}
			if want.Base.DiffIDs != nil {
				want.Base.Platform = "linux/amd64" // the image's config's, with its layers
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}

	// The base costs no request: the same image without the label is read with the
	// same requests, manifest and config (the puller is warmed first: its /v2/ ping
	// is made once).
	i := NewInspector(10)
	mustInspect(t, i, tr.ref("fn/base:v1"), nil)
	counts := make([]int, 0, 2)
	for _, tag := range []string{"fn/base:v0", "fn/base:v5"} {
		mark := tr.mark()
		mustInspect(t, i, tr.ref(tag), nil)
		reqs := tr.since(mark)
		counts = append(counts, len(reqs))
		t.Logf("%s: %v", tag, reqs)
	}
	if counts[0] != counts[1] || counts[0] > 3 {
		t.Errorf("Inspect made %d requests for the buildpacks image, %d without its label; want the same, at most 3 (HEAD, manifest, config)", counts[0], counts[1])
	}

	// The caller's slices are its own.
	m := mustInspect(t, i, tr.ref("fn/base:v0"), nil)
	m.Base.DiffIDs[0], m.Base.Mirrors[0] = "mutated", "mutated"
	if again := mustInspect(t, i, tr.ref("fn/base:v0"), nil); again.Base.DiffIDs[0] == "mutated" || again.Base.Mirrors[0] == "mutated" {
		t.Errorf("a caller's change reached the cache: %+v", again.Base)
	}
}

func withPlatform(b Base, p string) Base {
	b.Platform = p
	return b
}

package rebase

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/buildpacks/lifecycle/platform"
	"github.com/buildpacks/lifecycle/platform/files"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// TestRebase rebases apps built at several platform APIs, of Docker and OCI
// media types, onto the run image their tag moved to, and checks the result
// layer by layer, label by label.
func TestRebase(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec sceneSpec
	}{
		{name: "platform API 0.14, Docker media types", spec: sceneSpec{app: appSpec{platformAPI: "0.14"}}},
		{name: "platform API 0.12, OCI media types", spec: sceneSpec{app: appSpec{platformAPI: "0.12"}, run: runSpec{oci: true}}},
		{name: "OCI app onto a Docker run image", spec: sceneSpec{run: runSpec{oci: true}, newRun: runSpec{layers: []int64{512, 256}}}},
		{name: "Docker app onto an OCI run image", spec: sceneSpec{newRun: runSpec{layers: []int64{512, 256}, oci: true}}},
		{name: "platform API 0.9 (stack id and mixins checked)", spec: sceneSpec{app: appSpec{platformAPI: "0.9"}}},
		{name: "rebasable label true", spec: sceneSpec{app: appSpec{labels: map[string]string{platform.RebasableLabel: "true"}}}},
		{name: "app and run image without history", spec: sceneSpec{app: appSpec{history: "none"}, run: runSpec{noHistory: true}}},
		{name: "app history longer than its layers", spec: sceneSpec{app: appSpec{history: "long"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newScene(t, tc.spec)
			_, _, tagsBefore := pushed(t, s.reg, "app", nil)

			res, err := rebaser().Rebase(context.Background(), s.request())
			if err != nil {
				t.Fatalf("Rebase: %v", err)
			}
			got := pull(t, res.Image)
			checkRebased(t, s, got)

			if want := s.reg.Host + "/app@" + res.Digest; res.Image != want {
				t.Errorf("Result.Image = %s, want %s", res.Image, want)
			}
			if d, _ := got.img.Digest(); d.String() != res.Digest {
				t.Errorf("Result.Digest = %s, the image pulled is %s", res.Digest, d)
			}
			if want := s.newRun.diffIDs[len(s.newRun.diffIDs)-1].String(); res.TopLayer != want {
				t.Errorf("Result.TopLayer = %s, want %s", res.TopLayer, want)
			}
			if res.Reference != s.newRun.ref {
				t.Errorf("Result.Reference = %s, want %s", res.Reference, s.newRun.ref)
			}
			// By digest only: no tag written or moved.
			if _, _, tags := pushed(t, s.reg, "app", nil); !cmp.Equal(tags, tagsBefore) {
				t.Errorf("tags of app: %s", cmp.Diff(tagsBefore, tags))
			}
			if _, err := remote.Head(mustDigest(t, res.Image)); err != nil {
				t.Errorf("the rebased image is not served by digest: %v", err)
			}
		})
	}
}

// checkRebased checks that got is s.app rebased onto s.newRun, as lifecycle does.
func checkRebased(t *testing.T, s *scene, got image) {
	t.Helper()
	appOwn := len(s.oldRun.diffIDs)
	wantDiffIDs := append(slices.Clone(s.newRun.diffIDs), s.app.diffIDs[appOwn:]...)
	if diff := cmp.Diff(wantDiffIDs, got.diffIDs); diff != "" {
		t.Errorf("diff IDs (-want +got):\n%s", diff)
	}
	wantDigests := append(slices.Clone(s.newRun.digests), s.app.digests[appOwn:]...)
	if diff := cmp.Diff(wantDigests, got.digests); diff != "" {
		t.Errorf("layer digests (-want +got):\n%s", diff)
	}

	appCfg, _ := s.app.img.ConfigFile()
	runCfg, _ := s.newRun.img.ConfigFile()
	gotCfg, err := got.img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	// Labels: the app's, but lifecycle's metadata and the run image's stack and
	// base labels.
	wantLabels := map[string]string{}
	for k, v := range appCfg.Config.Labels {
		if !strings.HasPrefix(k, "io.buildpacks.stack.") && !strings.HasPrefix(k, "io.buildpacks.base.") && k != platform.LifecycleMetadataLabel {
			wantLabels[k] = v
		}
	}
	for k, v := range runCfg.Config.Labels {
		if strings.HasPrefix(k, "io.buildpacks.stack.") || strings.HasPrefix(k, "io.buildpacks.base.") {
			wantLabels[k] = v
		}
	}
	gotLabels := maps(gotCfg.Config.Labels)
	delete(gotLabels, platform.LifecycleMetadataLabel)
	if diff := cmp.Diff(wantLabels, gotLabels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	for _, k := range []string{middlewareLabel, revisionLabel, platform.BuildMetadataLabel} {
		if gotCfg.Config.Labels[k] == "" || gotCfg.Config.Labels[k] != appCfg.Config.Labels[k] {
			t.Errorf("label %s = %q, want the app's %q", k, gotCfg.Config.Labels[k], appCfg.Config.Labels[k])
		}
	}

	// The metadata: the new top layer and reference, the rest as it was.
	want := metadata(t, s.app.img)
	want.RunImage.TopLayer = s.newRun.diffIDs[len(s.newRun.diffIDs)-1].String()
	want.RunImage.Reference = s.newRun.ref
	if diff := cmp.Diff(want, metadata(t, got.img)); diff != "" {
		t.Errorf("metadata (-want +got):\n%s", diff)
	}

	// The rest of the config is the app's; os and architecture the run image's.
	if diff := cmp.Diff(appCfg.Config.Env, gotCfg.Config.Env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(appCfg.Config.Entrypoint, gotCfg.Config.Entrypoint); diff != "" {
		t.Errorf("entrypoint (-want +got):\n%s", diff)
	}
	if gotCfg.Config.User != appCfg.Config.User || gotCfg.Config.WorkingDir != appCfg.Config.WorkingDir {
		t.Errorf("user %q, working dir %q; want %q, %q", gotCfg.Config.User, gotCfg.Config.WorkingDir, appCfg.Config.User, appCfg.Config.WorkingDir)
	}
	if gotCfg.OS != runCfg.OS || gotCfg.Architecture != runCfg.Architecture {
		t.Errorf("platform %s/%s, want %s/%s", gotCfg.OS, gotCfg.Architecture, runCfg.OS, runCfg.Architecture)
	}
	if !gotCfg.Created.Equal(appCfg.Created.Time) {
		t.Errorf("created %s, want the app's %s", gotCfg.Created, appCfg.Created)
	}
	if len(gotCfg.History) != len(got.diffIDs) {
		t.Errorf("%d history entries for %d layers", len(gotCfg.History), len(got.diffIDs))
	}

	// Media types: the app's family throughout.
	appManifest, _ := s.app.img.Manifest()
	m, err := got.img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	wantLayer, wantConfig := types.DockerLayer, types.DockerConfigJSON
	if appManifest.MediaType == types.OCIManifestSchema1 {
		wantLayer, wantConfig = types.OCILayer, types.OCIConfigJSON
	}
	if m.MediaType != appManifest.MediaType || m.Config.MediaType != wantConfig {
		t.Errorf("manifest %s with config %s, want %s with %s", m.MediaType, m.Config.MediaType, appManifest.MediaType, wantConfig)
	}
	for i, l := range m.Layers {
		if l.MediaType != wantLayer {
			t.Errorf("layer %d is %s, want %s", i, l.MediaType, wantLayer)
		}
	}
}

func maps(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func mustDigest(t *testing.T, ref string) name.Digest {
	t.Helper()
	d, err := name.NewDigest(ref)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestRebaseToAnotherRepository pushes the rebased image to a repository that
// holds none of its layers: every layer is mounted from the run image's or the
// app's repository, only the config is uploaded, and no tag is written there.
func TestRebaseToAnotherRepository(t *testing.T) {
	s := newScene(t, sceneSpec{})
	req := s.request()
	req.Target = s.reg.Host + "/team/rebased"
	start := len(s.reg.Log())

	res, err := rebaser().Rebase(context.Background(), req)
	if err != nil {
		t.Fatalf("Rebase: %v", err)
	}
	if !strings.HasPrefix(res.Image, req.Target+"@sha256:") {
		t.Errorf("Result.Image = %s, want it in %s", res.Image, req.Target)
	}
	got := pull(t, res.Image)
	checkRebased(t, s, got)

	layers := len(got.diffIDs)
	if res.Mounted != layers || res.Uploaded != 1 {
		t.Errorf("Result: %d blobs mounted, %d uploaded; want %d (the layers) and 1 (the config)", res.Mounted, res.Uploaded, layers)
	}
	// The registry's side of it.
	mounts, uploads := 0, 0
	for _, l := range s.reg.Log()[start:] {
		if !strings.HasPrefix(l.Path, "/v2/team/rebased/blobs/uploads/") || l.Status != 201 {
			continue
		}
		if l.Query.Get("mount") != "" {
			mounts++
		} else {
			uploads++
		}
	}
	if mounts != layers || uploads != 1 {
		t.Errorf("the registry mounted %d blobs and took %d uploads; want %d and 1", mounts, uploads, layers)
	}
	if _, _, tags := pushed(t, s.reg, "team/rebased", nil); len(tags) != 0 {
		t.Errorf("tags written to the target: %q", tags)
	}

	// Positive control of the counts: the same rebase again pushes nothing new,
	// and gives the same digest (the rebase is deterministic).
	again, err := rebaser().Rebase(context.Background(), req)
	if err != nil {
		t.Fatalf("Rebase again: %v", err)
	}
	if again.Digest != res.Digest || again.Mounted != 0 || again.Uploaded != 0 || again.UploadedBytes != 0 {
		t.Errorf("again: digest %s (first %s), %d mounted, %d uploaded (%d bytes); want the same digest and nothing pushed",
			again.Digest, res.Digest, again.Mounted, again.Uploaded, again.UploadedBytes)
	}
}

// TestRebaseInAppRepository mounts the new run image's layers into the app's
// repository, which holds the app's layers already.
func TestRebaseInAppRepository(t *testing.T) {
	s := newScene(t, sceneSpec{})
	res, err := rebaser().Rebase(context.Background(), s.request())
	if err != nil {
		t.Fatalf("Rebase: %v", err)
	}
	// The new run image shares its first layer with the old one, in the app already.
	if want := len(s.newRun.diffIDs) - 1; res.Mounted != want || res.Uploaded != 1 {
		t.Errorf("%d blobs mounted, %d uploaded; want %d (the new run image layers) and 1 (the config)", res.Mounted, res.Uploaded, want)
	}
}

// TestRebaseRunImageNames: lifecycle checks the run image's name against the
// metadata (runImage.image and mirrors, tags compared, digests ignored) and
// writes the reference the run image was read from, a mirror's included.
func TestRebaseRunImageNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		// runName is the metadata's runImage.image, mirrors its mirrors ("HOST" is
		// the registry); runRepo where the new run image is read from.
		runName, runRepo string
		mirrors          []string
		reqName          string // Request.RunImageName
		wantErr          Reason
	}{
		{name: "image without tag, name defaulted", runName: "HOST/run"},
		{name: "image with latest, name defaulted", runName: "HOST/run:latest"},
		{name: "image with another tag, name given", runName: "HOST/run:jammy", reqName: "HOST/run:jammy"},
		{name: "image with another tag, name defaulted (latest)", runName: "HOST/run:jammy", wantErr: NotRebasable},
		{name: "image by digest in the metadata, name defaulted", runName: "HOST/run@sha256:" + strings.Repeat("a", 64)},
		{name: "read from a mirror named in the metadata", runName: "HOST/run", mirrors: []string{"HOST/mirror/run"}, runRepo: "mirror/run"},
		{name: "read from a mirror, mirror's name given", runName: "HOST/run", mirrors: []string{"HOST/mirror/run:jammy"}, runRepo: "mirror/run", reqName: "HOST/mirror/run:jammy"},
		{name: "read from a repository the metadata does not name", runName: "HOST/run", runRepo: "other/run", wantErr: NotRebasable},
		{name: "another repository, the metadata's name given", runName: "HOST/run", runRepo: "other/run", reqName: "HOST/run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := newSceneRegistry(t)
			host := func(s string) string { return strings.ReplaceAll(s, "HOST", reg.Host) }
			var mirrors []string //nolint:prealloc // nil when none, as the metadata decodes it
			for _, m := range tc.mirrors {
				mirrors = append(mirrors, host(m))
			}
			runRepo := tc.runRepo
			if runRepo == "" {
				runRepo = "run"
			}
			s := newSceneIn(t, reg, sceneSpec{runRepo: runRepo, app: appSpec{runName: host(tc.runName), mirrors: mirrors}}, nil)
			req := s.request()
			req.RunImageName = host(tc.reqName)

			res, err := rebaser().Rebase(context.Background(), req)
			if tc.wantErr != "" {
				_ = checkError(t, err, tc.wantErr)
				return
			}
			if err != nil {
				t.Fatalf("Rebase: %v", err)
			}
			md := metadata(t, pull(t, res.Image).img)
			if md.RunImage.Reference != s.newRun.ref {
				t.Errorf("runImage.reference = %s, want %s", md.RunImage.Reference, s.newRun.ref)
			}
			want := files.RunImageForExport{Image: host(tc.runName), Mirrors: mirrors}
			if diff := cmp.Diff(want, md.RunImage.RunImageForExport); diff != "" {
				t.Errorf("runImage image and mirrors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRebaseIndexes takes the platform's image of an app index, and the app's
// platform's image of a run image index.
func TestRebaseIndexes(t *testing.T) {
	s := newScene(t, sceneSpec{})
	// An index of the app (amd64) and another image (arm64), and likewise of the
	// new run image.
	appIdx := pushIndex(t, s.reg.Host+"/app:index", s.app.img, buildRun(t, runSpec{layers: []int64{64}, arch: "arm64"}))
	runIdx := pushIndex(t, s.reg.Host+"/run:index", buildRun(t, runSpec{layers: []int64{64}, arch: "arm64"}), s.newRun.img)

	res, err := rebaser().Rebase(context.Background(), Request{App: appIdx, RunImage: runIdx})
	if err != nil {
		t.Fatalf("Rebase: %v", err)
	}
	checkRebased(t, s, pull(t, res.Image))
	if res.Reference != s.newRun.ref {
		t.Errorf("Result.Reference = %s, want the run image of the index, %s", res.Reference, s.newRun.ref)
	}

	_, err = rebaser().Rebase(context.Background(), Request{App: appIdx, RunImage: runIdx, Platform: &v1.Platform{OS: "linux", Architecture: "s390x"}})
	_ = checkError(t, err, AppImageNotFound)
}

// TestRebaseMetadataAsLifecycleWritesIt: the metadata label is what lifecycle
// encodes: its own struct, runImage.topLayer and reference replaced. A key it does
// not know is dropped (pack's rebase does the same).
func TestRebaseMetadataAsLifecycleWritesIt(t *testing.T) {
	s := newScene(t, sceneSpec{app: appSpec{metadata: func(md *files.LayersMetadataCompat) {
		md.App = map[string]any{"sha": "sha256:" + strings.Repeat("a", 64)} // App is kept whatever its shape
	}}})
	// The same label with a key of a future lifecycle.
	cf, _ := s.app.img.ConfigFile()
	label := cf.Config.Labels[platform.LifecycleMetadataLabel]
	future := strings.Replace(label, `{"app":`, `{"future":{"x":1},"app":`, 1)
	if future == label {
		t.Fatalf("the label does not start as expected: %s", label)
	}
	cf = cf.DeepCopy()
	cf.Config.Labels[platform.LifecycleMetadataLabel] = future
	img, err := mutate.ConfigFile(s.app.img, cf)
	if err != nil {
		t.Fatal(err)
	}
	s.app = push(t, s.reg.Host+"/app:future", img)

	res, err := rebaser().Rebase(context.Background(), s.request())
	if err != nil {
		t.Fatalf("Rebase: %v", err)
	}
	got := pull(t, res.Image)
	gotCfg, _ := got.img.ConfigFile()
	md := metadata(t, s.app.img)
	md.RunImage.TopLayer, md.RunImage.Reference = res.TopLayer, res.Reference
	want, err := json.Marshal(md)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), gotCfg.Config.Labels[platform.LifecycleMetadataLabel]); diff != "" {
		t.Errorf("metadata label (-want +got):\n%s", diff)
	}
	if strings.Contains(gotCfg.Config.Labels[platform.LifecycleMetadataLabel], "future") {
		t.Errorf("lifecycle kept a key it does not know")
	}
}

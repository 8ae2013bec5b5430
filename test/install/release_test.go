package install

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ktypes "k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/test/envtest"
	"github.com/fnops/func-operator/test/registrytest"
)

// The release files `make release` writes (hack/release.sh).
const (
	releaseCRDs           = "func-operator-crds.yaml"
	releaseOperator       = "func-operator.yaml"
	releaseOnboarding     = "func-operator-onboarding.yaml"
	releaseOnboardingKEDA = "func-operator-onboarding-keda.yaml"
)

// releasePlatforms are the platforms a release ships (ko.yaml's defaultPlatforms).
var releasePlatforms = []string{"linux/amd64", "linux/arm64"}

// TestRelease runs `make release` as a maintainer would, against an in-process
// registry and a multi-platform base image index made here, and checks what a
// platform team installs: every image pinned by digest to an index of exactly
// linux/amd64 and linux/arm64 whose binary reports the version; the CRDs in a file of
// their own, so that deleting the operator's file leaves the Functions; the files
// applied in order to a real control plane; a bad VERSION refused with nothing written.
func TestRelease(t *testing.T) {
	env := envtest.StartT(t) // first: under -short it skips the test, before the build
	reg := registrytest.Start(t)
	base := pushBaseIndex(t, reg.Host+"/distroless/static:nonroot")
	root := envtest.RepoRoot()
	const version = "v1.2.3-rc.1"
	makeRelease := func(ctx context.Context, version, dir string) (string, error) {
		cmd := exec.CommandContext(ctx, "make", "--no-print-directory", "release")
		cmd.Dir = root
		cmd.Env = append(os.Environ(),
			"VERSION="+version,
			"RELEASE_DIR="+dir,
			"KO="+koBinary(t),
			"KO_DOCKER_REPO="+reg.Host,
			"KO_DEFAULTBASEIMAGE="+base,
			"DOCKER_CONFIG="+t.TempDir(),
			// A developer's uncommitted change must not fail this test: the refusal of a
			// dirty work tree is TestReleaseScript_Refuses'.
			"RELEASE_ALLOW_DIRTY=1",
		)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()

	t.Run("bad version", func(t *testing.T) {
		for _, v := range []string{"", "1.2.3", "v1.2", "v1.2.3+build", "latest"} {
			dir := filepath.Join(t.TempDir(), "release")
			out, err := makeRelease(ctx, v, dir)
			if err == nil || !strings.Contains(out, "is not a release version") {
				t.Errorf("make release VERSION=%q: %v, want refused with a message:\n%s", v, err, out)
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("make release VERSION=%q wrote %s (%v)", v, dir, err)
			}
		}
	})

	t.Run("release dir not empty", func(t *testing.T) {
		dir := t.TempDir()
		old := filepath.Join(dir, "func-operator-v0.0.1.yaml")
		if err := os.WriteFile(old, []byte("kind: ConfigMap\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := makeRelease(ctx, version, dir)
		if err == nil || !strings.Contains(out, "is not empty") {
			t.Errorf("make release into a folder holding a file: %v, want refused with a message:\n%s", err, out)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			t.Errorf("make release changed the folder: %v", entries)
		}
	})

	dir := t.TempDir()
	start := time.Now()
	out, err := makeRelease(ctx, version, dir)
	if err != nil {
		t.Fatalf("make release VERSION=%s: %v\n%s", version, err, out)
	}
	t.Logf("make release took %s", time.Since(start).Round(time.Second))

	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(entries))
	files := map[string][]*unstructured.Unstructured{}
	for _, e := range entries {
		names = append(names, e.Name())
		content, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(content), "# func-operator "+version+": ") {
			t.Errorf("%s does not start with a header naming %s:\n%.300s", e.Name(), version, content)
		}
		if files[e.Name()], err = envtest.Decode(content); err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
	}
	// os.ReadDir's order: by name.
	if diff := cmp.Diff([]string{releaseCRDs, releaseOnboardingKEDA, releaseOnboarding, releaseOperator}, names); diff != "" {
		t.Fatalf("release files (-want +got):\n%s", diff)
	}

	// The CRDs alone in theirs, none in the operator's.
	for _, o := range files[releaseCRDs] {
		if o.GetKind() != "CustomResourceDefinition" {
			t.Errorf("%s holds %s %s", releaseCRDs, o.GetKind(), o.GetName())
		}
	}
	if len(files[releaseCRDs]) == 0 {
		t.Errorf("%s holds nothing", releaseCRDs)
	}
	kinds := map[string]int{}
	for _, o := range files[releaseOperator] {
		kinds[o.GetKind()]++
	}
	if kinds["CustomResourceDefinition"] != 0 || kinds["Deployment"] != 1 || kinds["Namespace"] != 1 {
		t.Errorf("%s holds %v: want no CRD, the Deployment and the Namespace", releaseOperator, kinds)
	}
	for _, f := range []string{releaseOnboarding, releaseOnboardingKEDA} {
		for _, o := range files[f] {
			if o.GetNamespace() != "" {
				t.Errorf("%s: %s %s names namespace %s; it is applied with -n", f, o.GetKind(), o.GetName(), o.GetNamespace())
			}
		}
	}

	// Every image: by digest, an index of exactly the release's platforms, tagged with the
	// version, whose binary reports it.
	var images []string
	for _, objs := range files {
		for _, o := range objs {
			images = append(images, imagesOf(o.Object)...)
		}
	}
	if len(images) == 0 {
		t.Fatal("the release runs no image")
	}
	for _, img := range images {
		checkReleaseImage(t, img, version, reg.Host)
	}

	// Applied in the documented order: CRDs, operator, onboarding (-n).
	crdObjs, opObjs := files[releaseCRDs], files[releaseOperator]
	checkInstall(ctx, t, env, append(slices.Clone(crdObjs), opObjs...), reg)
	c, err := client.New(env.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName("team-r")
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	onboarding := make([]*unstructured.Unstructured, 0, len(files[releaseOnboarding]))
	for _, o := range files[releaseOnboarding] {
		o = o.DeepCopy()
		o.SetNamespace("team-r")
		onboarding = append(onboarding, o)
	}
	if err := envtest.ApplyObjects(ctx, env.Config, onboarding...); err != nil {
		t.Fatalf("applying %s -n team-r: %v", releaseOnboarding, err)
	}
	var rbs rbacv1.RoleBindingList
	if err := c.List(ctx, &rbs, client.InNamespace("team-r")); err != nil {
		t.Fatal(err)
	}
	if len(rbs.Items) != 2 {
		t.Errorf("%s made %d RoleBindings in team-r, want 2", releaseOnboarding, len(rbs.Items))
	}

	// A Function, then the operator's file deleted: the Function and its CRD stay.
	fn := &unstructured.Unstructured{}
	fn.SetGroupVersionKind(schema.GroupVersionKind{Group: "functions.dev", Version: "v1alpha1", Kind: "Function"})
	fn.SetNamespace("team-r")
	fn.SetName("hello")
	fn.Object["spec"] = map[string]any{"repository": map[string]any{"url": "https://example.com/functions.git", "branch": "main"}}
	if err := c.Create(ctx, fn); err != nil {
		t.Fatalf("creating a Function: %v", err)
	}
	for _, o := range slices.Backward(opObjs) {
		if err := c.Delete(ctx, o.DeepCopy()); err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("deleting %s %s/%s of %s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), releaseOperator, err)
		}
	}
	for _, o := range opObjs {
		if o.GetKind() == "Namespace" {
			continue // no namespace controller here: it stays Terminating
		}
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(o.GroupVersionKind())
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), got); !apierrors.IsNotFound(err) && got.GetDeletionTimestamp() == nil {
			t.Errorf("%s %s/%s of %s is still there after its deletion (%v)", o.GetKind(), o.GetNamespace(), o.GetName(), releaseOperator, err)
		}
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	crdKey := ktypes.NamespacedName{Name: "functions.functions.dev"}
	if err := c.Get(ctx, crdKey, crd); err != nil || crd.DeletionTimestamp != nil {
		t.Fatalf("the Function CRD after deleting %s: %v (deletion %v), want it kept", releaseOperator, err, crd.DeletionTimestamp)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(fn), fn.DeepCopy()); err != nil {
		t.Fatalf("the Function after deleting %s: %v, want it kept", releaseOperator, err)
	}

	// The control: deleting the CRD file deletes the CRD, and the Functions with it.
	for _, o := range crdObjs {
		if err := c.Delete(ctx, o.DeepCopy()); err != nil {
			t.Fatalf("deleting %s: %v", releaseCRDs, err)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for {
		err := c.Get(ctx, crdKey, crd)
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Function CRD is still there a minute after deleting %s: %v %+v", releaseCRDs, err, crd.Status.Conditions)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// pushBaseIndex pushes to ref an image index of an empty image for each of
// releasePlatforms, as distroless publishes its base, and returns it by digest.
func pushBaseIndex(t *testing.T, ref string) string {
	t.Helper()
	parsed, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range releasePlatforms {
		plat, err := v1.ParsePlatform(p)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := empty.Image.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		cfg = cfg.DeepCopy()
		cfg.OS, cfg.Architecture = plat.OS, plat.Architecture
		img, err := mutate.ConfigFile(mutate.MediaType(mutate.ConfigMediaType(empty.Image, types.OCIConfigJSON), types.OCIManifestSchema1), cfg)
		if err != nil {
			t.Fatal(err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: plat}})
	}
	if err := remote.WriteIndex(parsed, idx); err != nil {
		t.Fatalf("pushing the base index: %v", err)
	}
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return parsed.Context().Name() + "@" + d.String()
}

// imagesOf returns the value of every `image` field of obj, at any depth.
func imagesOf(obj any) []string {
	var images []string
	switch v := obj.(type) {
	case map[string]any:
		for k, e := range v {
			if s, ok := e.(string); ok && k == "image" {
				images = append(images, s)
			} else {
				images = append(images, imagesOf(e)...)
			}
		}
	case []any:
		for _, e := range v {
			images = append(images, imagesOf(e)...)
		}
	}
	return images
}

// checkReleaseImage checks an image of the release: pinned by digest to an index in
// the registry at host of exactly releasePlatforms, tagged version, and the binary of
// the host's architecture (when it is one of them) prints version for --version.
func checkReleaseImage(t *testing.T, image, version, host string) {
	t.Helper()
	ref, err := name.ParseReference(image)
	if err != nil {
		t.Fatal(err)
	}
	digest, ok := ref.(name.Digest)
	if !ok || !strings.HasPrefix(image, host+"/func-operator") {
		t.Fatalf("image %q: want %s/func-operator pinned by digest", image, host)
	}
	idx, err := remote.Index(digest)
	if err != nil {
		t.Fatalf("image %s: %v", image, err)
	}
	if mt, err := idx.MediaType(); err != nil || !mt.IsIndex() {
		t.Fatalf("image %s is a %s (%v), want an image index", image, mt, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	images := map[string]v1.Hash{}
	for _, m := range im.Manifests {
		if m.Platform == nil {
			t.Errorf("image %s: manifest %s names no platform", image, m.Digest)
			continue
		}
		platforms = append(platforms, m.Platform.String())
		images[m.Platform.String()] = m.Digest
	}
	slices.Sort(platforms)
	if diff := cmp.Diff(releasePlatforms, platforms); diff != "" {
		t.Errorf("image %s: platforms (-want +got):\n%s", image, diff)
	}
	tagged, err := remote.Head(digest.Context().Tag(version))
	if err != nil || tagged.Digest.String() != digest.DigestStr() {
		t.Errorf("%s:%s = %v (%v), want the release's %s", digest.Context(), version, tagged, err, digest.DigestStr())
	}

	platform := "linux/" + runtime.GOARCH
	h, ok := images[platform]
	if !ok {
		t.Logf("no image for this machine's %s: --version not run", platform)
		return
	}
	img, err := idx.Image(h)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Config.Entrypoint) == 0 {
		t.Fatalf("image %s for %s has no entrypoint", image, platform)
	}
	bin := extract(t, img, cfg.Config.Entrypoint[0])
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v\n%s", cfg.Config.Entrypoint[0], err, out)
	}
	lines := strings.Split(string(out), "\n")
	if lines[0] != "func-operator "+version {
		t.Errorf("%s --version printed %q, want first the line %q", cfg.Config.Entrypoint[0], out, "func-operator "+version)
	}
	head, err := exec.Command("git", "-C", envtest.RepoRoot(), "rev-parse", "HEAD").Output()
	if err == nil && (len(lines) < 2 || !strings.HasPrefix(lines[1], "revision: "+strings.TrimSpace(string(head)))) {
		t.Errorf("%s --version printed %q, want the revision %s", cfg.Config.Entrypoint[0], out, head)
	}
	t.Logf("%s (%s) --version:\n%s", image, platform, out)
}

// extract writes the file at file (an absolute path) of img's filesystem to a
// temporary file, executable, and returns its path.
func extract(t *testing.T, img v1.Image, file string) string {
	t.Helper()
	rc := mutate.Extract(img)
	defer func() { _ = rc.Close() }()
	tr := tar.NewReader(rc)
	want := strings.TrimPrefix(path.Clean(file), "/")
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			t.Fatalf("the image holds no %s", file)
		}
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimPrefix(path.Clean(hdr.Name), "/") != want || hdr.Typeflag != tar.TypeReg {
			continue
		}
		bin := filepath.Join(t.TempDir(), path.Base(file))
		f, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(f, tr); err != nil { //nolint:gosec // a test's own image, not an archive from outside
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		return bin
	}
}

// TestReleaseScript_Refuses: hack/release.sh refuses a work tree with changes before
// it builds or pushes anything, unless RELEASE_ALLOW_DIRTY=1 (the positive control:
// then it goes on to ko, here a stand-in that records its call and fails). The script
// runs from a copy in a git repository of its own, so the test needs no change to
// this one.
func TestReleaseScript_Refuses(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	repo := t.TempDir()
	script, err := os.ReadFile(filepath.Join(envtest.RepoRoot(), "hack", "release.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(repo, "hack"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "hack", "release.sh"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	called := filepath.Join(t.TempDir(), "ko-called")
	ko := filepath.Join(t.TempDir(), "ko")
	if err := os.WriteFile(ko, []byte("#!/bin/sh\ntouch "+called+"\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@127.0.0.1", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@127.0.0.1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	git("add", ".")
	git("commit", "-q", "-m", "release script")
	if err := os.WriteFile(filepath.Join(repo, "changed.go"), []byte("package x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	release := func(allowDirty string) (string, error) {
		cmd := exec.Command("bash", filepath.Join(repo, "hack", "release.sh"))
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "VERSION=v1.0.0", "KO_DOCKER_REPO=127.0.0.1:1/none", "KO="+ko,
			"RELEASE_DIR="+filepath.Join(t.TempDir(), "release"), "RELEASE_ALLOW_DIRTY="+allowDirty)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	out, err := release("")
	if err == nil || !strings.Contains(out, "the work tree has changes") {
		t.Errorf("a dirty work tree: %v, want refused with a message:\n%s", err, out)
	}
	if _, err := os.Stat(called); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ko ran for a dirty work tree")
	}

	out, err = release("1")
	if err == nil {
		t.Fatalf("the stand-in ko fails, yet the release passed:\n%s", out)
	}
	if _, err := os.Stat(called); err != nil {
		t.Errorf("with RELEASE_ALLOW_DIRTY=1 the script did not reach ko (%v):\n%s", err, out)
	}
}

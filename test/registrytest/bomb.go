package registrytest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

const (
	// BombPath is the one file in PushZipBomb's layer.
	BombPath = "bomb"
	// ELFPath is the one file in the padded ELF images' layer.
	ELFPath = "workspace/bin/function"

	// titleLabel names the repository in the images' config, as Push does.
	titleLabel = "org.opencontainers.image.title"
	// imageOS and imageArch are the images' platform.
	imageOS, imageArch = "linux", "amd64"
)

// layerCache caches synthetic layers by what they hold: hashing GiBs takes seconds.
var layerCache sync.Map // string -> *syntheticLayer

// PushZipBomb pushes to repo:latest a linux/amd64 image whose one layer is a
// gzip stream of about 1 MiB per GiB that expands to a tar stream holding one
// regular file, BombPath, of uncompressedGiB GiB of zeros (its header declares
// the full size). It returns the image's reference by digest, like Push.
// Building the layer hashes its expansion for the diffID, about 0.7 s per GiB;
// the layer is cached, so pushing the same size again takes milliseconds.
func (r *Registry) PushZipBomb(t testing.TB, repo string, uncompressedGiB int) string {
	t.Helper()
	if uncompressedGiB < 1 {
		t.Fatalf("registrytest: zip bomb of %d GiB: want at least 1", uncompressedGiB)
	}
	size := int64(uncompressedGiB) << 30
	return r.pushFile(t, repo, fmt.Sprintf("bomb/%d", size), BombPath, 0o644, size, nil)
}

// PushPaddedELF pushes to repo:latest a linux/amd64 image whose one layer holds
// one executable, ELFPath: a real (stripped) Go linux/amd64 executable without
// dependencies (about 1.5 MiB), followed by padMiB MiB of zeros, so its tar
// header declares the executable's size plus padMiB MiB while the layer
// compresses to about 0.7 MiB plus 1 KiB per MiB of padding. Its build info
// still reads (debug/buildinfo). It returns the reference by digest, like Push.
// The executable is built with `go build` once per test binary.
func (r *Registry) PushPaddedELF(t testing.TB, repo string, padMiB int) string {
	t.Helper()
	return r.pushPaddedELF(t, repo, "hello", helloELF, padMiB)
}

// PushPaddedFuncGoELF is PushPaddedELF with a Go function executable (about 6
// MiB, 2.5 MiB compressed) whose build info requires knative.dev/func-go
// FuncGoVersion, as a function built by func records it.
func (r *Registry) PushPaddedFuncGoELF(t testing.TB, repo string, padMiB int) string {
	t.Helper()
	return r.pushPaddedELF(t, repo, "func-go", funcGoELF, padMiB)
}

// PushFuncGoELF pushes an image holding a Go function executable whose build info
// requires knative.dev/func-go version, with no labels: a function as func built it
// before func wrote the middleware-version label (v0.44.0 built func-go v0.21.3).
// The version must be in the module cache or reachable through GOPROXY.
func (r *Registry) PushFuncGoELF(t testing.TB, repo, version string) string {
	t.Helper()
	return r.pushPaddedELF(t, repo, "func-go-"+version, func() ([]byte, error) { return funcGoELFOf(version) }, 0)
}

// pushPaddedELF pushes the executable build returns (kind names it), padded with padMiB MiB.
func (r *Registry) pushPaddedELF(t testing.TB, repo, kind string, build func() ([]byte, error), padMiB int) string {
	t.Helper()
	if padMiB < 0 {
		t.Fatalf("registrytest: padding of %d MiB", padMiB)
	}
	elf, err := build()
	if err != nil {
		t.Fatalf("registrytest: building the %s executable: %v", kind, err)
	}
	size := int64(len(elf)) + int64(padMiB)<<20
	return r.pushFile(t, repo, fmt.Sprintf("elf/%s/%d", kind, size), ELFPath, 0o755, size, elf)
}

// pushFile pushes an image whose one layer holds the file path of size bytes:
// head, then zeros. key names the layer in the cache.
func (r *Registry) pushFile(t testing.TB, repo, key, path string, mode, size int64, head []byte) string {
	t.Helper()
	l, ok := layerCache.Load(key)
	if !ok {
		segs, err := tarFile(path, mode, size, head)
		if err != nil {
			t.Fatalf("registrytest: %v", err)
		}
		if l, err = newSyntheticLayer(segs...); err != nil {
			t.Fatalf("registrytest: building layer %s: %v", key, err)
		}
		l, _ = layerCache.LoadOrStore(key, l)
	}
	ref, err := r.pushLayers(repo, l.(v1.Layer))
	if err != nil {
		t.Fatalf("registrytest: %v", err)
	}
	return ref
}

// pushLayers pushes a linux/amd64 image of layers to repo:latest and returns its
// reference by digest.
func (r *Registry) pushLayers(repo string, layers ...v1.Layer) (string, error) {
	cfg, err := empty.Image.ConfigFile()
	if err != nil {
		return "", err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = imageOS, imageArch
	cfg.Config.Labels = map[string]string{titleLabel: repo}
	img, err := mutate.ConfigFile(empty.Image, cfg)
	if err == nil {
		img, err = mutate.AppendLayers(img, layers...)
	}
	if err != nil {
		return "", fmt.Errorf("building the image for %s: %w", repo, err)
	}
	ref, err := name.ParseReference(r.Host + "/" + repo + ":latest")
	if err != nil {
		return "", err
	}
	auth := authn.Anonymous
	if r.user != "" {
		auth = &authn.Basic{Username: r.user, Password: r.password}
	}
	if err := remote.Write(ref, img, remote.WithAuth(auth)); err != nil {
		return "", fmt.Errorf("pushing %s: %w", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		return "", err
	}
	return r.Host + "/" + repo + "@" + d.String(), nil
}

package rebase

import (
	"errors"
	"fmt"

	"github.com/buildpacks/imgutil"
	imgremote "github.com/buildpacks/imgutil/remote"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// cnbImage is the imgutil.Image lifecycle's Rebaser works on: a
// *imgutil.CNBImageCore over an image go-containerregistry read with this
// package's options (no request is made through it but by Save), written by
// digest only. See the package doc for why not imgutil's remote.Image.
type cnbImage struct {
	*imgutil.CNBImageCore
	// name is what lifecycle knows the image by (Name): for the run image, the
	// name its metadata check (containsName) compares.
	name string
	// read is the image as read, by digest in the repository it was read from:
	// Identifier, before a Save. (The working image's own digest differs: its
	// history is normalised.)
	read name.Digest
	// write pushes an image by digest under the rebase's context and options.
	write func(name.Digest, v1.Image) error
	// saved is where Save wrote the image.
	saved *name.Digest
	// manifestType is the media type of the manifest Save writes (the app's).
	manifestType types.MediaType
	// swapped is set once the layers were swapped (Rebase), to tell lifecycle's
	// checks, which come before, from what comes after.
	swapped bool
}

var _ imgutil.Image = (*cnbImage)(nil)

// newCNBImage returns the adapter over img, read from repo. Its history is
// normalised first: go-containerregistry's mutate.Rebase walks the history beside
// the layers, and repeats a layer when there is no history, or indexes past the
// layers (a panic) when the history names more layers than there are.
func newCNBImage(img v1.Image, imageName string, repo name.Repository, write func(name.Digest, v1.Image) error) (*cnbImage, error) {
	digest, err := img.Digest()
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.History = imgutil.NormalizedHistory(cf.History, len(cf.RootFS.DiffIDs))
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return nil, err
	}
	// The creation time is the app's, not imgutil's NormalizedDateTime (what pack
	// writes unless given a time), nor the clock's: a retried rebase gives the same
	// digest and pushes nothing new.
	created := cf.Created.Time
	if created.IsZero() {
		created = imgutil.NormalizedDateTime
	}
	core, err := imgutil.NewCNBImage(imgutil.ImageOptions{
		BaseImage: img,
		CreatedAt: created,
		// DefaultTypes keep the media types of img, as remote.NewImage does with a
		// base image; Save writes the app's manifest type (mediatypes.go).
		MediaTypes: imgutil.DefaultTypes,
	})
	if err != nil {
		return nil, err
	}
	mt, err := img.MediaType()
	if err != nil {
		return nil, err
	}
	return &cnbImage{CNBImageCore: core, name: imageName, read: repo.Digest(digest.String()), write: write, manifestType: mt}, nil
}

// Kind is imgutil's kind of an image in a registry.
func (i *cnbImage) Kind() string { return "remote" }

// Name is what lifecycle knows the image by.
func (i *cnbImage) Name() string { return i.name }

// Rename renames the image (lifecycle does not, when rebasing).
func (i *cnbImage) Rename(n string) { i.name = n }

// Found is true: the image was read before lifecycle was given it.
func (i *cnbImage) Found() bool { return true }

// Valid is true: the image was read, manifest and config, before lifecycle was
// given it; its layers are checked by the registry when pushed.
func (i *cnbImage) Valid() bool { return true }

// Identifier is the image by digest: where Save wrote it, else where it was read
// from (for the run image, what lifecycle writes to runImage.reference).
func (i *cnbImage) Identifier() (imgutil.Identifier, error) {
	if i.saved != nil {
		return imgremote.DigestIdentifier{Digest: *i.saved}, nil
	}
	return imgremote.DigestIdentifier{Digest: i.read}, nil
}

// Delete refuses: a rebase never deletes an image.
func (i *cnbImage) Delete() error { return errors.New("rebase does not delete images") }

// Rebase swaps the run image layers (imgutil's Rebase, which takes os, arch and
// os version from the new run image) and takes the new run image's variant too,
// which go-containerregistry's mutate.Rebase drops.
func (i *cnbImage) Rebase(topLayer string, newBase imgutil.Image) error {
	if err := i.CNBImageCore.Rebase(topLayer, newBase); err != nil {
		return err
	}
	variant, err := newBase.Variant()
	if err != nil {
		return err
	}
	if err := i.MutateConfigFile(func(c *v1.ConfigFile) { c.Variant = variant }); err != nil {
		return err
	}
	i.swapped = true
	return nil
}

// Save writes the image to the repository of its name, by digest.
func (i *cnbImage) Save(additionalNames ...string) error {
	return i.SaveAs(i.name, additionalNames...)
}

// SaveAs writes the image by digest to repository (a repository, no tag) and
// nowhere else: additional names are refused, as they would be tags. As imgutil's
// remote image does, it sets the creation time and empties the history first.
func (i *cnbImage) SaveAs(repository string, additionalNames ...string) error {
	if len(additionalNames) > 0 {
		return fmt.Errorf("rebase writes by digest only, not to %q", additionalNames)
	}
	repo, err := name.NewRepository(repository)
	if err != nil {
		return fmt.Errorf("the image is saved to a repository, not %q: %w", repository, err)
	}
	if err := i.SetCreatedAtAndHistory(); err != nil {
		return err
	}
	img, err := withManifestType(i.UnderlyingImage(), i.manifestType)
	if err != nil {
		return err
	}
	i.Image = img
	d, err := img.Digest()
	if err != nil {
		return err
	}
	ref := repo.Digest(d.String())
	if err := i.write(ref, img); err != nil {
		return err
	}
	i.saved = &ref
	return nil
}

// SaveFile is not supported: images are written to registries only.
func (i *cnbImage) SaveFile() (string, error) {
	return "", errors.New("rebase writes images to registries only")
}

package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/buildpacks/lifecycle/platform/files"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

const (
	// LabelLifecycleMetadata is the OCI config label in which the buildpacks lifecycle
	// records, among others, the run image an app image was exported onto
	// (platform.LifecycleMetadataLabel; TestBaseLabelsAreTheirs asserts it).
	LabelLifecycleMetadata = "io.buildpacks.lifecycle.metadata"
	// LabelS2IBuilder is the OCI config label in which source-to-image records the
	// builder image an image was built from, as it was given (a tag, usually)
	// (constants.BuildImageLabel; TestBaseLabelsAreTheirs asserts it).
	LabelS2IBuilder = "io.openshift.s2i.build.image"

	// BaseRunImage: the image was exported by the buildpacks lifecycle onto a run
	// image, whose layers are its bottom ones up to Base.TopLayer.
	BaseRunImage = "RunImage"
	// BaseBuilder: the image was built by source-to-image, FROM its builder image,
	// whose layers are its bottom ones.
	BaseBuilder = "Builder"

	// maxBaseLabel bounds the labels a base is read from: tenants write them.
	maxBaseLabel = 64 << 10
	// maxBaseName bounds an image name or reference taken from a label.
	maxBaseName = 512
	// maxMirrors and maxMirror bound the run image mirrors kept; others are dropped.
	maxMirrors = 8
	maxMirror  = 256
	// maxDiffIDs bounds the layers of an image or a base compared (images have at
	// most 127 layers on overlayfs).
	maxDiffIDs = 256
)

// Base is what an image says of the image it was built on: its buildpacks run
// image, or its source-to-image builder. Kind "" when it says neither.
type Base struct {
	// Kind is BaseRunImage, BaseBuilder or "" (the image names no base).
	Kind string
	// Image is the base image's name as recorded: buildpacks' runImage.image (else
	// the repository of runImage.reference), s2i's builder label.
	Image string
	// Mirrors are the run image's mirrors the lifecycle recorded (buildpacks only).
	Mirrors []string
	// Reference is the run image by digest when the image was built (buildpacks).
	Reference string
	// TopLayer is the diffID of the run image's top layer in this image (buildpacks).
	TopLayer string
	// DiffIDs are the image's layers' diffIDs, bottom first; kept only when Kind is
	// set and Problem is not.
	DiffIDs []string
	// Platform is the image's os/architecture (its config's), compared with the
	// base's: a base read for another platform says nothing of this image.
	Platform string
	// Problem says why the labels cannot be believed (unparsable, a topLayer that is
	// not a layer of the image, no image name, too long...). Kind stays set: the
	// image names a base, which cannot be told.
	Problem string
}

// clone returns b with slices of its own.
func (b Base) clone() Base {
	b.Mirrors = cloneStrings(b.Mirrors)
	b.DiffIDs = cloneStrings(b.DiffIDs)
	return b
}

func cloneStrings(s []string) []string {
	if s == nil {
		return nil
	}
	return append([]string(nil), s...)
}

// clone returns m with slices of its own: cached results are shared.
func (m Middleware) clone() Middleware {
	m.Base = m.Base.clone()
	return m
}

// Moved reports whether the base b records is no longer the image now, what
// Inspector.Base resolved b's image (or a candidate of it) to: for a run image,
// when the top layer differs (what the lifecycle's rebase replaces); for an s2i
// builder, when its layers are not the bottom ones of the image. ok is false when
// b cannot tell (Kind "" or a Problem) or now has no layers.
func (b Base) Moved(now BaseImage) (moved, ok bool) {
	if b.Kind == "" || b.Problem != "" || len(now.DiffIDs) == 0 {
		return false, false
	}
	if b.Platform != "" && now.Platform != "" && b.Platform != now.Platform {
		return false, false // read for another platform (bases are read for linux/amd64)
	}
	switch b.Kind {
	case BaseRunImage:
		return now.TopLayer != b.TopLayer, true
	case BaseBuilder:
		if len(now.DiffIDs) > len(b.DiffIDs) {
			return true, true
		}
		for k, d := range now.DiffIDs {
			if b.DiffIDs[k] != d {
				return true, true
			}
		}
		return false, true
	}
	return false, false
}

// baseOf reads the base of the image of config cf from its labels.
func baseOf(cf *v1.ConfigFile) Base {
	cnb := cf.Config.Labels[LabelLifecycleMetadata]
	s2i := strings.TrimSpace(cf.Config.Labels[LabelS2IBuilder])
	var b Base
	switch {
	case strings.TrimSpace(cnb) != "":
		b = runImageOf(cnb)
		if s2i != "" && b.Problem == "" {
			// Labels are inherited from the base: a builder built with buildpacks,
			// a run image built with s2i.
			b.Problem = fmt.Sprintf("the image has both labels %s and %s: cannot tell whether buildpacks or source-to-image built it",
				LabelLifecycleMetadata, LabelS2IBuilder)
		}
	case s2i != "":
		b = Base{Kind: BaseBuilder, Image: s2i}
		if !isImageName(s2i) {
			b = Base{Kind: BaseBuilder, Problem: fmt.Sprintf("label %s is not an image reference", LabelS2IBuilder)}
		}
	default:
		return Base{}
	}
	if b.Problem != "" {
		return b
	}

	diffIDs := cf.RootFS.DiffIDs
	switch {
	case len(diffIDs) == 0:
		b.Problem = "the image has no layers"
		return b
	case len(diffIDs) > maxDiffIDs:
		b.Problem = fmt.Sprintf("the image has %d layers, more than the %d the operator compares", len(diffIDs), maxDiffIDs)
		return b
	}
	b.DiffIDs = make([]string, len(diffIDs))
	for k, d := range diffIDs {
		b.DiffIDs[k] = d.String()
	}
	b.Platform = platformOf(cf)
	if b.Kind == BaseRunImage && !containsString(b.DiffIDs, b.TopLayer) {
		b.Problem = fmt.Sprintf("label %s names run image top layer %s, which is not a layer of the image",
			LabelLifecycleMetadata, b.TopLayer)
	}
	if b.Problem != "" {
		b.DiffIDs, b.Platform = nil, ""
	}
	return b
}

// runImageOf reads the run image from the lifecycle's metadata label, as the
// lifecycle's rebase does (platform.GetRunImageFromMetadata): runImage.image and
// its mirrors, else those of the older stack.runImage.
func runImageOf(label string) Base {
	b := Base{Kind: BaseRunImage}
	if len(label) > maxBaseLabel {
		b.Problem = fmt.Sprintf("label %s is %d bytes long, more than the %d the operator reads", LabelLifecycleMetadata, len(label), maxBaseLabel)
		return b
	}
	var md files.LayersMetadataCompat
	if err := json.Unmarshal([]byte(label), &md); err != nil {
		b.Problem = fmt.Sprintf("label %s is not the lifecycle's metadata: %s", LabelLifecycleMetadata, labelJSONError(err))
		return b
	}
	ri := md.RunImage
	run := ri.RunImageForExport
	if run.Image == "" && md.Stack != nil {
		run = md.Stack.RunImage
	}

	if isImageName(ri.Reference) {
		b.Reference = ri.Reference
	}
	switch {
	case isImageName(run.Image):
		b.Image = run.Image
	case run.Image != "":
		b.Problem = fmt.Sprintf("label %s names a run image that is not an image reference", LabelLifecycleMetadata)
		return b
	case b.Reference != "":
		r, _ := name.ParseReference(b.Reference) // isImageName parsed it
		b.Image = r.Context().Name()
	default:
		b.Problem = fmt.Sprintf("label %s names no run image", LabelLifecycleMetadata)
		return b
	}
	for _, m := range run.Mirrors {
		if len(b.Mirrors) == maxMirrors {
			break
		}
		if len(m) <= maxMirror && isImageName(m) {
			b.Mirrors = append(b.Mirrors, m)
		}
	}

	if _, err := v1.NewHash(ri.TopLayer); err != nil {
		b.Problem = fmt.Sprintf("label %s names no run image top layer (runImage.topLayer)", LabelLifecycleMetadata)
		return b
	}
	b.TopLayer = ri.TopLayer
	return b
}

// labelJSONError describes a JSON decoding failure without quoting the label.
func labelJSONError(err error) string {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return fmt.Sprintf("malformed JSON at byte offset %d", syn.Offset)
	}
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		return fmt.Sprintf("unexpected JSON %s at byte offset %d", typ.Value, typ.Offset)
	}
	return "malformed JSON"
}

// isImageName reports whether s is an image reference short enough and printable
// enough to go into a status.
func isImageName(s string) bool {
	if s == "" || len(s) > maxBaseName {
		return false
	}
	for k := 0; k < len(s); k++ {
		if s[k] <= ' ' || s[k] > '~' {
			return false
		}
	}
	_, err := name.ParseReference(s)
	return err == nil
}

func containsString(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// platformOf is cf's os/architecture ("" when it names neither).
func platformOf(cf *v1.ConfigFile) string {
	if cf.OS == "" && cf.Architecture == "" {
		return ""
	}
	return cf.OS + "/" + cf.Architecture
}

package rebase

import (
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// withManifestType returns img as a manifest of media type mt (the app's, Docker
// or OCI), its config and layers given the media types of that family.
//
// go-containerregistry's mutate.Rebase builds the rebased image on empty.Image,
// a Docker manifest, whatever the app's: an OCI app would come out as a Docker
// manifest listing OCI layers, a mix some registries refuse. Layer blobs are not
// touched (gzip is gzip under either name): only their descriptors change, so
// their digests, and cross-repository mounts, stay.
func withManifestType(img v1.Image, mt types.MediaType) (v1.Image, error) {
	var configType types.MediaType
	switch mt {
	case types.OCIManifestSchema1:
		configType = types.OCIConfigJSON
	case types.DockerManifestSchema2:
		configType = types.DockerConfigJSON
	default:
		return img, nil // another kind of manifest: left as it is
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, err
	}
	layerTypes := make([]types.MediaType, len(m.Layers))
	same := m.MediaType == mt && m.Config.MediaType == configType
	for i, l := range m.Layers {
		layerTypes[i] = layerType(l.MediaType, mt)
		same = same && layerTypes[i] == l.MediaType
	}
	if same {
		return img, nil
	}

	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	// History: SetCreatedAtAndHistory left one entry per layer.
	if len(layers) != len(m.Layers) || len(cf.History) != len(layers) {
		return nil, fmt.Errorf("the rebased image has %d layers, %d descriptors and %d history entries", len(layers), len(m.Layers), len(cf.History))
	}
	history := cf.History
	cf = cf.DeepCopy()
	cf.RootFS.DiffIDs, cf.History = nil, nil
	out, err := mutate.ConfigFile(mutate.MediaType(empty.Image, mt), cf)
	if err != nil {
		return nil, err
	}
	out = mutate.ConfigMediaType(out, configType)
	adds := make([]mutate.Addendum, len(layers))
	for i, l := range layers {
		adds[i] = mutate.Addendum{Layer: l, History: history[i], MediaType: layerTypes[i],
			Annotations: m.Layers[i].Annotations, URLs: m.Layers[i].URLs}
	}
	return mutate.Append(out, adds...)
}

// layerType is the media type of a layer of type t in a manifest of type mt:
// gzip and uncompressed layers take the name of their family; others (zstd,
// foreign) keep theirs.
func layerType(t, mt types.MediaType) types.MediaType {
	oci := mt == types.OCIManifestSchema1
	switch t {
	case types.DockerLayer, types.OCILayer:
		if oci {
			return types.OCILayer
		}
		return types.DockerLayer
	case types.DockerUncompressedLayer, types.OCIUncompressedLayer:
		if oci {
			return types.OCIUncompressedLayer
		}
		return types.DockerUncompressedLayer
	}
	return t
}

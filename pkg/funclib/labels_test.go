package funclib

import (
	"testing"

	"github.com/fnops/func-operator/pkg/registry"
)

// pkg/registry reads these labels without linking func (its tests and fuzz targets
// build without it): its names must be func's.
func TestRegistryLabelsAreFuncs(t *testing.T) {
	if registry.LabelMiddlewareVersion != MiddlewareVersionLabel {
		t.Errorf("registry.LabelMiddlewareVersion = %q, func's is %q", registry.LabelMiddlewareVersion, MiddlewareVersionLabel)
	}
	if registry.LabelRevision != RevisionLabel {
		t.Errorf("registry.LabelRevision = %q, func's is %q", registry.LabelRevision, RevisionLabel)
	}
}

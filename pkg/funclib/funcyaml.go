package funclib

import "github.com/fnops/func-operator/pkg/funclib/funcyaml"

// What the operator reads of func.yaml, from package funcyaml (see its doc for why it
// is a package of its own).

// FuncYAML is the name of the file that describes a function.
const FuncYAML = funcyaml.FuncYAML

// Metadata is what the operator uses of a function's func.yaml.
type Metadata = funcyaml.Metadata

// InvalidError says that func.yaml cannot be used: it does not parse, migrate or validate.
type InvalidError = funcyaml.InvalidError

// UnsafeError says that func.yaml asks for something the operator refuses to do on
// behalf of a repository, such as reading the operator's own environment.
type UnsafeError = funcyaml.UnsafeError

// LoadFuncYAML parses and validates a func.yaml (funcyaml.LoadFuncYAML).
func LoadFuncYAML(content []byte, tmpDir string) (Metadata, error) {
	return funcyaml.LoadFuncYAML(content, tmpDir)
}

// IsInvalid reports whether err says func.yaml is invalid.
func IsInvalid(err error) bool { return funcyaml.IsInvalid(err) }

// IsUnsafe reports whether err says func.yaml is unsafe to use.
func IsUnsafe(err error) bool { return funcyaml.IsUnsafe(err) }

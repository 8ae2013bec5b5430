package funclib

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	yamlv2 "gopkg.in/yaml.v2"
	"gopkg.in/yaml.v3"
	fn "knative.dev/func/pkg/functions"
)

// FuncYAML is the name of the file that describes a function.
const FuncYAML = fn.FunctionFile

// Metadata is what the operator uses of a function's func.yaml.
type Metadata struct {
	// Name of the function, which is also the name of its Knative Service.
	Name string
	// Runtime of the function: go, node, python, quarkus, rust, springboot, typescript.
	Runtime string
	// Invoke is the invocation hint: http or cloudevent.
	Invoke string
	// Builder is the build subsystem: pack or s2i.
	Builder string
	// Image is the full image reference, when func.yaml sets one.
	Image string
	// Registry the image is pushed to, when func.yaml sets one.
	Registry string
	// Namespace func.yaml deploys to, when it sets one.
	Namespace string
	// SpecVersion is the func.yaml schema version after migration.
	SpecVersion string
	// BuildEnvs are the build environment variables, as NAME=value.
	BuildEnvs []string
	// BuilderImages are the builder images func.yaml pins, by builder (pack, s2i).
	BuilderImages map[string]string
	// Buildpacks are extra buildpacks func.yaml asks for.
	Buildpacks []string
	// ServiceAccountName is the ServiceAccount the function runs as; empty means default.
	ServiceAccountName string
}

// InvalidError says that func.yaml cannot be used: it does not parse, migrate or validate.
type InvalidError struct{ msg string }

func (e *InvalidError) Error() string { return e.msg }

// UnsafeError says that func.yaml asks for something the operator refuses to do on
// behalf of a repository, such as reading the operator's own environment.
type UnsafeError struct{ msg string }

func (e *UnsafeError) Error() string { return e.msg }

// localEnvTemplate matches func's {{ env:NAME }} template, which the func library
// resolves from the environment of the process that loads the function: in an
// operator that would be the operator's own environment.
var localEnvTemplate = regexp.MustCompile(`\{\{\s*env\s*:`)

// LoadFuncYAML parses, migrates and validates the content of a func.yaml through the
// func library. It never touches the checkout the content came from: the func library
// writes run data next to the func.yaml it loads, so it loads a scratch copy in a
// temporary directory under tmpDir (the OS default when empty), which is removed.
func LoadFuncYAML(content []byte, tmpDir string) (Metadata, error) {
	// Refuse {{ env:NAME }} before the func library sees the file: its validation
	// evaluates such templates and may quote the values in its errors.
	if err := checkNoLocalEnv(content); err != nil {
		return Metadata{}, err
	}
	// fn.NewFunction reports a decoding error only when a migration also fails, so
	// decode once here, as the func library does (yaml.v2), to report it always.
	var probe fn.Function
	if err := yamlv2.Unmarshal(content, &probe); err != nil {
		return Metadata{}, &InvalidError{msg: fmt.Sprintf("func.yaml cannot be decoded: %s", oneLine(err.Error()))}
	}

	scratch, err := os.MkdirTemp(tmpDir, "funcyaml-")
	if err != nil {
		return Metadata{}, fmt.Errorf("creating scratch directory for func.yaml: %w", err)
	}
	defer func() { _ = os.RemoveAll(scratch) }()
	if err := os.WriteFile(filepath.Join(scratch, fn.FunctionFile), content, 0o600); err != nil {
		return Metadata{}, fmt.Errorf("writing scratch copy of func.yaml: %w", err)
	}

	f, err := newFunction(scratch)
	if err != nil {
		return Metadata{}, &InvalidError{msg: fmt.Sprintf("func.yaml cannot be loaded: %s", oneLine(err.Error()))}
	}
	// Check again what the func library decoded, before its validation evaluates
	// templates: YAML can hide a template from the scan above (an alias of an anchor
	// set on a mapping key, a !!binary scalar).
	if err := checkNoLocalEnvDecoded(f); err != nil {
		return Metadata{}, err
	}
	if err := f.Validate(); err != nil {
		return Metadata{}, &InvalidError{msg: oneLine(err.Error())}
	}
	var missing []string
	if f.Name == "" {
		missing = append(missing, "name")
	}
	if f.Runtime == "" {
		missing = append(missing, "runtime")
	}
	if len(missing) > 0 {
		return Metadata{}, &InvalidError{msg: fmt.Sprintf("func.yaml has no %s", strings.Join(missing, " and no "))}
	}
	return Metadata{
		Name:        f.Name,
		Runtime:     f.Runtime,
		Invoke:      f.Invoke,
		Builder:     f.Build.Builder,
		Image:       f.Image,
		Registry:    f.Registry,
		Namespace:   f.Namespace,
		SpecVersion: f.SpecVersion,

		BuildEnvs:          buildEnvs(f.Build.BuildEnvs),
		BuilderImages:      nonEmpty(f.Build.BuilderImages),
		Buildpacks:         f.Build.Buildpacks,
		ServiceAccountName: f.Deploy.ServiceAccountName,
	}, nil
}

// nonEmpty returns m, or nil when it is empty.
func nonEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

// buildEnvs returns envs as NAME=value, as func's pipelines pass them.
func buildEnvs(envs fn.Envs) []string {
	var out []string
	for _, e := range envs {
		if kv := e.KeyValuePair(); kv != "" {
			out = append(out, kv)
		}
	}
	return out
}

// newFunction loads the function at root. The func library panics on some content,
// such as a specVersion that is not a semantic version: that is an invalid func.yaml.
func newFunction(root string) (f fn.Function, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the func library cannot process it: %v", r)
		}
	}()
	return fn.NewFunction(root)
}

// checkNoLocalEnvDecoded refuses {{ env:NAME }} templates in the decoded fields the
// func library resolves templates of.
func checkNoLocalEnvDecoded(f fn.Function) error {
	var found []string
	check := func(path string, v *string) {
		if v != nil && localEnvTemplate.MatchString(*v) {
			found = append(found, path)
		}
	}
	for i, e := range f.Run.Envs {
		check(fmt.Sprintf("run.envs[%d].value", i), e.Value)
	}
	for i, e := range f.Build.BuildEnvs {
		check(fmt.Sprintf("build.buildEnvs[%d].value", i), e.Value)
	}
	for i, l := range f.Deploy.Labels {
		check(fmt.Sprintf("deploy.labels[%d].value", i), l.Value)
	}
	keys := make([]string, 0, len(f.Deploy.Annotations))
	for k := range f.Deploy.Annotations {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := f.Deploy.Annotations[k]
		check("deploy.annotations."+k, &v)
	}
	return localEnvError(found)
}

// checkNoLocalEnv walks every scalar of the YAML document and refuses {{ env:NAME }}
// templates wherever they stand, naming the field but never resolving the template.
func checkNoLocalEnv(content []byte) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(content, &doc); err != nil {
		return &InvalidError{msg: fmt.Sprintf("func.yaml is not valid YAML: %s", err)}
	}
	var found []string
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, path)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				walk(n.Content[i+1], joinPath(path, n.Content[i].Value))
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				walk(c, fmt.Sprintf("%s[%d]", path, i))
			}
		case yaml.ScalarNode:
			if localEnvTemplate.MatchString(n.Value) {
				found = append(found, path)
			}
		}
	}
	walk(&doc, "")
	return localEnvError(found)
}

func localEnvError(found []string) error {
	if len(found) == 0 {
		return nil
	}
	return &UnsafeError{msg: fmt.Sprintf(
		"func.yaml uses {{ env:... }} templates at %s: they would be resolved from the operator's own environment, so the operator refuses them; use {{ secret:... }} or {{ configMap:... }} instead",
		strings.Join(found, ", "))}
}

func joinPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// oneLine folds the func library's multi-line, tab-indented messages into one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// IsInvalid reports whether err says func.yaml is invalid.
func IsInvalid(err error) bool {
	var e *InvalidError
	return errors.As(err, &e)
}

// IsUnsafe reports whether err says func.yaml is unsafe to use.
func IsUnsafe(err error) bool {
	var e *UnsafeError
	return errors.As(err, &e)
}

package funcyaml

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	yamlv2 "gopkg.in/yaml.v2"
	"gopkg.in/yaml.v3"
	fn "knative.dev/func/pkg/functions"

	"github.com/fnops/func-operator/pkg/text"
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
	// Deployer is the deployer func.yaml asks for (its deployer field: knative, raw
	// or keda), empty when it names none. DeployedWith is the one func recorded the
	// function was last deployed with (deploy.deployer), and DeployedNamespace where
	// (deploy.namespace). DeployerOf resolves them.
	Deployer, DeployedWith, DeployedNamespace string
	// ManagementDisabled is deploy.managementDisabled (func v0.50, `func deploy
	// --management-disabled`): the function's owner asked that no operator manage it.
	ManagementDisabled bool
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
	// evaluates such templates and may quote the values in its errors. This parses
	// the file first, within the limits on its shape (limits below), so that the
	// decodes after it are bounded too.
	if err := checkNoLocalEnv(content); err != nil {
		return Metadata{}, err
	}
	// fn.NewFunction reports a decoding error only when a migration also fails, so
	// decode once here, as the func library does (yaml.v2), to report it always.
	var probe fn.Function
	if err := yamlv2.Unmarshal(content, &probe); err != nil {
		return Metadata{}, invalidf("func.yaml cannot be decoded: %s", oneLine(err.Error()))
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
		return Metadata{}, invalidf("func.yaml cannot be loaded: %s", oneLine(err.Error()))
	}
	// Check again what the func library decoded, before its validation evaluates
	// templates: YAML can hide a template from the scan above (an alias of an anchor
	// set on a mapping key, a !!binary scalar).
	if err := checkNoLocalEnvDecoded(f); err != nil {
		return Metadata{}, err
	}
	if err := validate(f); err != nil {
		return Metadata{}, err
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
		Deployer:           f.Deployer,
		DeployedWith:       f.Deploy.Deployer,
		DeployedNamespace:  f.Deploy.Namespace,
		ManagementDisabled: f.Deploy.ManagementDisabled,
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

// validate runs the func library's validation, which panics on some content: a
// build env with a value but no name, in func v0.44.0.
func validate(f fn.Function) (err error) {
	for i, e := range f.Build.BuildEnvs {
		if e.Name == nil && e.Value != nil {
			return invalidf("func.yaml has a build env with a value but no name (build.buildEnvs[%d])", i)
		}
	}
	defer func() {
		if r := recover(); r != nil {
			err = invalidf("func.yaml cannot be validated: the func library fails on it: %v", r)
		}
	}()
	if err := f.Validate(); err != nil {
		return invalidf("%s", oneLine(err.Error()))
	}
	return nil
}

// checkNoLocalEnvDecoded refuses {{ env:NAME }} templates in the decoded fields the
// func library resolves templates of.
func checkNoLocalEnvDecoded(f fn.Function) error {
	var found []string
	check := func(v *string, path func() string) {
		if v != nil && localEnvTemplate.MatchString(*v) {
			found = append(found, path())
		}
	}
	for i, e := range f.Run.Envs {
		check(e.Value, func() string { return fmt.Sprintf("run.envs[%d].value", i) })
	}
	for i, e := range f.Build.BuildEnvs {
		check(e.Value, func() string { return fmt.Sprintf("build.buildEnvs[%d].value", i) })
	}
	for i, l := range f.Deploy.Labels {
		check(l.Value, func() string { return fmt.Sprintf("deploy.labels[%d].value", i) })
	}
	keys := make([]string, 0, len(f.Deploy.Annotations))
	for k := range f.Deploy.Annotations {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := f.Deploy.Annotations[k]
		check(&v, func() string { return "deploy.annotations." + k })
	}
	return localEnvError(found)
}

// Limits on the shape of a func.yaml. pkg/git reads up to 1 MiB of it, but what
// parsing and decoding YAML costs grows with its nodes, not its bytes: without these
// limits, 1 MiB of "[a,a,a,...]" (500,000 nodes) cost LoadFuncYAML 0.8 s and 371 MiB,
// 100,000 envs of an old-format func.yaml 1.2 s and 484 MiB (the func library decodes
// it six times with yaml.v2, to migrate it). Aliases multiply nodes: yaml.v2 refuses
// a document whose decoding is mostly expanded aliases, but only by their share of
// it, so 24 KB expanded to 380,000 nodes (62 MiB) and loaded; yaml.v3 does not expand
// them into a yaml.Node at all. func writes a func.yaml of a few dozen nodes, five
// levels deep; one with a thousand envs has about 5,000 nodes.
// TestLoadFuncYAML_Hostile measures what the limits leave: the costliest func.yaml it
// has to refuse takes 17 MiB and 31 ms, and TestLoadFuncYAML_LargeButReasonable's
// costliest one to load 53 MiB and 110 ms (a value of 1 MiB, which each decode copies).
const (
	// maxYAMLIndicators bounds, before parsing, the bytes among , - : ? [ { of the
	// file: every entry of a collection needs one, and none makes more than three
	// nodes (the implicit mapping of "[a: b]", its key and its value), so the count
	// bounds what yaml.v3 builds before maxYAMLNodes is checked. Those in comments
	// and scalars count too: hence the margin over maxYAMLNodes.
	maxYAMLIndicators = 4 * maxYAMLNodes
	// maxYAMLNodes bounds the nodes of the parsed document with every alias
	// expanded: the most a yaml.v2 decode of it may walk.
	maxYAMLNodes = 10000
	// maxYAMLDepth bounds how deep collections nest, aliases expanded.
	maxYAMLDepth = 64
	// maxListed bounds how many fields an error names, and maxPathLen how long a
	// field's path may be written in it.
	maxListed  = 10
	maxPathLen = 128
	// maxMessage bounds an error message that quotes the func library or a YAML
	// decoder: they list every problem, and the message ends up in a condition.
	maxMessage = 2048
)

// checkNoLocalEnv parses the YAML document within the limits above, then walks
// every scalar but the mapping keys that are scalars, and refuses {{ env:NAME }}
// templates wherever they stand, naming the field but never resolving the template.
func checkNoLocalEnv(content []byte) error {
	if n := yamlIndicators(content); n > maxYAMLIndicators {
		return invalidf("func.yaml is too large a YAML structure: it has more than %d of the characters , - : ? [ { that YAML collections are made of", maxYAMLIndicators)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(content, &doc); err != nil {
		return invalidf("func.yaml is not valid YAML: %s", oneLine(err.Error()))
	}
	if err := checkShape(&doc); err != nil {
		return err
	}
	var found []string
	// path holds the keys and indexes leading to the node walked; it is written out
	// only for a node that matches.
	var path []pathElem
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				key := n.Content[i]
				if key.Kind == yaml.MappingNode || key.Kind == yaml.SequenceNode {
					// A complex key ("? {a: b}") holds values too, which an anchor
					// can lend to a field.
					path = append(path, pathElem{key: "?", index: -1})
					walk(key)
					path = path[:len(path)-1]
				}
				path = append(path, pathElem{key: key.Value, index: -1})
				walk(n.Content[i+1])
				path = path[:len(path)-1]
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				path = append(path, pathElem{index: i})
				walk(c)
				path = path[:len(path)-1]
			}
		case yaml.ScalarNode:
			if localEnvTemplate.MatchString(n.Value) {
				found = append(found, writePath(path))
			}
		}
	}
	walk(&doc)
	return localEnvError(found)
}

// yamlIndicators counts the bytes of content that YAML collections are made of, up
// to one more than maxYAMLIndicators.
func yamlIndicators(content []byte) int {
	n := 0
	for _, b := range content {
		switch b {
		case ',', '-', ':', '?', '[', '{':
			if n++; n > maxYAMLIndicators {
				return n
			}
		}
	}
	return n
}

// shape is the number of nodes and the depth of a node with its aliases expanded.
type shape struct{ nodes, depth int }

// checkShape refuses a document whose nodes, aliases expanded, are more than
// maxYAMLNodes or nest deeper than maxYAMLDepth, and one with an alias inside the
// node it refers to. It takes time linear in the document as parsed, however much
// aliases expand: the shape of each anchored node is computed once.
func checkShape(doc *yaml.Node) error {
	anchored := map[*yaml.Node]shape{}
	inProgress := map[*yaml.Node]bool{}
	var errTooMany = invalidf("func.yaml is too large a YAML structure: it has more than %d nodes, aliases expanded", maxYAMLNodes)
	var errTooDeep = invalidf("func.yaml nests YAML collections more than %d levels deep, aliases expanded", maxYAMLDepth)
	var measure func(n *yaml.Node, level int) (shape, error)
	measure = func(n *yaml.Node, level int) (shape, error) {
		if level > maxYAMLDepth {
			return shape{}, errTooDeep
		}
		if n.Kind == yaml.AliasNode {
			if n.Alias == nil {
				return shape{}, invalidf("func.yaml is not valid YAML: alias *%s refers to no anchor", Excerpt(n.Value))
			}
			if inProgress[n.Alias] {
				return shape{}, invalidf("func.yaml is not valid YAML: alias *%s is inside the node it refers to", Excerpt(n.Value))
			}
			if s, ok := anchored[n.Alias]; ok {
				if level-1+s.depth > maxYAMLDepth {
					return shape{}, errTooDeep
				}
				return s, nil
			}
			return measure(n.Alias, level)
		}
		inProgress[n] = true
		defer delete(inProgress, n)
		s := shape{nodes: 1, depth: 1}
		for _, c := range n.Content {
			cs, err := measure(c, level+1)
			if err != nil {
				return shape{}, err
			}
			if s.nodes += cs.nodes; s.nodes > maxYAMLNodes {
				return shape{}, errTooMany
			}
			s.depth = max(s.depth, cs.depth+1)
		}
		if n.Anchor != "" {
			anchored[n] = s
		}
		return s, nil
	}
	_, err := measure(doc, 0)
	return err
}

// pathElem is a step of a path into a YAML document: a mapping key, or a sequence
// index when index >= 0.
type pathElem struct {
	key   string
	index int
}

// writePath writes path as a.b[0].c, shortened to about maxPathLen bytes.
func writePath(path []pathElem) string {
	var b strings.Builder
	for _, e := range path {
		if b.Len() > maxPathLen {
			break
		}
		if e.index >= 0 {
			b.WriteString("[" + strconv.Itoa(e.index) + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		// A key may be as long as the file: write no more of it than is shown.
		b.WriteString(shorten(e.key, maxPathLen+1-b.Len()))
	}
	return shorten(b.String(), maxPathLen)
}

func localEnvError(found []string) error {
	if len(found) == 0 {
		return nil
	}
	listed := found
	more := ""
	if len(found) > maxListed {
		listed, more = found[:maxListed], fmt.Sprintf(" and %d more", len(found)-maxListed)
	}
	for i, p := range listed {
		listed[i] = shorten(oneLine(p), maxPathLen)
	}
	return &UnsafeError{msg: fmt.Sprintf(
		"func.yaml uses {{ env:... }} templates at %s%s: they would be resolved from the operator's own environment, so the operator refuses them; use {{ secret:... }} or {{ configMap:... }} instead",
		strings.Join(listed, ", "), more)}
}

// invalidf returns an InvalidError with the message, shortened to maxMessage bytes.
func invalidf(format string, args ...any) *InvalidError {
	return &InvalidError{msg: shorten(fmt.Sprintf(format, args...), maxMessage)}
}

// shorten returns s cut to at most n bytes (on a rune boundary), with "..." when cut.
func shorten(s string, n int) string { return text.Cut(s, n, "...") }

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

// MaxExcerpt bounds how much of a file's content an error quotes: the files come from
// the user's source, and messages end up in status conditions.
const MaxExcerpt = 64

// Excerpt returns s, shortened to about MaxExcerpt bytes (on a rune boundary) with
// "..." when longer.
func Excerpt(s string) string {
	if len(s) <= MaxExcerpt {
		return s
	}
	return text.Prefix(s, MaxExcerpt) + "..."
}

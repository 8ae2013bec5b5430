package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// The release files.
const (
	CRDsFile           = "func-operator-crds.yaml"
	OperatorFile       = "func-operator.yaml"
	OnboardingFile     = "func-operator-onboarding.yaml"
	OnboardingKEDAFile = "func-operator-onboarding-keda.yaml"
)

// onboardingSources maps each file of config/namespace/ to the release file it ships as.
var onboardingSources = map[string]string{
	"onboard.yaml":      OnboardingFile,
	"onboard-keda.yaml": OnboardingKEDAFile,
}

// semver is what a release version looks like: vMAJOR.MINOR.PATCH and an optional
// pre-release (semver 2.0's, without build metadata: `+` may not be in an image tag).
var semver = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)` +
	`(-(0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)(\.(0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*))*)?$`)

// CheckVersion returns an error unless v is a release version, vX.Y.Z[-pre].
func CheckVersion(v string) error {
	if !semver.MatchString(v) {
		return fmt.Errorf("version %q is not vX.Y.Z or vX.Y.Z-pre (semver, with a v)", v)
	}
	return nil
}

// document is one YAML document of a stream: its text as written, and the kind and
// name it declares.
type document struct {
	raw  []byte
	kind string
	name string
	obj  map[string]any
}

// documents splits a YAML stream into its documents, skipping those that hold only
// comments or nothing.
func documents(stream []byte) ([]document, error) {
	var docs []document
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(stream)))
	for {
		raw, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading document %d: %w", len(docs)+1, err)
		}
		var obj map[string]any
		if err := utilyaml.Unmarshal(raw, &obj); err != nil {
			return nil, fmt.Errorf("document %d: %w", len(docs)+1, err)
		}
		if len(obj) == 0 {
			continue // comments only
		}
		kind, _ := obj["kind"].(string)
		meta, _ := obj["metadata"].(map[string]any)
		name, _ := meta["name"].(string)
		if kind == "" || name == "" {
			return nil, fmt.Errorf("document %d has no kind or no metadata.name:\n%s", len(docs)+1, raw)
		}
		docs = append(docs, document{raw: bytes.TrimSpace(raw), kind: kind, name: name, obj: obj})
	}
}

// Split splits config/ as ko resolved it into CRDsFile (the CustomResourceDefinitions)
// and OperatorFile (everything else), each with a header naming version. Every image
// of OperatorFile must be pinned by digest.
func Split(version string, stream []byte) (map[string][]byte, error) {
	docs, err := documents(stream)
	if err != nil {
		return nil, err
	}
	var crds, rest []document
	for _, d := range docs {
		if d.kind == "CustomResourceDefinition" {
			crds = append(crds, d)
		} else {
			rest = append(rest, d)
		}
	}
	if len(crds) == 0 {
		return nil, errors.New("no CustomResourceDefinition")
	}
	if len(rest) == 0 {
		return nil, errors.New("nothing but CustomResourceDefinitions")
	}
	var images []string
	for _, d := range rest {
		for _, img := range Images(d.obj) {
			if !Pinned(img) {
				return nil, fmt.Errorf("%s %s runs image %q, not pinned by digest", d.kind, d.name, img)
			}
			images = append(images, img)
		}
	}
	if len(images) == 0 {
		return nil, errors.New("no image: ko resolved no Deployment")
	}
	return map[string][]byte{
		CRDsFile: join(header(version, "the CustomResourceDefinitions. Apply them first; deleting the other "+
			"files leaves them, and so every Function, in place.", "kubectl apply -f "+CRDsFile), crds),
		OperatorFile: join(header(version, "the operator: its namespace, RBAC, ConfigMap, Deployment (every image "+
			"pinned by digest), admission policies and NetworkPolicy. Apply after "+CRDsFile+".", "kubectl apply -f "+OperatorFile), rest),
	}, nil
}

// Onboarding reads the files of the onboarding folder dir (config/namespace/) into
// their release files, each with a header naming version. A file it does not know
// is an error: each ships as a file of its own, on purpose.
func Onboarding(version, dir string) (map[string][]byte, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the onboarding folder: %w", err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		target, ok := onboardingSources[e.Name()]
		if !ok {
			return nil, fmt.Errorf("%s: no release file for it (hack/release onboardingSources)", filepath.Join(dir, e.Name()))
		}
		content, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", e.Name(), err)
		}
		docs, err := documents(content)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		for _, d := range docs {
			meta, _ := d.obj["metadata"].(map[string]any)
			if ns, _ := meta["namespace"].(string); ns != "" {
				return nil, fmt.Errorf("%s: %s %s names namespace %s; it is applied with -n", e.Name(), d.kind, d.name, ns)
			}
		}
		files[target] = join(header(version, "onboards one namespace (config/namespace/"+e.Name()+"), by its admin.",
			"kubectl apply -n <namespace> -f "+target), docs)
	}
	for _, target := range onboardingSources {
		if _, ok := files[target]; !ok {
			return nil, fmt.Errorf("the onboarding folder %s has no source for %s", dir, target)
		}
	}
	return files, nil
}

// header is the comment a release file starts with.
func header(version, what, apply string) string {
	return fmt.Sprintf("# func-operator %s: %s\n#\n#   %s\n#\n# Written by `make release` (hack/release.sh); do not edit.\n", version, what, apply)
}

// join writes docs after header, separated by ---.
func join(header string, docs []document) []byte {
	var b bytes.Buffer
	b.WriteString(header)
	for _, d := range docs {
		b.WriteString("---\n")
		b.Write(d.raw)
		b.WriteString("\n")
	}
	return b.Bytes()
}

// Images returns the value of every `image` field of obj, at any depth (containers,
// init containers, ephemeral containers, of any workload kind), sorted.
func Images(obj any) []string {
	var images []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if s, ok := e.(string); ok && k == "image" {
					images = append(images, s)
					continue
				}
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(obj)
	sort.Strings(images)
	return images
}

// digestRef is an image reference pinned by a sha256 digest (a tag before it allowed).
var digestRef = regexp.MustCompile(`^[^\s@]+@sha256:[0-9a-f]{64}$`)

// Pinned says whether image is pinned by a sha256 digest.
func Pinned(image string) bool { return digestRef.MatchString(image) }

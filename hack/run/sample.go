package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/fnops/func-operator/hack/internal/devenv"
	fotenv "github.com/fnops/func-operator/test/envtest"
)

// sampleFuncYAML is the function the sample repository holds.
const sampleFuncYAML = `specVersion: 0.36.0
name: hello
runtime: go
invoke: http
registry: registry.example/fns
build:
  builder: pack
`

// serveSample creates a git repository with a sample function under dir and serves
// it read-only over smart HTTP on 127.0.0.1. It returns the repository's URL.
func serveSample(dir string) (url string, stop func(), err error) {
	repo, err := devenv.ServeRepo(dir, map[string]string{
		"hello/func.yaml": sampleFuncYAML,
		"hello/go.mod":    "module function\n\ngo 1.23\n",
		"hello/handle.go": "package function\n\nimport \"net/http\"\n\n// Handle answers every request.\nfunc Handle(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(\"hello\\n\")) }\n",
	}, &prefixWriter{prefix: "run: sample repository: ", w: os.Stderr})
	if err != nil {
		return "", nil, err
	}
	return repo.URL, repo.Close, nil
}

// applySample creates config/samples/function.yaml in the cluster, pointed at url.
func applySample(ctx context.Context, cfg *rest.Config, root, url string) error {
	content, err := os.ReadFile(filepath.Join(root, "config", "samples", "function.yaml"))
	if err != nil {
		return fmt.Errorf("reading the sample Function: %w", err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(content, &u.Object); err != nil {
		return fmt.Errorf("decoding the sample Function: %w", err)
	}
	if err := unstructured.SetNestedField(u.Object, url, "spec", "repository", "url"); err != nil {
		return err
	}
	if err := fotenv.ApplyObjects(ctx, cfg, u); err != nil {
		return fmt.Errorf("creating the sample Function: %w", err)
	}
	return nil
}

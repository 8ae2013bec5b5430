package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

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
	gitBin, err := exec.LookPath("git")
	if err != nil {
		return "", nil, fmt.Errorf("the sample repository needs git: %w", err)
	}
	work := filepath.Join(dir, "work")
	files := map[string]string{
		"hello/func.yaml": sampleFuncYAML,
		"hello/go.mod":    "module function\n\ngo 1.23\n",
		"hello/handle.go": "package function\n\nimport \"net/http\"\n\n// Handle answers every request.\nfunc Handle(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(\"hello\\n\")) }\n",
	}
	for name, content := range files {
		p := filepath.Join(work, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", nil, fmt.Errorf("writing the sample: %w", err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return "", nil, fmt.Errorf("writing the sample: %w", err)
		}
	}
	bare := filepath.Join(dir, "repos", "functions.git")
	git := func(wd string, args ...string) error {
		cmd := exec.Command(gitBin, args...)
		cmd.Dir = wd
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=func-operator", "GIT_AUTHOR_EMAIL=run@fnops.invalid",
			"GIT_COMMITTER_NAME=func-operator", "GIT_COMMITTER_EMAIL=run@fnops.invalid")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	for _, step := range [][]string{
		{"init", "-q", "-b", "main"}, {"add", "."}, {"commit", "-q", "-m", "a sample function"},
		{"clone", "-q", "--bare", work, bare},
	} {
		if err := git(work, step...); err != nil {
			return "", nil, err
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("serving the sample repository: %w", err)
	}
	srv := &http.Server{Handler: &cgi.Handler{
		Path: gitBin,
		Args: []string{"http-backend"},
		Env:  []string{"GIT_PROJECT_ROOT=" + filepath.Join(dir, "repos"), "GIT_HTTP_EXPORT_ALL=1"},
	}}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(os.Stderr, "run: sample repository server:", err)
		}
	}()
	return "http://" + l.Addr().String() + "/functions.git", func() { _ = srv.Close() }, nil
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

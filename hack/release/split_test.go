package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCheckVersion(t *testing.T) {
	for v, ok := range map[string]bool{
		"v0.1.0": true, "v1.2.3": true, "v10.20.30": true, "v1.2.3-rc.1": true, "v1.2.3-alpha": true, "v1.2.3-0.3.7": true,
		"": false, "1.2.3": false, "v1.2": false, "v1.2.3.4": false, "v01.2.3": false, "v1.2.3-": false,
		"v1.2.3+build.1": false, "v1.2.3-rc.01": false, "v1.2.3 ": false, "latest": false, "v1.2.3\nv4.5.6": false,
	} {
		if err := CheckVersion(v); (err == nil) != ok {
			t.Errorf("CheckVersion(%q) = %v, want ok=%v", v, err, ok)
		}
	}
}

const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// resolved is what ko resolve prints, in the shape that matters: documents with and
// without leading comments, a comments-only one, a CRD among the rest, --- with spaces.
const resolved = `# a comment before the first document
apiVersion: v1
kind: Namespace
metadata:
  name: func-operator
---
# comments only
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: functions.functions.dev
spec:
  group: functions.dev
---   
apiVersion: apps/v1
kind: Deployment
metadata:
  name: func-operator
  namespace: func-operator
spec:
  template:
    spec:
      initContainers:
      - name: init
        image: example.com/init:v1@` + digest + `
      containers:
      - name: controller
        image: example.com/func-operator@` + digest + `
        env:
        - name: KIND
          value: "kind: CustomResourceDefinition"
`

func TestSplit(t *testing.T) {
	files, err := Split("v1.2.3", []byte(resolved))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string][]string{}
	for name, content := range files {
		if !strings.HasPrefix(string(content), "# func-operator v1.2.3: ") {
			t.Errorf("%s has no header naming the version:\n%s", name, content)
		}
		docs, err := documents(content)
		if err != nil {
			t.Fatalf("%s does not parse: %v", name, err)
		}
		for _, d := range docs {
			kinds[name] = append(kinds[name], d.kind+"/"+d.name)
		}
	}
	want := map[string][]string{
		CRDsFile:     {"CustomResourceDefinition/functions.functions.dev"},
		OperatorFile: {"Namespace/func-operator", "Deployment/func-operator"},
	}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("Split (-want +got):\n%s", diff)
	}
	if !strings.Contains(string(files[OperatorFile]), "# a comment before the first document") {
		t.Errorf("the comments of a document are lost:\n%s", files[OperatorFile])
	}
}

func TestSplit_Refused(t *testing.T) {
	crd := "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: a\n"
	deployment := func(image string) string {
		return "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n  template:\n    spec:\n      containers:\n      - image: " + image + "\n"
	}
	for name, stream := range map[string]string{
		"no CRD":                    deployment("example.com/x@" + digest),
		"only CRDs":                 crd,
		"no image":                  crd + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
		"an image by tag":           crd + deployment("example.com/x:v1"),
		"an image ko did not build": crd + deployment("ko://github.com/fnops/func-operator/cmd/func-operator"),
		"a short digest":            crd + deployment("example.com/x@sha256:0123"),
		"no kind":                   crd + "---\napiVersion: v1\nmetadata:\n  name: c\n",
		"not YAML":                  crd + "---\n: : :\n",
	} {
		if _, err := Split("v1.2.3", []byte(stream)); err == nil {
			t.Errorf("%s: Split succeeded, want an error", name)
		}
	}
}

// TestOnboarding reads the repository's own config/namespace/.
func TestOnboarding(t *testing.T) {
	files, err := Onboarding("v1.2.3", filepath.Join("..", "..", "config", "namespace"))
	if err != nil {
		t.Fatal(err)
	}
	for target, source := range map[string]string{OnboardingFile: "onboard.yaml", OnboardingKEDAFile: "onboard-keda.yaml"} {
		content := string(files[target])
		if !strings.HasPrefix(content, "# func-operator v1.2.3: onboards one namespace (config/namespace/"+source+")") ||
			!strings.Contains(content, "kubectl apply -n <namespace> -f "+target) {
			t.Errorf("%s:\n%s", target, content)
		}
		docs, err := documents(files[target])
		if err != nil || len(docs) == 0 {
			t.Errorf("%s: %d documents, %v", target, len(docs), err)
		}
	}

	dir := t.TempDir()
	for _, f := range []string{"onboard.yaml", "onboard-keda.yaml", "onboard-extra.yaml"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: a\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Onboarding("v1.2.3", dir); err == nil || !strings.Contains(err.Error(), "onboard-extra.yaml") {
		t.Errorf("a file of no release file: %v, want an error naming it", err)
	}
	if err := os.Remove(filepath.Join(dir, "onboard-extra.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "onboard.yaml"), []byte("apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: a\n  namespace: team-a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Onboarding("v1.2.3", dir); err == nil {
		t.Error("an object naming its namespace: no error")
	}
}

func TestImages(t *testing.T) {
	obj := map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
		"containers":     []any{map[string]any{"image": "b"}, map[string]any{"image": "a"}},
		"initContainers": []any{map[string]any{"image": "c"}},
	}}}, "data": map[string]any{"_example": "image: not-a-field"}}
	if diff := cmp.Diff([]string{"a", "b", "c"}, Images(obj)); diff != "" {
		t.Errorf("Images (-want +got):\n%s", diff)
	}
}

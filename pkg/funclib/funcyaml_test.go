package funclib

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	fn "knative.dev/func/pkg/functions"

	"github.com/fnops/func-operator/test/testfs"
)

// secretEnv is an environment variable of the test process that func.yaml fixtures
// reference with {{ env:... }}; its value must never show up in an error.
const (
	secretEnv   = "FUNCLIB_TEST_SECRET"
	secretValue = "hunter2/Sup3r-S3cret-Value"
)

// errKind is how LoadFuncYAML classified its error.
type errKind string

const (
	noError   errKind = ""
	invalid   errKind = "invalid"
	unsafe    errKind = "unsafe"
	otherKind errKind = "other"
)

func kindOf(err error) errKind {
	switch {
	case err == nil:
		return noError
	case IsUnsafe(err) && IsInvalid(err):
		return "both"
	case IsUnsafe(err):
		return unsafe
	case IsInvalid(err):
		return invalid
	default:
		return otherKind
	}
}

func TestLoadFuncYAML(t *testing.T) {
	t.Setenv(secretEnv, secretValue)
	if got := fn.LastSpecVersion(); got != "0.36.0" {
		t.Fatalf("func's LastSpecVersion is %s: update the specVersion of the fixtures below (written for 0.36.0)", got)
	}

	tests := []struct {
		name    string
		content string
		want    Metadata
		kind    errKind
		// wantMsg is the whole error message when set.
		wantMsg string
		// msgHas are substrings of the error message.
		msgHas []string
	}{{
		name: "current func.yaml",
		content: `
specVersion: 0.36.0
name: hello
runtime: go
registry: registry.example.com/alice
image: registry.example.com/alice/hello:latest
namespace: fns
created: 2024-11-05T10:12:13.123456+01:00
invoke: http
build:
  builder: pack
  buildpacks:
  - paketo-buildpacks/go
  buildEnvs:
  - name: BP_GO_TARGETS
    value: ./cmd/hello
run:
  envs:
  - name: GREETING
    value: hello
deploy:
  namespace: fns
  serviceAccountName: hello-runner
  labels:
  - key: team
    value: blue
  annotations:
    owner: alice
`,
		want: Metadata{
			Name: "hello", Runtime: "go", Invoke: "http", Builder: "pack",
			Image: "registry.example.com/alice/hello:latest", Registry: "registry.example.com/alice",
			Namespace: "fns", SpecVersion: "0.36.0",
			BuildEnvs: []string{"BP_GO_TARGETS=./cmd/hello"}, Buildpacks: []string{"paketo-buildpacks/go"},
			ServiceAccountName: "hello-runner",
		},
	}, {
		name: "cloudevent function built with s2i",
		content: `
specVersion: 0.36.0
name: echo
runtime: python
invoke: cloudevent
build:
  builder: s2i
`,
		want: Metadata{Name: "echo", Runtime: "python", Invoke: "cloudevent", Builder: "s2i", SpecVersion: "0.36.0"},
	}, {
		name:    "minimal func.yaml: defaults stay empty",
		content: "specVersion: 0.36.0\nname: tiny\nruntime: rust\n",
		want:    Metadata{Name: "tiny", Runtime: "rust", SpecVersion: "0.36.0"},
	}, {
		name:    "spec version newer than the func library's is kept as is",
		content: "specVersion: 4.1.0\nname: future\nruntime: node\n",
		want:    Metadata{Name: "future", Runtime: "node", SpecVersion: "4.1.0"},
	}, {
		name: "old format without specVersion is migrated",
		content: `
version: 0.19.0
name: legacy
runtime: node
namespace: legacy-ns
builder: pack
buildpacks:
- paketo-buildpacks/nodejs
envs:
- name: GREETING
  value: hello
labels:
- key: team
  value: blue
invocation:
  format: cloudevent
`,
		want: Metadata{Name: "legacy", Runtime: "node", Invoke: "cloudevent", Builder: "pack", Namespace: "legacy-ns", SpecVersion: "0.36.0",
			// As func's migration leaves them.
			BuilderImages: map[string]string{"pack": "pack"}, Buildpacks: []string{"paketo-buildpacks/nodejs"}},
	}, {
		name:    "secret and configMap templates are allowed",
		content: "specVersion: 0.36.0\nname: tmpl\nruntime: go\nrun:\n  envs:\n  - name: B\n    value: '{{ secret:foo:bar }}'\n  - name: C\n    value: '{{ configMap:x:y }}'\n  - value: '{{ secret:whole }}'\n",
		want:    Metadata{Name: "tmpl", Runtime: "go", SpecVersion: "0.36.0"},
	}, {
		name:    "build envs take no secret templates",
		content: "specVersion: 0.36.0\nname: tmpl\nruntime: go\nbuild:\n  buildEnvs:\n  - name: A\n    value: '{{ secret:foo:bar }}'\n",
		kind:    invalid,
		msgHas:  []string{"env entry #0 with name 'A' has invalid value field set"},
	}, {
		name:    "YAML syntax error",
		content: "name: hello\n  runtime: go\n",
		kind:    invalid,
		wantMsg: "func.yaml is not valid YAML: yaml: line 2: mapping values are not allowed in this context",
	}, {
		name:    "tab indentation",
		content: "name: hello\n\truntime: go\n",
		kind:    invalid,
		msgHas:  []string{"func.yaml is not valid YAML", "tab character"},
	}, {
		name:    "envs of the wrong type",
		content: "specVersion: 0.36.0\nname: hello\nruntime: go\nrun:\n  envs: 5\n",
		kind:    invalid,
		msgHas:  []string{"func.yaml cannot be decoded", "line 5", "cannot unmarshal !!int `5`"},
	}, {
		name:    "run of the wrong type",
		content: "specVersion: 0.36.0\nname: hello\nruntime: go\nrun: [1]\n",
		kind:    invalid,
		msgHas:  []string{"func.yaml cannot be decoded", "line 4", "cannot unmarshal !!seq"},
	}, {
		name:    "created that is not a time",
		content: "specVersion: 0.36.0\nname: hello\nruntime: go\ncreated: yesterday\n",
		kind:    invalid,
		msgHas:  []string{"func.yaml cannot be decoded", `"yesterday"`},
	}, {
		name:    "document that is a list",
		content: "- name: hello\n",
		kind:    invalid,
		msgHas:  []string{"func.yaml cannot be decoded", "cannot unmarshal !!seq into functions.Function"},
	}, {
		name:    "old format whose envs have the wrong type fails migration",
		content: "name: hello\nruntime: go\nenvs: 5\n",
		kind:    invalid,
		msgHas:  []string{"func.yaml cannot be loaded", "migrateToSpecsStructure", "cannot unmarshal !!int `5`"},
	}, {
		name:    "empty file",
		content: "",
		kind:    invalid,
		msgHas:  []string{"func.yaml cannot be loaded"},
	}, {
		name:    "specVersion that is not a semantic version",
		content: "specVersion: banana\nname: hello\nruntime: go\n",
		kind:    invalid,
		msgHas:  []string{"func.yaml cannot be loaded", "banana is not in dotted-tri format"},
	}, {
		name:    "specVersion written as a number",
		content: "specVersion: 0.36\nname: hello\nruntime: go\n",
		kind:    invalid,
		msgHas:  []string{"func.yaml cannot be loaded", "0.36 is not in dotted-tri format"},
	}, {
		name:    "missing name",
		content: "specVersion: 0.36.0\nruntime: go\n",
		kind:    invalid,
		wantMsg: "func.yaml has no name",
	}, {
		name:    "missing runtime",
		content: "specVersion: 0.36.0\nname: hello\n",
		kind:    invalid,
		wantMsg: "func.yaml has no runtime",
	}, {
		name:    "missing name and runtime",
		content: "specVersion: 0.36.0\ninvoke: http\n",
		kind:    invalid,
		wantMsg: "func.yaml has no name and no runtime",
	}, {
		name:    "invalid label key",
		content: "specVersion: 0.36.0\nname: hello\nruntime: go\ndeploy:\n  labels:\n  - key: 'bad key!'\n    value: v\n",
		kind:    invalid,
		msgHas:  []string{"'func.yaml' contains errors: label entry #0 has invalid key set: \"bad key!\""},
	}, {
		name:    "invalid env value template",
		content: "specVersion: 0.36.0\nname: hello\nruntime: go\nrun:\n  envs:\n  - name: A\n    value: '{{ bogus:x:y }}'\n",
		kind:    invalid,
		msgHas:  []string{"env entry #0 with name 'A' has invalid value field set"},
	}, {
		name:    "validation errors are folded onto one line",
		content: "specVersion: 0.36.0\nname: hello\nruntime: go\nrun:\n  envs:\n  - name: 'not valid'\n    value: x\ndeploy:\n  labels:\n  - value: v\n",
		kind:    invalid,
		msgHas:  []string{"'func.yaml' contains errors: env entry #0 has invalid name", "label entry #0 is missing key field"},
	}, {
		name:    "env template in run.envs",
		content: "specVersion: 0.36.0\nname: hello\nruntime: go\nrun:\n  envs:\n  - name: A\n    value: '{{ env:" + secretEnv + " }}'\n",
		kind:    unsafe,
		wantMsg: "func.yaml uses {{ env:... }} templates at run.envs[0].value: they would be resolved from the operator's own environment, so the operator refuses them; use {{ secret:... }} or {{ configMap:... }} instead",
	}, {
		name:    "env template in build.buildEnvs",
		content: "specVersion: 0.36.0\nname: hello\nruntime: go\nbuild:\n  buildEnvs:\n  - name: A\n    value: plain\n  - name: B\n    value: '{{env:" + secretEnv + "}}'\n",
		kind:    unsafe,
		msgHas:  []string{"templates at build.buildEnvs[1].value:"},
	}, {
		name:    "env template in deploy.labels, which func's validation would quote",
		content: "specVersion: 0.36.0\nname: hello\nruntime: go\ndeploy:\n  labels:\n  - key: k\n    value: '{{ env:" + secretEnv + " }}'\n",
		kind:    unsafe,
		msgHas:  []string{"templates at deploy.labels[0].value:"},
	}, {
		name:    "env template in deploy.annotations",
		content: "specVersion: 0.36.0\nname: hello\nruntime: go\ndeploy:\n  annotations:\n    foo: '{{ env:" + secretEnv + " }}'\n",
		kind:    unsafe,
		msgHas:  []string{"templates at deploy.annotations.foo:"},
	}, {
		name:    "env template with a space before the colon",
		content: "specVersion: 0.36.0\nname: hello\nruntime: go\nrun:\n  envs:\n  - name: A\n    value: '{{ env :" + secretEnv + " }}'\n",
		kind:    unsafe,
		msgHas:  []string{"templates at run.envs[0].value:"},
	}, {
		name:    "every env template is named",
		content: "specVersion: 0.36.0\nname: hello\nruntime: go\nrun:\n  envs:\n  - name: A\n    value: '{{ env:" + secretEnv + " }}'\ndeploy:\n  labels:\n  - key: k\n    value: '{{ env:" + secretEnv + " }}'\n",
		kind:    unsafe,
		msgHas:  []string{"templates at run.envs[0].value, deploy.labels[0].value:"},
	}, {
		name:    "env template in old-format envs",
		content: "name: hello\nruntime: go\nenvs:\n- name: A\n  value: '{{ env:" + secretEnv + " }}'\n",
		kind:    unsafe,
		msgHas:  []string{"templates at envs[0].value:"},
	}, {
		name:    "env template in an invalid func.yaml is still refused as unsafe",
		content: "specVersion: 0.36.0\nruntime: go\ndeploy:\n  labels:\n  - value: '{{ env:" + secretEnv + " }}'\n",
		kind:    unsafe,
		msgHas:  []string{"templates at deploy.labels[0].value:"},
	}, {
		name:    "env template hidden behind an anchor on a mapping key",
		content: "specVersion: 0.36.0\nname: hello\nruntime: go\n&tmpl '{{ env:" + secretEnv + " }}': ignored\ndeploy:\n  labels:\n  - key: k\n    value: *tmpl\n",
		kind:    unsafe,
		msgHas:  []string{"templates at deploy.labels[0].value:"},
	}, {
		name: "env template hidden in a !!binary scalar",
		content: "specVersion: 0.36.0\nname: hello\nruntime: go\ndeploy:\n  labels:\n  - key: k\n    value: !!binary " +
			base64.StdEncoding.EncodeToString([]byte("{{ env:"+secretEnv+" }}")) + "\n",
		kind:   unsafe,
		msgHas: []string{"templates at deploy.labels[0].value:"},
	}, {
		name:    "env template shared through a merge key",
		content: "specVersion: 0.36.0\nname: hello\nruntime: go\nx-label: &l\n  key: k\n  value: '{{ env:" + secretEnv + " }}'\ndeploy:\n  labels:\n  - <<: *l\n",
		kind:    unsafe,
		msgHas:  []string{"templates at x-label.value:"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			got, err := LoadFuncYAML([]byte(strings.TrimPrefix(tt.content, "\n")), tmp)

			if diff := cmp.Diff(tt.kind, kindOf(err)); diff != "" {
				t.Fatalf("error kind (-want +got):\n%s\nerror: %v", diff, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Metadata (-want +got):\n%s", diff)
			}
			if err != nil {
				msg := err.Error()
				if tt.wantMsg != "" {
					if diff := cmp.Diff(tt.wantMsg, msg); diff != "" {
						t.Errorf("error message (-want +got):\n%s", diff)
					}
				}
				for _, s := range tt.msgHas {
					if !strings.Contains(msg, s) {
						t.Errorf("error message %q does not contain %q", msg, s)
					}
				}
				if strings.Contains(msg, secretValue) {
					t.Errorf("error message reveals the value of $%s: %q", secretEnv, msg)
				}
				if strings.ContainsAny(msg, "\n\t") {
					t.Errorf("error message is not one line: %q", msg)
				}
				if strings.Contains(msg, tmp) {
					t.Errorf("error message names the scratch directory: %q", msg)
				}
			}
			testfs.AssertEmptyDir(t, tmp)
		})
	}
}

// TestLoadFuncYAML_SecretValueNeverQuoted checks the premise of the env template
// tests: func's own validation does quote the value of an environment variable
// that a label refers to, so refusing the template is what keeps it out.
func TestLoadFuncYAML_SecretValueNeverQuoted(t *testing.T) {
	t.Setenv(secretEnv, secretValue)
	value := "{{ env:" + secretEnv + " }}"
	labels := []fn.Label{{Key: ptr("k"), Value: &value}}
	if errs := fn.ValidateLabels(labels); !strings.Contains(strings.Join(errs, "\n"), secretValue) {
		t.Fatalf("func's ValidateLabels no longer quotes the value of the variable (%q); this test's premise is stale", errs)
	}

	content := "specVersion: 0.36.0\nname: hello\nruntime: go\ndeploy:\n  labels:\n  - key: k\n    value: '" + value + "'\n"
	_, err := LoadFuncYAML([]byte(content), t.TempDir())
	if !IsUnsafe(err) {
		t.Fatalf("LoadFuncYAML error = %v, want an UnsafeError", err)
	}
	if strings.Contains(err.Error(), secretValue) {
		t.Errorf("error message reveals the value of $%s: %q", secretEnv, err)
	}
}

func TestLoadFuncYAML_LeavesNothingBehind(t *testing.T) {
	// A function with a .gitignore and a .func directory of its own: the func library
	// writes both next to the func.yaml it loads, so they must land in a scratch copy.
	tmp := t.TempDir()
	for i := 0; i < 3; i++ {
		if _, err := LoadFuncYAML([]byte("specVersion: 0.36.0\nname: hello\nruntime: go\n"), tmp); err != nil {
			t.Fatalf("LoadFuncYAML: %v", err)
		}
		if _, err := LoadFuncYAML([]byte("specVersion: 0.36.0\nruntime: go\n"), tmp); !IsInvalid(err) {
			t.Fatalf("LoadFuncYAML error = %v, want an InvalidError", err)
		}
	}
	testfs.AssertEmptyDir(t, tmp)
}

func TestLoadFuncYAML_DefaultTmpDir(t *testing.T) {
	got, err := LoadFuncYAML([]byte("specVersion: 0.36.0\nname: hello\nruntime: go\n"), "")
	if err != nil {
		t.Fatalf("LoadFuncYAML: %v", err)
	}
	if diff := cmp.Diff(Metadata{Name: "hello", Runtime: "go", SpecVersion: "0.36.0"}, got); diff != "" {
		t.Errorf("Metadata (-want +got):\n%s", diff)
	}
}

func TestLoadFuncYAML_UnusableTmpDir(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "does-not-exist")
	_, err := LoadFuncYAML([]byte("specVersion: 0.36.0\nname: hello\nruntime: go\n"), missing)
	if err == nil {
		t.Fatal("LoadFuncYAML succeeded with a missing tmpDir")
	}
	// Not a problem of func.yaml: it must not be reported as one.
	if diff := cmp.Diff(otherKind, kindOf(err)); diff != "" {
		t.Errorf("error kind (-want +got):\n%s\nerror: %v", diff, err)
	}
	if !strings.Contains(err.Error(), "creating scratch directory for func.yaml") {
		t.Errorf("error %q does not say what failed", err)
	}
}

func TestIsInvalidIsUnsafe(t *testing.T) {
	inv := &InvalidError{msg: "bad"}
	uns := &UnsafeError{msg: "env"}
	tests := []struct {
		name        string
		err         error
		wantInvalid bool
		wantUnsafe  bool
	}{
		{"nil", nil, false, false},
		{"plain error", errors.New("boom"), false, false},
		{"invalid", inv, true, false},
		{"wrapped invalid", fmt.Errorf("reading: %w", inv), true, false},
		{"unsafe", uns, false, true},
		{"wrapped unsafe", fmt.Errorf("reading: %w", uns), false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := [2]bool{IsInvalid(tt.err), IsUnsafe(tt.err)}
			if diff := cmp.Diff([2]bool{tt.wantInvalid, tt.wantUnsafe}, got); diff != "" {
				t.Errorf("[IsInvalid, IsUnsafe] (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	// The version go.mod pins, which a test binary must report too.
	gomod, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatalf("reading go.mod: %v", err)
	}
	want := ""
	for _, line := range strings.Split(string(gomod), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == modulePath {
			want = f[1]
		}
	}
	if want == "" {
		t.Fatalf("go.mod does not require %s", modulePath)
	}
	if diff := cmp.Diff(want, Version()); diff != "" {
		t.Errorf("Version() (-want +got):\n%s", diff)
	}
}

func TestFuncYAMLName(t *testing.T) {
	if diff := cmp.Diff("func.yaml", FuncYAML); diff != "" {
		t.Errorf("FuncYAML (-want +got):\n%s", diff)
	}
}

func ptr(s string) *string { return &s }

package funcyaml

import (
	"encoding/base64"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	yamlv2 "gopkg.in/yaml.v2"
	"gopkg.in/yaml.v3"
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
			Namespace: "fns", DeployedNamespace: "fns", SpecVersion: "0.36.0",
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
		name:    "func deploy --management-disabled: the operator stands down",
		content: "specVersion: 0.36.0\nname: hands-off\nruntime: go\ndeploy:\n  managementDisabled: true\n",
		want:    Metadata{Name: "hands-off", Runtime: "go", SpecVersion: "0.36.0", ManagementDisabled: true},
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
		want: Metadata{Name: "legacy", Runtime: "node", Invoke: "cloudevent", Builder: "pack", Namespace: "legacy-ns", DeployedNamespace: "legacy-ns", SpecVersion: "0.36.0",
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
		// func v0.44.0's validation dereferences the missing name (found by FuzzLoadFuncYAML).
		name:    "build env with a value but no name",
		content: "specVersion: 0.36.0\nname: hello\nruntime: go\nbuild:\n  buildEnvs:\n  - name: A\n    value: a\n  - value: b\n",
		kind:    invalid,
		wantMsg: "func.yaml has a build env with a value but no name (build.buildEnvs[1])",
	}, {
		name:    "build env with a value but no name, in an old-format func.yaml",
		content: "name: hello\nruntime: go\nbuildEnvs:\n- value: '00'\n",
		kind:    invalid,
		wantMsg: "func.yaml has a build env with a value but no name (build.buildEnvs[0])",
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
		name:    "env template in a complex mapping key, which an anchor could lend to a field",
		content: "specVersion: 0.36.0\nname: hello\nruntime: go\n? {x: &e '{{ env:" + secretEnv + " }}'}\n: v\n",
		kind:    unsafe,
		msgHas:  []string{"templates at ?.x:"},
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

// hostileHeader makes a func.yaml that would load but for what follows it.
const hostileHeader = "specVersion: 0.36.0\nname: hostile\nruntime: go\n"

// What hostile func.yaml may cost LoadFuncYAML, at most: pkg/git hands it up to
// 1 MiB. The figures are for one call: the CPU it uses and TotalAlloc (all it allocates, garbage
// included), on 2 cores.
const (
	hostileMaxDuration = 2 * time.Second
	hostileMaxAlloc    = 48 << 20
)

// nested returns n opening strings, the innermost value and n closing ones.
func nested(open, inner, closing string, n int) string {
	return strings.Repeat(open, n) + inner + strings.Repeat(closing, n)
}

// billionLaughs anchors a list of nine "lol" and nine levels of lists of nine
// aliases of the level below: 9^10 (3.5 billion) nodes once expanded; the last
// level is the value of field (which ends in ": ").
func billionLaughs(field string) string {
	var b strings.Builder
	b.WriteString("l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i < 10; i++ {
		prev := "*l" + strconv.Itoa(i-1)
		fmt.Fprintf(&b, "l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(prev+", ", 9), ", "))
	}
	return b.String() + field + "*l9\n"
}

// aliasAmplification decodes to 380,000 nodes and more from 16 KB: a mapping of 100
// filters, aliased by 1,900 subscriptions. yaml.v2 refuses a document mostly made of
// alias expansions ("excessive aliasing"), but only by their share of what it decoded:
// the 5,000 build packs before them keep it under the ratio it allows.
func aliasAmplification() string {
	var b strings.Builder
	b.WriteString("build:\n  buildpacks: [" + strings.Repeat("a, ", 5000) + "a]\nfilters: &m {")
	for i := 0; i < 100; i++ {
		fmt.Fprintf(&b, "k%d: v, ", i)
	}
	b.WriteString("}\nsub: &s {source: s, filters: *m}\ndeploy:\n  subscriptions: [" + strings.Repeat("*s, ", 1900) + "*s]\n")
	return b.String()
}

// annotations returns n annotations with distinct keys.
func annotations(n int) string {
	var b strings.Builder
	b.WriteString("deploy:\n  annotations:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "    a%d: b\n", i)
	}
	return b.String()
}

// measureLoad calls LoadFuncYAML once and returns the CPU it used and how much it
// allocated (runtime.MemStats.TotalAlloc: garbage included). CPU, not wall time: the
// process's user and system time (RUSAGE_SELF: the garbage collector's work counts too;
// no test of the package runs in parallel), which a loaded machine does not stretch as
// it does the wall clock (make test runs the quick tier niced, beside builds: 31 ms of
// work took 4 s).
func measureLoad(content []byte, tmp string) (Metadata, time.Duration, uint64, error) {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := cpuTime()
	md, err := LoadFuncYAML(content, tmp)
	d := cpuTime() - start
	runtime.ReadMemStats(&after)
	return md, d, after.TotalAlloc - before.TotalAlloc, err
}

// cpuTime is the CPU the test process has used so far, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestLoadFuncYAML_Hostile feeds LoadFuncYAML func.yaml files of up to 1 MiB made to
// cost its YAML decoders time and memory. Each must be refused as invalid, quickly,
// with a message that says why. The comments give, for each, what LoadFuncYAML did
// before its limits (maxYAMLIndicators, maxYAMLNodes, maxYAMLDepth) and what it does
// with them; `go test -v -run TestLoadFuncYAML_Hostile` logs the figures.
func TestLoadFuncYAML_Hostile(t *testing.T) {
	const (
		tooManyChars = "func.yaml is too large a YAML structure: it has more than 40000 of the characters , - : ? [ { that YAML collections are made of"
		tooManyNodes = "func.yaml is too large a YAML structure: it has more than 10000 nodes, aliases expanded"
		tooDeep      = "func.yaml nests YAML collections more than 64 levels deep, aliases expanded"
	)
	tests := []struct {
		name    string
		content string
		wantMsg string
	}{
		// (a) Deep nesting.
		{
			// 200 KB. Before: 5 ms, 5 MiB, refused by yaml.v3 ("exceeded max depth of
			// 10000", the limit yaml.v2 has too). Now: 0.1 ms, under 0.1 MiB.
			name:    "100,000 nested flow sequences",
			content: hostileHeader + "x: " + nested("[", "", "]", 100000) + "\n",
			wantMsg: tooManyChars,
		}, {
			// Before: 5 ms, 5 MiB, refused by yaml.v3. Now: 0.1 ms, under 0.1 MiB.
			name:    "1 MiB of [",
			content: strings.Repeat("[", 1<<20),
			wantMsg: tooManyChars,
		}, {
			// 500 KB. Before: 9 ms, 7 MiB, refused by yaml.v3. Now: 0.1 ms, under 0.1 MiB.
			name:    "100,000 nested flow mappings",
			content: hostileHeader + "x: " + nested("{a: ", "b", "}", 100000) + "\n",
			wantMsg: tooManyChars,
		}, {
			// 18 KB, under the depth limit of the YAML libraries. Before: 90 ms,
			// 136 MiB, quadratic in the depth (the env template scan wrote the path of
			// every node), and it loaded. Now: 8 ms, 5 MiB.
			name:    "9,000 nested flow sequences",
			content: hostileHeader + "x: " + nested("[", "", "]", 9000) + "\n",
			wantMsg: tooDeep,
		}, {
			// 1 MiB. Before: 22 ms, 6 MiB, and it loaded. Now: 8 ms, 1 MiB.
			name: "1,400 nested block mappings",
			content: func() string {
				var b strings.Builder
				b.WriteString(hostileHeader + "x:\n")
				for i := 1; i < 1400; i++ {
					b.WriteString(strings.Repeat(" ", i) + "a:\n")
				}
				return b.String()
			}(),
			wantMsg: tooDeep,
		},
		// (b) Aliases.
		{
			// 0.6 KB. Before: 2.5 ms, 0.1 MiB, and it loaded: neither library expands it
			// (yaml.v3 parses into a yaml.Node, yaml.v2 skips fields it does not know).
			// Now: 0.1 ms, under 0.1 MiB.
			name:    "billion laughs in a field func does not know",
			content: hostileHeader + billionLaughs("bomb: "),
			wantMsg: tooManyNodes,
		}, {
			// Before: 0.5 ms, 0.2 MiB, refused by yaml.v2's decode into []string, which
			// stops at the first level ("cannot unmarshal !!seq into string"). Now: 0.2 ms.
			name:    "billion laughs in build.buildpacks",
			content: hostileHeader + billionLaughs("build:\n  buildpacks: "),
			wantMsg: tooManyNodes,
		}, {
			// Before: 0.2 ms, refused by yaml.v2 ("cannot unmarshal !!seq into string").
			// Now: 0.2 ms.
			name:    "billion laughs in deploy.annotations",
			content: hostileHeader + billionLaughs("deploy:\n  annotations:\n    a: "),
			wantMsg: tooManyNodes,
		}, {
			// Before: 2.5 ms, refused by a migration of the func library. Now: 0.2 ms.
			name:    "billion laughs in old-format envs",
			content: "name: hostile\nruntime: go\n" + billionLaughs("envs: "),
			wantMsg: tooManyNodes,
		}, {
			// 24 KB. Before: 140 ms, 62 MiB, and it loaded (each yaml.v2 decode of it
			// takes 30 MiB; an old-format func.yaml is decoded six times). Now: 3 ms,
			// 1.6 MiB.
			name:    "alias amplification yaml.v2 lets through",
			content: hostileHeader + aliasAmplification(),
			wantMsg: tooManyNodes,
		}, {
			// Before: 3 ms, and it loaded: yaml.v2 skips the field, yaml.v3 does not
			// expand aliases into a yaml.Node. Now: 0.1 ms.
			name:    "alias inside the node it refers to",
			content: hostileHeader + "x: &a [b, *a]\n",
			wantMsg: "func.yaml is not valid YAML: alias *a is inside the node it refers to",
		},
		// (c) Many entries.
		{
			// 1 MB. Before: 790 ms, 371 MiB, and it loaded. Now: 0.1 ms, under 0.1 MiB.
			name:    "500,000 build packs",
			content: hostileHeader + "build:\n  buildpacks: [" + strings.Repeat("a,", 500000) + "a]\n",
			wantMsg: tooManyChars,
		}, {
			// 1 MB. Before: 1.2 s, 484 MiB (the func library decodes an old-format
			// func.yaml six times to migrate it). Now: 0.3 ms, under 0.1 MiB.
			name:    "100,000 envs of an old-format func.yaml",
			content: "name: hostile\nruntime: go\nenvs:\n" + strings.Repeat("- name: A\n", 100000),
			wantMsg: tooManyChars,
		}, {
			// 1 MB. Before: 860 ms, 258 MiB, and an error message of 6 MB listing every
			// entry (none has a value). Now: 0.2 ms.
			name:    "100,000 run.envs",
			content: hostileHeader + "run: {envs: [" + strings.Repeat("{name: A},", 100000) + "]}\n",
			wantMsg: tooManyChars,
		}, {
			// 0.9 MB. Before: 520 ms, 182 MiB, and it loaded. Now: 0.2 ms.
			name:    "100,000 deploy.labels",
			content: hostileHeader + "deploy: {labels: [" + strings.Repeat("{key: k},", 100000) + "]}\n",
			wantMsg: tooManyChars,
		}, {
			// 1 MB. Before: 510 ms, 211 MiB, and an error message of 5 MB. Now: 0.3 ms.
			name:    "80,000 build.buildEnvs",
			content: hostileHeader + "build:\n  buildEnvs:\n" + strings.Repeat("  - name: A\n", 80000),
			wantMsg: tooManyChars,
		}, {
			// 1 MB. Before: 590 ms, 127 MiB, and it loaded. Now: 0.6 ms, under 0.1 MiB.
			name:    "75,000 deploy.annotations",
			content: hostileHeader + annotations(75000),
			wantMsg: tooManyChars,
		}, {
			// 80 KB, under maxYAMLIndicators: what yaml.v3 builds before the node count
			// refuses it is the most the limits let through. Before: 90 ms, 44 MiB, and
			// it loaded. Now: 31 ms, 17 MiB.
			name:    "40,000 keys of a flow mapping",
			content: hostileHeader + "x: {" + strings.Repeat("a,", 39990) + "a}\n",
			wantMsg: tooManyNodes,
		}, {
			// 40 KB. Every entry is invalid: the func library's message lists them all,
			// in 180 KB before. Now: 25 ms, 8 MiB, and a message cut at maxMessage.
			name:    "3,300 run.envs without a value",
			content: hostileHeader + "run:\n  envs:\n" + strings.Repeat("  - name: A\n", 3300),
			wantMsg: "'func.yaml' contains errors: env entry #0 is missing value field, only name 'A' is set",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if len(tt.content) > 1<<20 {
				t.Fatalf("the test's func.yaml is %d bytes, more than pkg/git passes on", len(tt.content))
			}
			tmp := t.TempDir()
			_, d, alloc, err := measureLoad([]byte(tt.content), tmp)
			t.Logf("%d bytes: %v, %.1f MiB allocated: %.100v", len(tt.content), d.Round(100*time.Microsecond), float64(alloc)/(1<<20), err)
			if !IsInvalid(err) {
				t.Fatalf("LoadFuncYAML error = %v, want an InvalidError", err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, tt.wantMsg) {
				t.Errorf("error message %q does not start with %q", msg, tt.wantMsg)
			}
			if len(msg) > maxMessage || strings.ContainsAny(msg, "\n\t") {
				t.Errorf("error message of %d bytes is longer than %d or not one line", len(msg), maxMessage)
			}
			if d > hostileMaxDuration {
				t.Errorf("LoadFuncYAML used %v of CPU, more than %v", d, hostileMaxDuration)
			}
			if alloc > hostileMaxAlloc {
				t.Errorf("LoadFuncYAML allocated %d MiB, more than %d", alloc>>20, hostileMaxAlloc>>20)
			}
			testfs.AssertEmptyDir(t, tmp)
		})
	}
}

// TestLoadFuncYAML_LargeButReasonable is the positive control of
// TestLoadFuncYAML_Hostile: func.yaml files far larger than func writes, yet within
// the limits, load.
func TestLoadFuncYAML_LargeButReasonable(t *testing.T) {
	envs := func(indent string, n int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "%s- name: VAR_%d\n%s  value: '{{ secret:s:key%d }}'\n", indent, i, indent, i)
		}
		return b.String()
	}
	current := `specVersion: 0.36.0
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
x-defaults: &defaults {cpu: 100m, memory: 128Mi}
deploy:
  namespace: fns
  labels:
  - key: team
    value: blue
  annotations:
    owner: alice
  options:
    resources:
      requests: *defaults
      limits: *defaults
`
	tests := []struct {
		name    string
		content string
		want    Metadata
	}{{
		// Now: 9 ms (the first load), 0.3 MiB.
		name:    "realistic func.yaml with an anchor",
		content: current,
		want: Metadata{Name: "hello", Runtime: "go", Invoke: "http", Builder: "pack", Image: "registry.example.com/alice/hello:latest",
			Registry: "registry.example.com/alice", Namespace: "fns", DeployedNamespace: "fns", SpecVersion: "0.36.0",
			BuildEnvs: []string{"BP_GO_TARGETS=./cmd/hello"}, Buildpacks: []string{"paketo-buildpacks/go"}},
	}, {
		// 80 KB, 1,500 envs, 7,500 nodes. Now: 18 ms, 5 MiB.
		name:    "1,500 run.envs",
		content: hostileHeader + "run:\n  envs:\n" + envs("  ", 1500),
		want:    Metadata{Name: "hostile", Runtime: "go", SpecVersion: "0.36.0"},
	}, {
		// 74 KB. Migrated: six yaml.v2 decodes. Now: 40 ms, 11 MiB.
		name:    "1,500 envs of an old-format func.yaml",
		content: "name: hostile\nruntime: go\nenvs:\n" + envs("", 1500),
		want:    Metadata{Name: "hostile", Runtime: "go", SpecVersion: "0.36.0"},
	}, {
		// A long value is no structure: 1 MiB of it. Now: 110 ms, 53 MiB, the most
		// any func.yaml here costs (the six decodes of the migration copy it).
		name:    "1 MiB value in an old-format func.yaml",
		content: "name: hostile\nruntime: go\nenvs:\n- name: A\n  value: '" + strings.Repeat("b", 1<<20-60) + "'\n",
		want:    Metadata{Name: "hostile", Runtime: "go", SpecVersion: "0.36.0"},
	}, {
		// 1 MiB of comments. Now: 55 ms, 8 MiB.
		name:    "1 MiB of comments",
		content: hostileHeader + strings.Repeat("# a comment of no consequence\n", (1<<20-60)/30),
		want:    Metadata{Name: "hostile", Runtime: "go", SpecVersion: "0.36.0"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if len(tt.content) > 1<<20 {
				t.Fatalf("the test's func.yaml is %d bytes, more than pkg/git passes on", len(tt.content))
			}
			tmp := t.TempDir()
			got, d, alloc, err := measureLoad([]byte(tt.content), tmp)
			t.Logf("%d bytes: %v, %.1f MiB allocated", len(tt.content), d.Round(100*time.Microsecond), float64(alloc)/(1<<20))
			if err != nil {
				t.Fatalf("LoadFuncYAML: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Metadata (-want +got):\n%s", diff)
			}
			if d > hostileMaxDuration || alloc > 2*hostileMaxAlloc {
				t.Errorf("LoadFuncYAML used %v of CPU and %d MiB, more than %v and %d MiB", d, alloc>>20, hostileMaxDuration, 2*hostileMaxAlloc>>20)
			}
			testfs.AssertEmptyDir(t, tmp)
		})
	}
}

// TestLoadFuncYAML_HostileTemplates: env templates under a long key, many times over,
// are named in a message of bounded length, at a cost linear in the file. Before,
// the scan wrote the path of every node, and named every match in full: for this
// 600 KB func.yaml, 3,000 paths of 500 KB, 21 s and 7.2 GB. Now: 19 ms, 5 MiB.
func TestLoadFuncYAML_HostileTemplates(t *testing.T) {
	t.Setenv(secretEnv, secretValue)
	key := strings.Repeat("k", 500000)
	content := hostileHeader + "? '" + key + "'\n: [" + strings.Repeat("'{{ env:"+secretEnv+" }}', ", 3000) + "]\n"
	tmp := t.TempDir()
	_, d, alloc, err := measureLoad([]byte(content), tmp)
	t.Logf("%d bytes: %v, %.1f MiB allocated", len(content), d.Round(100*time.Microsecond), float64(alloc)/(1<<20))
	if !IsUnsafe(err) {
		t.Fatalf("LoadFuncYAML error = %v, want an UnsafeError", err)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "func.yaml uses {{ env:... }} templates at kkkk") || !strings.Contains(msg, "... and 2990 more: they would be resolved") {
		t.Errorf("error message %q does not name 10 shortened paths and the number of the others", msg)
	}
	if len(msg) > 2000 || strings.Contains(msg, secretValue) {
		t.Errorf("error message of %d bytes is too long or reveals $%s", len(msg), secretEnv)
	}
	if d > hostileMaxDuration || alloc > hostileMaxAlloc {
		t.Errorf("LoadFuncYAML used %v of CPU and %d MiB, more than %v and %d MiB", d, alloc>>20, hostileMaxDuration, hostileMaxAlloc>>20)
	}
	testfs.AssertEmptyDir(t, tmp)
}

// TestYAMLLibrariesAndAliases pins what the limits rely on and why they count
// aliases themselves: yaml.v3 does not expand aliases into a yaml.Node (which is how
// LoadFuncYAML parses first), and yaml.v2 refuses an alias bomb only by the share of
// aliases in what it decoded.
func TestYAMLLibrariesAndAliases(t *testing.T) {
	bomb := hostileHeader + billionLaughs("bomb: ")
	var node yaml.Node
	if err := yaml.Unmarshal([]byte(bomb), &node); err != nil {
		t.Errorf("yaml.v3 into a yaml.Node: %v, want no error (no expansion)", err)
	}
	var anyV3 any
	if err := yaml.Unmarshal([]byte(bomb), &anyV3); err == nil || !strings.Contains(err.Error(), "excessive aliasing") {
		t.Errorf("yaml.v3 into an interface: %v, want excessive aliasing", err)
	}
	var anyV2 any
	if err := yamlv2.Unmarshal([]byte(bomb), &anyV2); err == nil || !strings.Contains(err.Error(), "excessive aliasing") {
		t.Errorf("yaml.v2 into an interface: %v, want excessive aliasing", err)
	}
	var f fn.Function
	if err := yamlv2.Unmarshal([]byte(hostileHeader+aliasAmplification()), &f); err != nil || len(f.Deploy.Subscriptions) != 1901 {
		t.Errorf("yaml.v2 into a Function: %v, %d subscriptions, want the 1,901 of the amplification without error", err, len(f.Deploy.Subscriptions))
	}
	// The limits, as the messages say them.
	if maxYAMLIndicators != 40000 || maxYAMLNodes != 10000 || maxYAMLDepth != 64 {
		t.Errorf("the limits changed: update the messages TestLoadFuncYAML_Hostile expects, and its figures")
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

func TestFuncYAMLName(t *testing.T) {
	if diff := cmp.Diff("func.yaml", FuncYAML); diff != "" {
		t.Errorf("FuncYAML (-want +got):\n%s", diff)
	}
}

func ptr(s string) *string { return &s }

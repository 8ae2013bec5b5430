package funcyaml

import (
	"encoding/base64"
	"os"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// The fuzz targets set this variable in their process, and seed func.yaml files that
// refer to it with {{ env:... }}: its value must never come out of LoadFuncYAML.
const (
	fuzzSecretEnv   = "FUNC_OPERATOR_FUZZ_SECRET"
	fuzzSecretValue = "s3cr3t-sentinel"
)

// funcYAMLSeeds are realistic func.yaml files, env templates the way they may hide,
// and nasty YAML: the corpus both fuzz targets start from, run by every `go test`.
func funcYAMLSeeds() []string {
	tmpl := "{{ env:" + fuzzSecretEnv + " }}"
	return []string{
		// Realistic.
		"specVersion: 0.36.0\nname: hello\nruntime: go\nregistry: registry.example.com/alice\nimage: registry.example.com/alice/hello:latest\n" +
			"namespace: fns\ncreated: 2024-11-05T10:12:13.123456+01:00\ninvoke: http\nbuild:\n  builder: pack\n  buildpacks:\n  - paketo-buildpacks/go\n" +
			"  buildEnvs:\n  - name: BP_GO_TARGETS\n    value: ./cmd/hello\nrun:\n  envs:\n  - name: GREETING\n    value: hello\n" +
			"deploy:\n  namespace: fns\n  serviceAccountName: hello-runner\n  labels:\n  - key: team\n    value: blue\n  annotations:\n    owner: alice\n",
		"specVersion: 0.36.0\nname: echo\nruntime: python\ninvoke: cloudevent\nbuild:\n  builder: s2i\n",
		"specVersion: 0.36.0\nname: tiny\nruntime: rust\n",
		"specVersion: 4.1.0\nname: future\nruntime: node\n",
		"version: 0.19.0\nname: legacy\nruntime: node\nnamespace: legacy-ns\nbuilder: pack\nbuildpacks:\n- paketo-buildpacks/nodejs\n" +
			"envs:\n- name: GREETING\n  value: hello\nlabels:\n- key: team\n  value: blue\ninvocation:\n  format: cloudevent\n",
		"specVersion: 0.36.0\nname: tmpl\nruntime: go\nrun:\n  envs:\n  - name: B\n    value: '{{ secret:foo:bar }}'\n  - name: C\n    value: '{{ configMap:x:y }}'\n  - value: '{{ secret:whole }}'\n",
		"specVersion: 0.36.0\nname: subs\nruntime: go\ndeploy:\n  subscriptions:\n  - source: default\n    filters:\n      type: com.example\n" +
			"  options:\n    scale:\n      min: 1\n      max: 3\n    resources:\n      limits:\n        cpu: 500m\n  healthEndpoints:\n    liveness: /health\n",
		// Env templates, plain and hidden.
		"specVersion: 0.36.0\nname: hello\nruntime: go\nrun:\n  envs:\n  - name: A\n    value: '" + tmpl + "'\n",
		"specVersion: 0.36.0\nname: hello\nruntime: go\nbuild:\n  buildEnvs:\n  - name: A\n    value: '{{env:" + fuzzSecretEnv + "}}'\n",
		"specVersion: 0.36.0\nname: hello\nruntime: go\ndeploy:\n  labels:\n  - key: k\n    value: '" + tmpl + "'\n",
		"specVersion: 0.36.0\nname: hello\nruntime: go\ndeploy:\n  annotations:\n    foo: '" + tmpl + "'\n",
		"specVersion: 0.36.0\nname: hello\nruntime: go\nrun:\n  envs:\n  - value: '{{ env :" + fuzzSecretEnv + " }}'\n",
		"name: hello\nruntime: go\nenvs:\n- name: A\n  value: '" + tmpl + "'\n",
		"specVersion: 0.36.0\nname: hello\nruntime: go\n&t '" + tmpl + "': x\ndeploy:\n  labels:\n  - key: k\n    value: *t\n",
		"specVersion: 0.36.0\nname: hello\nruntime: go\ndeploy:\n  labels:\n  - key: k\n    value: !!binary " + base64.StdEncoding.EncodeToString([]byte(tmpl)) + "\n",
		"specVersion: 0.36.0\nname: hello\nruntime: go\nx: &l\n  key: k\n  value: '" + tmpl + "'\ndeploy:\n  labels:\n  - <<: *l\n",
		"specVersion: 0.36.0\nname: hello\nruntime: go\ndeploy:\n  labels:\n  - key: '" + tmpl + "'\n    value: v\n",
		"specVersion: 0.36.0\nname: '" + tmpl + "'\nruntime: go\n",
		"specVersion: 0.36.0\nname: hello\nruntime: go\nrun:\n  envs:\n  - name: A\n    value: \"{{ \\x65nv:" + fuzzSecretEnv + " }}\"\n",
		"specVersion: 0.36.0\nname: hello\nruntime: go\nrun:\n  envs:\n  - name: A\n    value: |\n      {{ env:" + fuzzSecretEnv + " }}\n",
		"specVersion: 0.36.0\nname: hello\nruntime: go\n? '" + tmpl + "'\n: [a, '" + tmpl + "']\n",
		// Invalid, odd and hostile.
		"",
		"~",
		"null",
		"[]",
		"{}",
		"- name: hello\n",
		"name: hello\n  runtime: go\n",
		"name: hello\n\truntime: go\n",
		"specVersion: 0.36.0\nname: hello\nruntime: go\nrun:\n  envs: 5\n",
		"specVersion: banana\nname: hello\nruntime: go\n",
		"specVersion: 0.36\nname: hello\nruntime: go\n",
		"specVersion: 1e999\nname: hello\nruntime: go\n",
		"specVersion: 0.36.0-rc.1+build\nname: hello\nruntime: go\n",
		"specVersion: 0.36.0\nname: hello\nruntime: go\ncreated: yesterday\n",
		"specVersion: 0.36.0\nname: \"he\\nllo\"\nruntime: \"\\x00\"\n",
		"\ufeffspecVersion: 0.36.0\nname: bom\nruntime: go\n",
		"specVersion: 0.36.0\nname: \xff\xfe\nruntime: go\n",
		"---\nspecVersion: 0.36.0\nname: a\nruntime: go\n---\nname: b\n",
		"specVersion: 0.36.0\nname: !!python/object:os.system x\nruntime: !!map {}\n",
		"specVersion: 0.36.0\nname: hello\nruntime: go\n? [complex, key]\n: value\n",
		"specVersion: 0.36.0\nname: hello\nruntime: go\nx: &a [b, *a]\n",
		"specVersion: 0.36.0\nname: hello\nruntime: go\nx: *undefined\n",
		"a: &a {b: &b [*a]}\n",
		"specVersion: 0.36.0\nname: hello\nruntime: go\nbuild: &b {builder: pack}\ndeploy: {<<: [*b, *b]}\n",
		hostileHeader + billionLaughs("bomb: "),
		hostileHeader + "x: " + nested("[", "", "]", 100) + "\n",
		hostileHeader + "x: {" + strings.Repeat("a,", 200) + "a}\n",
		"specVersion: 0.36.0\nname: hello\nruntime: go\ndeploy:\n  labels:\n" + strings.Repeat("  - key: k\n    value: '"+tmpl+"'\n", 12),
	}
}

func FuzzLoadFuncYAML(f *testing.F) {
	f.Setenv(fuzzSecretEnv, fuzzSecretValue)
	for _, s := range funcYAMLSeeds() {
		f.Add([]byte(s))
	}
	// One scratch directory for all the inputs: LoadFuncYAML must leave it empty.
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, content []byte) {
		md, err := LoadFuncYAML(content, dir)
		if entries, rerr := os.ReadDir(dir); rerr != nil || len(entries) > 0 {
			t.Fatalf("LoadFuncYAML left %d entries in its tmpDir (%v)", len(entries), rerr)
		}
		quotesSecret := strings.Contains(string(content), fuzzSecretValue)
		if err != nil {
			if IsInvalid(err) == IsUnsafe(err) {
				t.Fatalf("error %T %q is not exactly one of InvalidError and UnsafeError", err, err)
			}
			if !reflect.DeepEqual(md, Metadata{}) {
				t.Errorf("LoadFuncYAML returned Metadata %+v with its error", md)
			}
			msg := err.Error()
			if !quotesSecret && strings.Contains(msg, fuzzSecretValue) {
				t.Fatalf("error message reveals the value of $%s: %q", fuzzSecretEnv, msg)
			}
			if strings.ContainsAny(msg, "\n\t") || len(msg) > maxMessage {
				t.Errorf("error message of %d bytes is not one line of at most %d bytes: %q", len(msg), maxMessage, msg)
			}
			if strings.Contains(msg, dir) {
				t.Errorf("error message names the scratch directory: %q", msg)
			}
			return
		}
		if md.Name == "" || md.Runtime == "" {
			t.Errorf("LoadFuncYAML succeeded with no name or no runtime: %+v", md)
		}
		if !quotesSecret && strings.Contains(fmtMetadata(md), fuzzSecretValue) {
			t.Errorf("Metadata reveals the value of $%s: %+v", fuzzSecretEnv, md)
		}
		// What loads is within the limits (TestLoadFuncYAML_Hostile measures the cost).
		var doc yaml.Node
		if err := yaml.Unmarshal(content, &doc); err != nil {
			t.Fatalf("LoadFuncYAML loaded what yaml.v3 cannot parse: %v", err)
		}
		if s := naiveShape(&doc); s.nodes > maxYAMLNodes || s.depth > maxYAMLDepth || s.cycle {
			t.Errorf("LoadFuncYAML loaded a document of %+v, beyond its limits", s)
		}
		if len(templatedValues(&doc)) > 0 {
			t.Errorf("LoadFuncYAML loaded a document with an env template")
		}
	})
}

func FuzzCheckNoLocalEnv(f *testing.F) {
	f.Setenv(fuzzSecretEnv, fuzzSecretValue)
	for _, s := range funcYAMLSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, content []byte) {
		err := checkNoLocalEnv(content)
		var doc yaml.Node
		parseErr := yaml.Unmarshal(content, &doc)
		s := naiveShape(&doc)
		withinLimits := yamlIndicators(content) <= maxYAMLIndicators && parseErr == nil &&
			s.nodes <= maxYAMLNodes && s.depth <= maxYAMLDepth && !s.cycle
		templated := templatedValues(&doc)

		switch {
		case err == nil:
			if !withinLimits {
				t.Fatalf("checkNoLocalEnv accepted a document beyond its limits: %d indicators, %+v, parse error %v",
					yamlIndicators(content), s, parseErr)
			}
			if len(templated) > 0 {
				t.Fatalf("checkNoLocalEnv missed env templates at %v", templated)
			}
		case IsUnsafe(err):
			if len(templated) == 0 {
				t.Errorf("checkNoLocalEnv refused as unsafe a document without env templates: %v", err)
			}
			if !withinLimits {
				t.Errorf("checkNoLocalEnv scanned a document beyond its limits: %+v", s)
			}
		case IsInvalid(err):
			if withinLimits {
				t.Errorf("checkNoLocalEnv refused a document within its limits as invalid: %v", err)
			}
		default:
			t.Fatalf("error %T %q is neither an InvalidError nor an UnsafeError", err, err)
		}
		if err != nil {
			msg := err.Error()
			if !strings.Contains(string(content), fuzzSecretValue) && strings.Contains(msg, fuzzSecretValue) {
				t.Fatalf("error message reveals the value of $%s: %q", fuzzSecretEnv, msg)
			}
			if strings.ContainsAny(msg, "\n\t") || len(msg) > maxMessage || !utf8.ValidString(msg) && utf8.Valid(content) {
				t.Errorf("error message of %d bytes is not one line of valid text of at most %d bytes: %q", len(msg), maxMessage, msg)
			}
		}
	})
}

// naive is the shape of a document found by expanding every alias, for comparison
// with checkShape. It stops counting past the limits.
type naive struct {
	nodes, depth int
	cycle        bool
}

func naiveShape(doc *yaml.Node) naive {
	var s naive
	open := map[*yaml.Node]bool{}
	var walk func(n *yaml.Node, level int)
	walk = func(n *yaml.Node, level int) {
		if s.nodes > maxYAMLNodes || s.depth > maxYAMLDepth || s.cycle {
			return
		}
		if n.Kind == yaml.AliasNode {
			if n.Alias == nil || open[n.Alias] {
				s.cycle = true
				return
			}
			walk(n.Alias, level)
			return
		}
		s.nodes++
		s.depth = max(s.depth, level)
		open[n] = true
		for _, c := range n.Content {
			walk(c, level+1)
		}
		delete(open, n)
	}
	walk(doc, 0)
	return s
}

// templatedValues returns the line numbers of the scalars, other than mapping keys,
// whose text as written holds an env template.
func templatedValues(doc *yaml.Node) []int {
	var lines []int
	var walk func(n *yaml.Node, key bool)
	walk = func(n *yaml.Node, key bool) {
		switch n.Kind {
		case yaml.ScalarNode:
			if !key && localEnvTemplate.MatchString(n.Value) {
				lines = append(lines, n.Line)
			}
		case yaml.MappingNode:
			for i, c := range n.Content {
				walk(c, i%2 == 0)
			}
		case yaml.DocumentNode, yaml.SequenceNode:
			for _, c := range n.Content {
				walk(c, false)
			}
		}
	}
	walk(doc, false)
	return lines
}

// fmtMetadata is every string of md, for a search.
func fmtMetadata(md Metadata) string {
	parts := make([]string, 0, 9+len(md.BuildEnvs)+len(md.Buildpacks)+2*len(md.BuilderImages))
	parts = append(parts, md.Name, md.Runtime, md.Invoke, md.Builder, md.Image, md.Registry, md.Namespace, md.SpecVersion, md.ServiceAccountName)
	parts = append(parts, md.BuildEnvs...)
	parts = append(parts, md.Buildpacks...)
	for k, v := range md.BuilderImages {
		parts = append(parts, k, v)
	}
	return strings.Join(parts, "\x00")
}

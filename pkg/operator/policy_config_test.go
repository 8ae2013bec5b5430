package operator

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/test/envtest"
)

// configPolicyCase is data written to the operator's ConfigMap. Whether the API
// server, with config/390-config-policy.yaml, admits it must be what
// config.FromConfigMap says of the same data.
type configPolicyCase struct {
	data map[string]string
	// laxer: the policy admits it though the operator refuses it; CEL cannot say
	// the operator's rule exactly, and the InvalidConfig Event tells
	// (docs/configuration.md, "Checked at admission").
	laxer bool
	// evalError: refused by an error of the policy's evaluation (a number past int64,
	// a duration past 290 years), whose message names no key.
	evalError bool
}

const sha256Hex = "4c1ef3b1d5ad5c5b8f3a2f3e1e0c8e7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e"

// configPolicyCases are, for every key of config.Keys, valid, boundary and invalid
// values, and the cases of several keys.
var configPolicyCases = func() []configPolicyCase {
	values := map[string][]string{
		config.KeyCheckInterval: {"5m", "10s", "9s", "9.999s", "10000ms", "9999999us", "10000000µs", "10000000μs",
			"1h30m", ".5h", "1.m", "+20s", "1d", "-1s", "0s", "0", " 5m", "5m ", "5", "", "1e3s", "5M", "1h 30m", "s", ".s"},
		config.KeyGitTimeout:      {"60s", "1s", "999ms", "1000000000ns", "-5s", "a minute"},
		config.KeyRegistryTimeout: {"60s", "1s", "0.999s", "2h"},
		config.KeyBuildBackoff:    {"1m", "1s", "0.5s", "59m", "1h", "61m", "2h"},
		config.KeyBuildBackoffMax: {"1h", "2h", "1m", "59s", "1s", "0s", "1h0m0s"},
		config.KeyBuildTimeout:    {"1h", "10s", "9.999s", "24h"},
		config.KeyOutageGrace:     {"30m", "0", "0s", "-0s", "+0", "-1s", "-1ns", "1ns", "1y"},
		config.KeyAutoUpdateMiddleware: {"true", "false", "True", "TRUE", "t", "T", "1", "0", "f", "F", "FALSE", "False",
			" true\n", "\tfalse ", "yes", "on", "tRue", "", "2"},
		config.KeyUnknownMiddlewarePolicy: {"Outdated", "UpToDate", " UpToDate\n", "outdated", "uptodate", "Unknown", ""},
		config.KeyRebuildCommit:           {"Deployed", "DeployedOnly", "Followed", " Followed ", "deployed", "Latest", ""},
		config.KeyDeployOnCommit:          {"true", "false", " True\n", "0", "yes", "on", ""},
		config.KeyMinSourceBuildInterval:  {"2m", "0s", "0", "-1s", "1h30m", "1d", "soon"},
		config.KeyMaxConcurrentBuilds: {"2", "0", "+3", "-0", " 7 ", "100000", "9223372036854775807",
			"-1", "1.5", "two", "", "1_000", "0x10", "2 3"},
		config.KeyMaxConcurrentBuildsPerNamespace: {"50%", "1", "+3", " 2 ", "100%", "1%", "050%", "100", "9223372036854775807",
			"0", "-0", "-1", "0%", "101%", "+5%", "-5%", "5 %", "%", "half", "1.5", "", "1_000", "50%%"},
		config.KeyCloneMaxFiles:            {"100000", "100", "10000000", "99", "10000001", "1e3", "+100", "100k", ""},
		config.KeyConditionMessageMaxBytes: {"1024", "128", "32768", "127", "32769", "-128", "1Ki"},
		config.KeyEventMessageMaxBytes:     {"1024", "128", "32768", "127", "32769"},
		config.KeyBuildLogLines:            {"20", "0", "1000", "-1", "1001", "-0", " 5\n"},
		config.KeyCloneMaxBytes: {"100Mi", "1Mi", "1Ti", "1048576", "1048575.5", "1048575", "1e9", "1G", " 8Mi ",
			"1099511627776", "1099511627776.5", "1099511627777", "2Ti", "-1Mi", "lots", "100MB", "", "1Mi ", "0.5Gi",
			"18446744073711648768", "1E30", "8Ei"},
		config.KeyCloneMaxObjectBytes: {"32Mi", "1Gi", "1025Mi", "1023Ki", "1Mi"},
		config.KeyCommitStoreMaxBytes: {"64Mi", "512Mi", "513Mi", "1Gi", "536870912", "536870913", "1048576", "1048575", "1023Ki", "1Mi",
			"0", "-1Mi", "0.5Gi", "0.5001Gi"},
		config.KeyInspectMaxMemory: {"16Mi", "256Mi", "257Mi", "268435456", "268435457", "1Mi", "1048575"},
		config.KeyInspectMaxBytes:  {"4Gi", "1Ti", "2Ti", "1Mi", "100m"},
		config.KeyPipelineServiceAccount: {"func-operator-builder", "builder.v2", " sa ", "a", strings.Repeat("a", 253),
			"default", " default", "Builder", "sa_1", "", "-sa", "sa-", "sa..b", strings.Repeat("a", 254)},
		config.KeyDeployerImage: {"ghcr.io/knative/func-utils:v1", "ghcr.io/knative/func-utils@sha256:" + sha256Hex,
			"ghcr.io/knative/func-utils:v1@sha256:" + sha256Hex, "func-utils", "func-utils:latest", "library/x",
			"localhost:5000/x:y", "localhost/x", "registry.example/a/b/c:tag", "[::1]:5000/repo", "127.0.0.1:5000/a/b",
			"Registry.Example/x", "a.b$c/x", "host:/x", "ghcr.io//x", " ghcr.io/x:v1 ",
			"", "UPPER/case", "ghcr.io/Upper", "ghcr.io/x:", "ghcr.io/x@sha256:abc", "ghcr.io/x@sha512:" + sha256Hex,
			"ghcr.io/x@sha256:" + strings.ToUpper(sha256Hex), "a", "ghcr.io/x:bad tag", "host:port/x", "user@ghcr.io/x",
			"ghcr.io/x:" + strings.Repeat("t", 129), "ghcr.io/x:" + strings.Repeat("t", 128), "ghcr.io/x@@sha256:" + sha256Hex,
			"ghcr.io/x:a:b", "gh cr.io/x", "ghcr.io/x y", "ghcr.io%2f/x", "ghcr.io?/x", "[::1/x", "[zz:]/xy", "[::1]/xy", "[::1]:/xy", "[::1]x/yz", "[fe80::1%25eth0]/xy"},
		config.KeyGitCloneImage:                  {"", "  ", "ghcr.io/tektoncd-catalog/git-clone:v1.1.0", "not an image", "ghcr.io/x:"},
		config.KeyBuilderImagePrefix + "pack.go": {"ghcr.io/knative/builder-jammy-tiny:latest", "", "ghcr.io/x:bad tag"},
		config.KeyHostAllow: {"", "github.com, *.example.com", "10.0.0.0/8\n192.168.0.0/16 # lan\n", "[::1]:6443",
			"fd00::/8", "::ffff:10.0.0.0/104", "10.0.0.1:443", "10.0.0.1:0443", "fe80::1%eth0", "999.1.1.1", "host.example.",
			"Host.Example", "a\tb", "# only a comment", ",,\n,", "0.0.0.0/0", "::/0", "10.0.0.1:65535",
			"10.0.0.0/33", "10.0.0.0/08", "10.0.0.0/", "01.2.3.4/8", "*", "*.*.example.com", "a b", "*.", ".", "*..",
			"example.com/path", "host:80", "10.0.0.1:99999", "10.0.0.1:65536", "[10.0.0.1]:80", "[fd00::1]",
			"gggg::1", "[::g]:80", "::1/129", "fe80::1%eth0/64", "ok.example, bad host", "a*b", "[a]"},
		config.KeyHostDeny: {"", "10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, fc00::/7", "*.internal", "10.0.0.0/33, ok.example"},
		config.KeyBashImage: {"", " ", "docker.io/library/bash:5.1", "docker.io/library/bash@sha256:" + sha256Hex,
			"docker.io/library/bash@sha256:abc", "bash 5.1"},
		config.KeyEventSink: {"", " ", "https://events.example.com/hooks/func", " http://broker-ingress.knative-eventing.svc.cluster.local/team-a/default\n",
			"http://10.0.0.1:8080", "http://h:1", "http://h:65535/", "broker:team-a/default", "broker:" + strings.Repeat("a", 63) + "/b",
			"https://user:token@events.example.com/", "https://events.example.com/?token=abc", "https://e.example.com/#x", "ftp://e.example.com/",
			"events.example.com", "https://Events.Example.com/", "http://[::1]:8080/", "http://h:0/", "http://h:65536/", "http://h:080/",
			"http://h/a%20b", "http:///path", "broker:default", "broker:Team/default", "broker:team-a/default/x", "broker:" + strings.Repeat("a", 64) + "/b",
			"broker:-a/b", "https://e.example.com/a b"},
		config.KeyEventSinkPrefix + "team-a": {"", "https://a.example.com/", "broker:team-a/default", "nowhere", "https://u:p@a.example.com/"},
		config.KeyEventQueueSize:             {"1000", "1", "20000", " 5 ", "0", "20001", "100000", "-1", "many", ""},
		config.KeyEventTimeout:               {"5s", "1s", "999ms", "1m", "0s", "-1s", "5", "soon"},
		config.KeyBaseUpdates:                {"Off", "Report", "Rebase", " RebaseAndRebuild\n", "rebase", "Always", ""},
		config.KeyBaseCheckInterval:          {"10m", "1m", "59s", "1h", " 5m", "soon"},
		config.KeyRebaseTimeout:              {"10m", "10s", "9s", "1h", "5m ", "never"},
		config.KeyMaintenanceWindowCauses:    {"Base", "Base, Middleware", "Middleware", "", "Source", "base"},
		config.KeyBaseImageMirrors:           {"", "docker.io/paketobuildpacks=127.0.0.1:5000/paketo", "docker.io/paketobuildpacks=127.0.0.1:5000/paketo, gcr.io=127.0.0.1:5000/gcr"},
		config.KeyMaintenanceWindow:          {"", "Sat 02:00-06:00", "Sat,Sun 02:00-06:00; Wed 22:00-02:00", "Mon-Fri 22:00-06:00"},
		config.KeyBuildahImage: {"", "quay.io/buildah/stable:v1.31.0", "quay.io/buildah/stable:v1.31.0@sha256:" + sha256Hex,
			"quay.io/buildah/stable@sha512:" + sha256Hex, "quay.io/buildah/stable:"},
	}
	var cases []configPolicyCase
	for k, vs := range values {
		for _, v := range vs {
			cases = append(cases, configPolicyCase{data: map[string]string{k: v}})
		}
	}
	cases = append(cases,
		// Numbers and durations past what Go holds: refused by an evaluation error.
		configPolicyCase{data: map[string]string{config.KeyCheckInterval: "2562048h"}, evalError: true},
		configPolicyCase{data: map[string]string{config.KeyMaxConcurrentBuilds: "9223372036854775808"}, evalError: true},
		configPolicyCase{data: map[string]string{config.KeyCloneMaxFiles: "99999999999999999999"}, evalError: true},
		configPolicyCase{data: map[string]string{config.KeyMaxConcurrentBuildsPerNamespace: "9223372036854775808"}, evalError: true},
		configPolicyCase{data: map[string]string{config.KeyMaxConcurrentBuildsPerNamespace: "9223372036854775808%"}, evalError: true},
		// Mirrors and maintenance windows are parsed by the operator only: left to the Event.
		configPolicyCase{data: map[string]string{config.KeyBaseImageMirrors: "docker.io"}, laxer: true},
		configPolicyCase{data: map[string]string{config.KeyBaseImageMirrors: "docker.io/x=bad mirror"}, laxer: true},
		configPolicyCase{data: map[string]string{config.KeyMaintenanceWindow: "weekends"}, laxer: true},
		configPolicyCase{data: map[string]string{config.KeyMaintenanceWindow: "Sat 25:00-26:00"}, laxer: true},
		// Not an IPv6 address, which CEL cannot tell: left to the Event.
		configPolicyCase{data: map[string]string{config.KeyHostAllow: "1:2:3"}, laxer: true},
		configPolicyCase{data: map[string]string{config.KeyHostDeny: "::1::2/64"}, laxer: true},
		configPolicyCase{data: map[string]string{config.KeyHostAllow: "[1::2::3]:80"}, laxer: true},
		// Not a registry (a URI authority) that CEL can tell: left to the Event.
		configPolicyCase{data: map[string]string{config.KeyDeployerImage: "[1::2::3]:5000/xy"}, laxer: true},
		configPolicyCase{data: map[string]string{config.KeyHostDeny: "1.2.3.4:5:6"}, laxer: true},
		// Keys: the example sets nothing; an unknown key, a misspelt one, a malformed
		// builder image key are refused.
		configPolicyCase{data: map[string]string{config.ExampleKey: "anything: at all\n"}},
		configPolicyCase{data: map[string]string{"checkinterval": "5m"}},
		configPolicyCase{data: map[string]string{"foo": "bar"}},
		configPolicyCase{data: map[string]string{config.KeyBuilderImagePrefix + "s2i.node": "registry.example/s2i-node:1"}},
		configPolicyCase{data: map[string]string{config.KeyBuilderImagePrefix + "pack.go.v2": "registry.example/b:1"}},
		configPolicyCase{data: map[string]string{config.KeyBuilderImagePrefix + "buildpacks.go": "registry.example/b:1"}},
		configPolicyCase{data: map[string]string{config.KeyBuilderImagePrefix + "pack": "registry.example/b:1"}},
		configPolicyCase{data: map[string]string{config.KeyBuilderImagePrefix + "pack.": "registry.example/b:1"}},
		configPolicyCase{data: map[string]string{config.KeyBuilderImagePrefix + "PACK.go": "registry.example/b:1"}},
		configPolicyCase{data: map[string]string{config.KeyEventSinkPrefix + "Team_A": "https://a.example.com/"}},
		configPolicyCase{data: map[string]string{config.KeyEventSinkPrefix: "https://a.example.com/"}},
		configPolicyCase{data: map[string]string{config.KeyEventSinkPrefix + "a.b": "https://a.example.com/"}},
		// buildBackoffMax is at least buildBackoff, absent keys at their defaults.
		configPolicyCase{data: map[string]string{config.KeyBuildBackoff: "2h", config.KeyBuildBackoffMax: "3h"}},
		configPolicyCase{data: map[string]string{config.KeyBuildBackoff: "2h", config.KeyBuildBackoffMax: "2h"}},
		configPolicyCase{data: map[string]string{config.KeyBuildBackoff: "2h", config.KeyBuildBackoffMax: "1h"}},
		configPolicyCase{data: map[string]string{config.KeyBuildBackoff: "bad", config.KeyBuildBackoffMax: "30s"}},
		configPolicyCase{data: map[string]string{config.KeyBuildBackoff: "1s", config.KeyBuildBackoffMax: "bad"}},
		// Several keys, one of them bad.
		configPolicyCase{data: map[string]string{config.KeyCheckInterval: "1m", config.KeyMaxConcurrentBuilds: "4",
			config.KeyHostDeny: "10.0.0.0/8", config.KeyRebuildCommit: "Followed"}},
		configPolicyCase{data: map[string]string{config.KeyCheckInterval: "1m", config.KeyMaxConcurrentBuilds: "four",
			config.KeyHostDeny: "10.0.0.0/8", config.KeyRebuildCommit: "Followed"}},
	)
	sort.Slice(cases, func(i, j int) bool { return caseName(cases[i]) < caseName(cases[j]) })
	return cases
}()

func caseName(c configPolicyCase) string {
	keys := make([]string, 0, len(c.data))
	for k := range c.data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "=" + c.data[k] + ";")
	}
	return b.String()
}

// TestConfigPolicyCases: every key the operator reads has at least one case that the
// operator accepts and one that it refuses, so that a new key without cases (and the
// policy's rule for it) fails here. It needs no control plane.
func TestConfigPolicyCases(t *testing.T) {
	accepted, refused := map[string]bool{}, map[string]bool{}
	for _, c := range configPolicyCases {
		if len(c.data) != 1 {
			continue
		}
		for k := range c.data {
			if strings.HasPrefix(k, config.KeyBuilderImagePrefix) {
				k = config.KeyBuilderImagePrefix
			}
			if strings.HasPrefix(k, config.KeyEventSinkPrefix) {
				k = config.KeyEventSinkPrefix
			}
			if _, err := config.FromConfigMap(&corev1.ConfigMap{Data: c.data}); err == nil {
				accepted[k] = true
			} else {
				refused[k] = true
			}
		}
	}
	for _, k := range config.Keys() {
		if !accepted[k] || !refused[k] {
			t.Errorf("key %s: cases the operator accepts: %t, refuses: %t; want both", k, accepted[k], refused[k])
		}
	}
}

// TestConfigPolicyParity: the API server, with config/390-config-policy.yaml, admits
// the shipped config/400-config.yaml, and then each case of configPolicyCases written
// to the operator's ConfigMap exactly when config.FromConfigMap accepts it; a refusal
// names the key. A create is checked too. A ConfigMap of another name, or in another
// namespace, is untouched.
func TestConfigPolicyParity(t *testing.T) {
	ctx := context.Background()
	const system = "func-operator" // the namespace the policy matches, config/100-namespace.yaml
	if _, err := envtest.Apply(ctx, restConfig, "config/400-config.yaml"); err != nil {
		t.Fatalf("the shipped ConfigMap: %v", err)
	}
	key := client.ObjectKey{Namespace: system, Name: config.ConfigMapName}
	write := func(data map[string]string) error {
		cm := &corev1.ConfigMap{}
		if err := k8sClient.Get(ctx, key, cm); err != nil {
			t.Fatal(err)
		}
		cm.Data = data
		return k8sClient.Update(ctx, cm)
	}
	t.Cleanup(func() {
		if err := write(nil); err != nil {
			t.Errorf("emptying the ConfigMap: %v", err)
		}
	})
	// The policy reaches the API server's admission a moment after it is made.
	eventually(t, 10*time.Second, func() string {
		if err := write(nil); err != nil {
			t.Fatalf("emptying the ConfigMap: %v", err)
		}
		if err := write(map[string]string{config.KeyCheckInterval: "1d"}); err == nil {
			return "checkInterval 1d admitted"
		}
		return ""
	})

	t.Logf("%d cases", len(configPolicyCases))
	for _, c := range configPolicyCases {
		// No data is never checked: each case is a write of its data.
		if err := write(nil); err != nil {
			t.Fatalf("emptying the ConfigMap: %v", err)
		}
		_, opErr := config.FromConfigMap(&corev1.ConfigMap{Data: c.data})
		wantAdmitted := opErr == nil || c.laxer
		err := write(c.data)
		switch {
		case wantAdmitted && err != nil:
			t.Errorf("%q: refused, though the operator accepts it: %v", c.data, err)
		case !wantAdmitted && err == nil:
			t.Errorf("%q: admitted, though the operator refuses it: %v", c.data, opErr)
		case c.laxer && opErr == nil:
			t.Errorf("%q: marked laxer, but the operator accepts it", c.data)
		case err != nil && !c.evalError:
			msg := err.Error()
			named := false
			for k := range c.data {
				named = named || strings.Contains(msg, k)
			}
			if !named || !strings.Contains(msg, "ConfigMap func-operator-config: ") {
				t.Errorf("%q: refusal %q names no key of it", c.data, msg)
			}
		}
	}

	// What the policy says: the key, the value and what is accepted.
	if err := write(map[string]string{config.KeyCheckInterval: "1d"}); err == nil ||
		!strings.Contains(err.Error(), `key checkInterval: "1d" is not a duration such as 5m, 90s or 1h30m (units ns, us, ms, s, m, h; no d) of at least 10s`) {
		t.Errorf("checkInterval 1d: %v", err)
	}
	if err := write(map[string]string{"checkinterval": "5m"}); err == nil ||
		!strings.Contains(err.Error(), "unknown keys checkinterval (misspelt?): the operator reads autoUpdateMiddleware, ") {
		t.Errorf("a misspelt key: %v", err)
	}
	if err := write(map[string]string{config.KeyEventSink: "https://u:p@e.example.com/"}); err == nil ||
		!strings.Contains(err.Error(), `key eventSink: "https://u:p@e.example.com/" is neither an http:// or https:// URL (a host, a port and a path; no credentials, no query) nor broker:<namespace>/<name>`) {
		t.Errorf("an event sink with credentials: %v", err)
	}
	if err := write(map[string]string{config.KeyHostDeny: "10.0.0.0/8, a b, *"}); err == nil ||
		!strings.Contains(err.Error(), `key hostDeny: "a b", "*" are neither host names`) {
		t.Errorf("bad host entries: %v", err)
	}

	// A create is checked as an update is; the shipped ConfigMap, created anew, passes.
	if err := k8sClient.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: system, Name: config.ConfigMapName}}); err != nil {
		t.Fatalf("deleting the ConfigMap: %v", err)
	}
	if err := k8sClient.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: system, Name: config.ConfigMapName},
		Data: map[string]string{config.KeyMaxConcurrentBuilds: "-1"}}); err == nil ||
		!strings.Contains(err.Error(), `key maxConcurrentBuilds: "-1" is not a whole number of 0 or more`) {
		t.Errorf("creating the ConfigMap with maxConcurrentBuilds -1: %v", err)
	}
	if _, err := envtest.Apply(ctx, restConfig, "config/400-config.yaml"); err != nil {
		t.Errorf("the shipped ConfigMap: %v", err)
	}

	// Positive controls: the same bad data, in a ConfigMap of another name in the
	// operator's namespace, and in one of the operator's name in another namespace.
	bad := map[string]string{config.KeyCheckInterval: "1d", "foo": "bar"}
	other := newBareNamespace(t)
	for _, cm := range []*corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Namespace: system, Name: "not-func-operator-config"}, Data: bad},
		{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: config.ConfigMapName}, Data: bad},
	} {
		if err := k8sClient.Create(ctx, cm); err != nil {
			t.Errorf("ConfigMap %s/%s: %v, want it untouched by the policy", cm.Namespace, cm.Name, err)
			continue
		}
		cm.Data["gitTimeout"] = "forever"
		if err := k8sClient.Update(ctx, cm); err != nil {
			t.Errorf("updating ConfigMap %s/%s: %v, want it untouched by the policy", cm.Namespace, cm.Name, err)
		}
		if cm.Namespace == system {
			if err := k8sClient.Delete(ctx, cm); err != nil {
				t.Error(err)
			}
		}
	}
}

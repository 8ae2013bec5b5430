package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

func TestUpdate_Bounds(t *testing.T) {
	last := Defaults()
	last.CloneMaxBytes, last.BuildLogLines = 7<<20, 3
	tests := []struct {
		name    string
		data    map[string]string
		want    func(c *Config)
		wantErr string
	}{{
		name: "sizes and counts",
		data: map[string]string{KeyCloneMaxBytes: "8Mi", KeyCloneMaxFiles: "500", KeyInspectMaxMemory: "4Mi",
			KeyInspectMaxBytes: "1Gi", KeyConditionMessageMaxBytes: "256", KeyEventMessageMaxBytes: "300", KeyBuildLogLines: "0"},
		want: func(c *Config) {
			c.CloneMaxBytes, c.CloneMaxFiles, c.InspectMaxMemory, c.InspectMaxBytes = 8<<20, 500, 4<<20, 1<<30
			c.ConditionMessageMaxBytes, c.EventMessageMaxBytes, c.BuildLogLines = 256, 300, 0
		},
	}, {
		name:    "a size that is not one keeps the last good value",
		data:    map[string]string{KeyCloneMaxBytes: "lots"},
		want:    func(c *Config) { c.CloneMaxBytes = 7 << 20 },
		wantErr: `key cloneMaxBytes: "lots" is not a size such as 100Mi`,
	}, {
		name:    "inspection memory is capped below the operator's own limit",
		data:    map[string]string{KeyInspectMaxMemory: "1Gi"},
		wantErr: "key inspectMaxMemory: 1Gi is outside 1Mi to 256Mi",
	}, {
		// 2^64 + 2Mi: its int64 value wraps around to 2Mi.
		name:    "a size past int64 is out of range, not wrapped around",
		data:    map[string]string{KeyCloneMaxBytes: "18446744073711648768"},
		want:    func(c *Config) { c.CloneMaxBytes = 7 << 20 },
		wantErr: "key cloneMaxBytes: 18446744073711648768 is outside 1Mi to 1Ti",
	}, {
		name:    "a count out of range keeps the last good value",
		data:    map[string]string{KeyBuildLogLines: "100000"},
		want:    func(c *Config) { c.BuildLogLines = 3 },
		wantErr: "key buildLogLines: 100000 is outside 0 to 1000",
	}, {
		name:    "message caps have a floor",
		data:    map[string]string{KeyConditionMessageMaxBytes: "10"},
		wantErr: "key conditionMessageMaxBytes: 10 is outside 128 to 32768",
	}, {
		name: "host lists, comma or line separated, with comments",
		data: map[string]string{KeyHostAllow: "git.example.com, *.corp.example\n10.0.0.0/8 # office\n", KeyHostDeny: "[::1]:6443"},
		want: func(c *Config) {
			c.HostAllow = []string{"git.example.com", "*.corp.example", "10.0.0.0/8"}
			c.HostDeny = []string{"[::1]:6443"}
		},
	}, {
		name:    "a bad host entry refuses the whole list",
		data:    map[string]string{KeyHostDeny: "10.0.0.0/33, ok.example"},
		wantErr: `key hostDeny: "10.0.0.0/33" is not an address range such as 10.0.0.0/8`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, invalid, unknown := Update(last, configMap(tt.data))
			want := Defaults()
			if tt.want != nil {
				tt.want(&want)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Update() config (-want +got):\n%s", diff)
			}
			var errs []string
			for _, e := range invalid {
				errs = append(errs, e.Error())
			}
			var wantErrs []string
			if tt.wantErr != "" {
				wantErrs = []string{tt.wantErr}
			}
			if diff := cmp.Diff(wantErrs, errs); diff != "" {
				t.Errorf("Update() invalid (-want +got):\n%s", diff)
			}
			if len(unknown) > 0 {
				t.Errorf("Update() unknown = %v, want none", unknown)
			}
		})
	}
}

// TestShippedExample reads the ConfigMap of config/: its _example documents every
// key, with the defaults.
func TestShippedExample(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "config", "400-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := yaml.Unmarshal(b, &cm); err != nil {
		t.Fatal(err)
	}
	for _, key := range Keys() {
		if !strings.Contains(cm.Data[ExampleKey], "\n"+key) {
			t.Errorf("_example does not document key %s", key)
		}
	}
	example := map[string]string{}
	if err := yaml.Unmarshal([]byte(cm.Data[ExampleKey]), &example); err != nil {
		t.Fatalf("_example is not a YAML map of keys: %v", err)
	}
	for k := range example {
		if strings.HasPrefix(k, KeyBuilderImagePrefix) {
			delete(example, k) // a pin of the func library's default
		}
		if strings.HasPrefix(k, KeyEventSinkPrefix) {
			delete(example, k) // a namespace's own sink, which only that namespace has
		}
	}
	delete(example, KeyDeployerImage) // "": the func library's
	got, err := FromConfigMap(configMap(example))
	if err != nil {
		t.Errorf("_example is invalid: %v", err)
	}
	if diff := cmp.Diff(Defaults(), got); diff != "" {
		t.Errorf("_example documents values other than the defaults (-defaults +_example):\n%s", diff)
	}
}

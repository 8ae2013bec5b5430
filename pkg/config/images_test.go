package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestUpdate_Images: every key that pins an image of the build takes a reference by
// tag or by digest (sha256, 64 lower-case hex digits), and refuses anything else,
// naming the key and keeping its last good value. The keys that may be empty
// (func's or the embedded task's image) take "".
func TestUpdate_Images(t *testing.T) {
	hex := strings.Repeat("0a", 32)
	const lastGood = "127.0.0.1:5000/last@sha256:" + "1111111111111111111111111111111111111111111111111111111111111111"
	keys := []struct {
		key        string
		get        func(c Config) string
		set        func(c *Config, v string)
		emptyValid bool
	}{
		{KeyDeployerImage, func(c Config) string { return c.DeployerImage }, func(c *Config, v string) { c.DeployerImage = v }, false},
		{KeyGitCloneImage, func(c Config) string { return c.GitCloneImage }, func(c *Config, v string) { c.GitCloneImage = v }, true},
		{KeyBashImage, func(c Config) string { return c.BashImage }, func(c *Config, v string) { c.BashImage = v }, true},
		{KeyBuildahImage, func(c Config) string { return c.BuildahImage }, func(c *Config, v string) { c.BuildahImage = v }, true},
		{KeyBuilderImagePrefix + "pack.go", func(c Config) string { return c.BuilderImages["pack/go"] },
			func(c *Config, v string) { c.BuilderImages = map[string]string{"pack/go": v} }, false},
	}
	values := []struct {
		value, want string // want "": refused
	}{
		{"docker.io/library/bash@sha256:" + hex, "docker.io/library/bash@sha256:" + hex},
		{" mirror.example/bash:5.1@sha256:" + hex + "\n", "mirror.example/bash:5.1@sha256:" + hex},
		{"docker.io/library/bash:5.1", "docker.io/library/bash:5.1"},
		{"docker.io/library/bash@sha256:0a0a", ""},          // too short
		{"docker.io/library/bash@sha256:" + hex + "0a", ""}, // too long
		{"docker.io/library/bash@sha256:" + strings.ToUpper(hex), ""},
		{"docker.io/library/bash@sha512:" + hex + hex, ""}, // another algorithm
		{"docker.io/library/bash@" + hex, ""},              // no algorithm
		{"docker.io/library/bash@@sha256:" + hex, ""},
		{"not an image", ""},
	}
	for _, k := range keys {
		for _, v := range values {
			t.Run(k.key+"="+v.value, func(t *testing.T) {
				last := Defaults()
				k.set(&last, lastGood)
				got, invalid, unknown := Update(last, configMap(map[string]string{k.key: v.value}))
				want := v.want
				if want == "" {
					want = lastGood
				}
				if g := k.get(got); g != want {
					t.Errorf("%s = %q, want %q", k.key, g, want)
				}
				var msgs []string
				for _, err := range invalid {
					msgs = append(msgs, err.Error())
				}
				var wantMsgs []string
				if v.want == "" {
					wantMsgs = []string{`key ` + k.key + `: "` + v.value + `" is not an image reference`}
				}
				if diff := cmp.Diff(wantMsgs, msgs); diff != "" {
					t.Errorf("invalid (-want +got):\n%s", diff)
				}
				if len(unknown) > 0 {
					t.Errorf("unknown keys %v", unknown)
				}
			})
		}
		t.Run(k.key+" empty", func(t *testing.T) {
			last := Defaults()
			k.set(&last, lastGood)
			got, invalid, _ := Update(last, configMap(map[string]string{k.key: " "}))
			switch g := k.get(got); {
			case k.emptyValid && (g != "" || len(invalid) > 0):
				t.Errorf("%s empty = %q, %v; want \"\" (the default image), valid", k.key, g, invalid)
			case !k.emptyValid && (g != lastGood || len(invalid) != 1):
				t.Errorf("%s empty = %q, %v; want refused, the last good value kept", k.key, g, invalid)
			}
		})
	}
}

package registry

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestKeychain(t *testing.T) {
	anonymous := authn.AuthConfig{}
	tests := []struct {
		name   string
		config string
		image  string
		want   authn.AuthConfig
	}{
		{
			name:   "auth base64, host:port",
			config: `{"auths":{"127.0.0.1:5000":{"auth":"` + b64("alice:pa:ss") + `"}}}`,
			image:  "127.0.0.1:5000/fn/app:v1",
			want:   authn.AuthConfig{Username: "alice", Password: "pa:ss"},
		},
		{
			name:   "username and password",
			config: `{"auths":{"registry.example.com":{"username":"bob","password":"hunter22"}}}`,
			image:  "registry.example.com/team/fn@sha256:" + strings.Repeat("a", 64),
			want:   authn.AuthConfig{Username: "bob", Password: "hunter22"},
		},
		{
			name:   "host with scheme and path",
			config: `{"auths":{"https://registry.example.com/v1/":{"auth":"` + b64("carol:pw12") + `"}}}`,
			image:  "registry.example.com/team/fn:latest",
			want:   authn.AuthConfig{Username: "carol", Password: "pw12"},
		},
		{
			name:   "upper-case host",
			config: `{"auths":{"Registry.Example.COM":{"auth":"` + b64("dave:pw12") + `"}}}`,
			image:  "registry.example.com/fn",
			want:   authn.AuthConfig{Username: "dave", Password: "pw12"},
		},
		{
			name:   "docker hub alias",
			config: `{"auths":{"https://index.docker.io/v1/":{"auth":"` + b64("erin:pw12") + `"}}}`,
			image:  "alpine",
			want:   authn.AuthConfig{Username: "erin", Password: "pw12"},
		},
		{
			name:   "docker.io key",
			config: `{"auths":{"docker.io":{"auth":"` + b64("erin:pw12") + `"}}}`,
			image:  "docker.io/library/alpine:3",
			want:   authn.AuthConfig{Username: "erin", Password: "pw12"},
		},
		{
			name:   "identity token",
			config: `{"auths":{"myregistry.azurecr.io":{"username":"00000000-0000-0000-0000-000000000000","identitytoken":"tok-123"}}}`,
			image:  "myregistry.azurecr.io/fn",
			want:   authn.AuthConfig{Username: "00000000-0000-0000-0000-000000000000", IdentityToken: "tok-123"},
		},
		{
			name:   "glob host",
			config: `{"auths":{"*.example.com":{"auth":"` + b64("frank:pw12") + `"}}}`,
			image:  "eu.example.com/fn",
			want:   authn.AuthConfig{Username: "frank", Password: "pw12"},
		},
		{
			name: "longest path prefix wins",
			config: `{"auths":{"registry.example.com":{"auth":"` + b64("all:pw12") + `"},` +
				`"registry.example.com/team-a":{"auth":"` + b64("team-a:pw12") + `"}}}`,
			image: "registry.example.com/team-a/fn",
			want:  authn.AuthConfig{Username: "team-a", Password: "pw12"},
		},
		{
			name: "path prefix does not match a sibling",
			config: `{"auths":{"registry.example.com":{"auth":"` + b64("all:pw12") + `"},` +
				`"registry.example.com/team-a":{"auth":"` + b64("team-a:pw12") + `"}}}`,
			image: "registry.example.com/team-ab/fn",
			want:  authn.AuthConfig{Username: "all", Password: "pw12"},
		},
		{
			name:   "exact host wins over glob",
			config: `{"auths":{"*.example.com":{"auth":"` + b64("glob:pw12") + `"},"eu.example.com":{"auth":"` + b64("exact:pw12") + `"}}}`,
			image:  "eu.example.com/fn",
			want:   authn.AuthConfig{Username: "exact", Password: "pw12"},
		},
		{
			name:   "legacy .dockercfg layout",
			config: `{"registry.example.com":{"auth":"` + b64("gina:pw12") + `"}}`,
			image:  "registry.example.com/fn",
			want:   authn.AuthConfig{Username: "gina", Password: "pw12"},
		},
		{
			name:   "no match: other host",
			config: `{"auths":{"registry.example.com":{"auth":"` + b64("x:pw12") + `"}}}`,
			image:  "quay.io/fn",
			want:   anonymous,
		},
		{
			name:   "no match: port differs",
			config: `{"auths":{"registry.example.com:5000":{"auth":"` + b64("x:pw12") + `"}}}`,
			image:  "registry.example.com/fn",
			want:   anonymous,
		},
		{
			name:   "no match: glob does not cover subdomains of subdomains",
			config: `{"auths":{"*.example.com":{"auth":"` + b64("x:pw12") + `"}}}`,
			image:  "a.b.example.com/fn",
			want:   anonymous,
		},
		{name: "empty content", config: "", image: "registry.example.com/fn", want: anonymous},
		{name: "empty object", config: `{}`, image: "registry.example.com/fn", want: anonymous},
		{name: "empty auths", config: `{"auths":{}}`, image: "registry.example.com/fn", want: anonymous},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kc, err := Keychain([]byte(tc.config))
			if err != nil {
				t.Fatal(err)
			}
			ref, err := name.ParseReference(tc.image)
			if err != nil {
				t.Fatal(err)
			}
			for _, target := range []authn.Resource{ref.Context(), ref.Context().Registry} {
				if tc.name == "longest path prefix wins" && target == authn.Resource(ref.Context().Registry) {
					continue // a bare registry is not under the path prefix
				}
				auth, err := kc.Resolve(target)
				if err != nil {
					t.Fatal(err)
				}
				got, err := auth.Authorization()
				if err != nil {
					t.Fatal(err)
				}
				if *got != tc.want {
					t.Errorf("Resolve(%s) = %+v, want %+v", target, *got, tc.want)
				}
			}
		})
	}

	t.Run("nil content", func(t *testing.T) {
		kc, err := Keychain(nil)
		if err != nil {
			t.Fatal(err)
		}
		auth, _ := kc.Resolve(name.MustParseReference("registry.example.com/fn").Context())
		if auth != authn.Anonymous {
			t.Errorf("got %v, want anonymous", auth)
		}
	})
}

func TestKeychainErrors(t *testing.T) {
	const secret = "VerySecretPassw0rd"
	tests := map[string]string{
		"truncated JSON":          `{"auths":{"registry.example.com":{"auth":"` + b64("user:"+secret) + `"`,
		"not JSON":                "user:" + secret,
		"auth is a number":        `{"auths":{"registry.example.com":{"auth":12345678,"password":"` + secret + `"}}}`,
		"auths is a string":       `{"auths":"` + secret + `"}`,
		"auth not base64":         `{"auths":{"registry.example.com":{"auth":"!!` + secret + `!!"}}}`,
		"auth without colon":      `{"auths":{"registry.example.com":{"auth":"` + b64(secret) + `"}}}`,
		"entry is not an object":  `{"auths":{"registry.example.com":"` + secret + `"}}`,
		"top level is an array":   `["` + secret + `"]`,
		"password is not textual": `{"auths":{"registry.example.com":{"username":"u","password":["` + secret + `"]}}}`,
	}
	for title, config := range tests {
		t.Run(title, func(t *testing.T) {
			_, err := Keychain([]byte(config))
			if err == nil {
				t.Fatal("no error")
			}
			for _, s := range []string{secret, b64("user:" + secret), b64(secret)} {
				if strings.Contains(err.Error(), s) {
					t.Errorf("error quotes the content: %v", err)
				}
			}
			if !strings.Contains(err.Error(), ".dockerconfigjson") {
				t.Errorf("error does not say what is invalid: %v", err)
			}
			t.Log(err)
		})
	}
}

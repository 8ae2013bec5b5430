package registry

import (
	"encoding/json"
	"strings"
	"testing"
)

// fuzzSecret is the password, token or auth the seeds of FuzzKeychain carry: no error
// may quote it.
const fuzzSecret = "S3NT1NEL-pa55"

// FuzzKeychain feeds the .dockerconfigjson of a registry Secret to Keychain, and
// resolves image with what it returns.
func FuzzKeychain(f *testing.F) {
	auth := b64("alice:" + fuzzSecret)
	for _, s := range []struct{ config, image string }{
		{`{"auths":{"registry.example.com":{"auth":"` + auth + `"}}}`, "registry.example.com/team/fn:latest"},
		{`{"auths":{"registry.example.com":{"username":"bob","password":"` + fuzzSecret + `"}}}`, "registry.example.com/fn"},
		{`{"auths":{"https://index.docker.io/v1/":{"auth":"` + auth + `"}}}`, "alpine"},
		{`{"auths":{"myregistry.azurecr.io":{"username":"00000000-0000-0000-0000-000000000000","identitytoken":"` + fuzzSecret + `"}}}`, "myregistry.azurecr.io/fn"},
		{`{"auths":{"ghcr.io":{"registrytoken":"` + fuzzSecret + `"}}}`, "ghcr.io/org/fn@sha256:" + strings.Repeat("a", 64)},
		{`{"auths":{"*.azurecr.io":{"auth":"` + auth + `"},"team.azurecr.io/app":{"auth":"` + b64("t:"+fuzzSecret) + `"}}}`, "team.azurecr.io/app/fn"},
		{`{"auths":{"localhost:5000":{"auth":"` + auth + `"},"[::1]:5000":{"auth":"` + auth + `"}}}`, "[::1]:5000/fn"},
		{`{"registry.example.com":{"auth":"` + auth + `"}}`, "registry.example.com/fn"},
		// Broken, with the secret where an error might quote it.
		{`{"auths":{"registry.example.com":{"auth":"` + fuzzSecret + `"}}}`, "registry.example.com/fn"},
		{`{"auths":{"registry.example.com":{"auth":"` + b64(fuzzSecret) + `"}}}`, "registry.example.com/fn"},
		{`{"auths":{"registry.example.com":{"auth":"` + strings.TrimRight(auth, "=") + `"}}}`, "registry.example.com/fn"},
		{`{"auths":{"registry.example.com":{"password":` + `["` + fuzzSecret + `"]}}}`, "registry.example.com/fn"},
		{`{"auths":{"registry.example.com":{"password":"` + fuzzSecret + `"`, "registry.example.com/fn"},
		{`{"auths":{"registry.example.com":"` + fuzzSecret + `"}}`, "registry.example.com/fn"},
		{`{"auths":"` + fuzzSecret + `"}`, "registry.example.com/fn"},
		{`{"auths":{"registry.example.com":{"password":"` + fuzzSecret + `\ud800"}}}`, "registry.example.com/fn"},
		{`{"auths":{"":{"auth":"` + auth + `"},"%zz":{}}}`, "registry.example.com/fn"},
		{`{"auths":{"registry.example.com":{"auth":"` + auth + `"}}}`, "REGISTRY.example.com/fn:" + fuzzSecret},
		{``, "registry.example.com/fn"},
		{`null`, "x"},
		{`[]`, "x"},
		{`{"auths":null}`, "x"},
		{"\xff\xfe{", "x"},
	} {
		f.Add([]byte(s.config), s.image)
	}
	f.Fuzz(func(t *testing.T, config []byte, image string) {
		kc, err := Keychain(config)
		if err != nil {
			msg := err.Error()
			if strings.Contains(msg, fuzzSecret) && !inAKey(config, fuzzSecret) {
				t.Fatalf("Keychain error quotes a credential: %q", msg)
			}
			if strings.ContainsAny(msg, "\n\r") {
				t.Errorf("Keychain error is not one line: %q", msg)
			}
			return
		}
		// Equally specific keys resolve the same way every time: the auths object is
		// a map, whose order must not matter. Keys that normalise to the same host
		// and path ("docker.io", "index.docker.io") are equally specific: only the
		// order Keychain read them in would choose between their credentials.
		entries := kc.(*secretKeychain).entries
		for i := 1; i < len(entries); i++ {
			a, b := entries[i-1], entries[i]
			if a.host == b.host && a.prefix == b.prefix && a.cfg != b.cfg {
				t.Fatalf("keys for %s/%s with different credentials: which one Login gets depends on the order of a map", a.host, a.prefix)
			}
		}
		user, pass, err := Login(kc, image)
		if err != nil {
			if msg := err.Error(); strings.Contains(msg, fuzzSecret) && !strings.Contains(image, fuzzSecret) {
				t.Fatalf("Login error quotes a credential: %q", msg)
			}
			return
		}
		if (user != "" || pass != "") && !heldSecrets(config)[pass] {
			t.Errorf("Login(%q) = %q, %q: a password the Secret does not hold", image, user, pass)
		}
	})
}

// inAKey is whether s is in a registry key of config, which errors do quote.
func inAKey(config []byte, s string) bool {
	var raw map[string]json.RawMessage
	if json.Unmarshal(config, &raw) != nil {
		return false
	}
	auths := raw
	if a, ok := raw["auths"]; ok {
		auths = nil
		_ = json.Unmarshal(a, &auths)
	}
	for k := range raw {
		if strings.Contains(k, s) {
			return true
		}
	}
	for k := range auths {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}

// heldSecrets are the passwords and tokens of every entry of config.
func heldSecrets(config []byte) map[string]bool {
	var raw map[string]json.RawMessage
	if json.Unmarshal(config, &raw) != nil {
		return nil
	}
	auths := raw
	if a, ok := raw["auths"]; ok {
		auths = nil
		_ = json.Unmarshal(a, &auths)
	}
	held := map[string]bool{}
	for _, v := range auths {
		var e dockerConfigEntry
		if json.Unmarshal(v, &e) != nil {
			continue
		}
		if cfg, err := e.authConfig(); err == nil {
			held[cfg.Password], held[cfg.IdentityToken], held[cfg.RegistryToken] = true, true, true
		}
	}
	return held
}

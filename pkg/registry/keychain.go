package registry

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"

	"github.com/fnops/func-operator/pkg/netguard"
)

// dockerHubHost is how go-containerregistry names Docker Hub in
// name.Registry.RegistryStr(); every Docker Hub alias is normalised to it.
const dockerHubHost = "index.docker.io"

var dockerHubAliases = map[string]bool{
	"docker.io":               true,
	"index.docker.io":         true,
	"registry-1.docker.io":    true,
	"registry.hub.docker.com": true,
}

// dockerConfigEntry is one value of the "auths" object of a
// kubernetes.io/dockerconfigjson Secret.
type dockerConfigEntry struct {
	Auth          string `json:"auth,omitempty"`
	Username      string `json:"username,omitempty"`
	Password      string `json:"password,omitempty"`
	IdentityToken string `json:"identitytoken,omitempty"`
	RegistryToken string `json:"registrytoken,omitempty"`
}

// keychainEntry is a parsed "auths" key with its credentials.
type keychainEntry struct {
	key    string // as written in the Secret
	host   string // lower case host[:port]; may contain glob labels ("*.example.com")
	prefix string // optional repository path prefix, without leading/trailing "/"
	glob   bool
	cfg    authn.AuthConfig
}

// secretKeychain implements authn.Keychain over the entries of one
// .dockerconfigjson document.
type secretKeychain struct {
	entries []keychainEntry
	// ca is the PEM CA bundle the Secret's registries are verified with, in
	// addition to the system roots (KeychainWithCA); nil: the system roots only.
	ca []byte
}

// KeyCACert is the key of a registry auth Secret that holds PEM CA certificates
// trusted, in addition to the system roots, when inspecting images (Flux's name).
const KeyCACert = "ca.crt"

// KeychainWithCA is Keychain whose inspections (Inspector.Inspect) also trust the
// PEM CA certificates of ca (the Secret's key ca.crt; nil or absent: the system
// roots only), for that inspection only. A ca that is not a PEM bundle of
// certificates is an error that never quotes it.
func KeychainWithCA(dockerConfigJSON, ca []byte) (authn.Keychain, error) {
	kc, err := Keychain(dockerConfigJSON)
	if err != nil || ca == nil {
		return kc, err
	}
	if len(bytes.TrimSpace(ca)) == 0 {
		return nil, fmt.Errorf("key %q is empty", KeyCACert)
	}
	if _, err := netguard.ParseCABundle(ca); err != nil {
		return nil, fmt.Errorf("key %q must hold the PEM certificates of the CAs to trust: %w", KeyCACert, err)
	}
	skc := kc.(*secretKeychain)
	skc.ca = append([]byte(nil), ca...)
	return skc, nil
}

// CABundle returns the CA bundle kc carries (KeychainWithCA), nil for none: what
// another registry client of the same Function trusts.
func CABundle(kc authn.Keychain) []byte { return caBundle(kc) }

// caBundle returns the CA bundle kc carries (KeychainWithCA), nil for none.
func caBundle(kc authn.Keychain) []byte {
	if skc, ok := kc.(*secretKeychain); ok {
		return skc.ca
	}
	return nil
}

// Keychain returns an authn.Keychain from the content of a kubernetes.io/dockerconfigjson Secret
// (the ".dockerconfigjson" key: {"auths": {"<host>": {"auth": base64(user:pass) | "username","password" | "identitytoken"}}}).
// Hosts may be written as "host", "host:port", "https://host/v1/" etc.; match the image's registry. nil/empty content → anonymous.
// Malformed JSON → error that never quotes the content.
//
// Matching follows the kubelet's rules for image pull secrets: the host (and
// port, when either side has one) must be equal, a host may use glob labels
// such as "*.azurecr.io", and a key with a path ("host/team") only matches
// repositories under that path. The most specific match wins. All aliases of
// Docker Hub ("docker.io", "https://index.docker.io/v1/", ...) are equivalent.
// The legacy ".dockercfg" layout (the "auths" object without the wrapper) is
// accepted too.
func Keychain(dockerConfigJSON []byte) (authn.Keychain, error) {
	if len(bytes.TrimSpace(dockerConfigJSON)) == 0 {
		return &secretKeychain{}, nil // resolves everything to anonymous
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(dockerConfigJSON, &raw); err != nil {
		return nil, jsonError(err)
	}
	auths := raw
	if a, ok := raw["auths"]; ok {
		auths = nil
		if err := json.Unmarshal(a, &auths); err != nil {
			return nil, jsonError(err)
		}
	}
	kc := &secretKeychain{}
	for key, value := range auths {
		var e dockerConfigEntry
		if err := json.Unmarshal(value, &e); err != nil {
			// Only the key (a registry host) is quoted, never a value.
			return nil, fmt.Errorf("invalid .dockerconfigjson: entry for registry %q is not an object with string fields", key)
		}
		cfg, err := e.authConfig()
		if err != nil {
			return nil, fmt.Errorf("invalid .dockerconfigjson: entry for registry %q: %w", key, err)
		}
		host, prefix, ok := parseAuthKey(key)
		if !ok {
			return nil, fmt.Errorf("invalid .dockerconfigjson: registry key %q is not a host, host:port or URL", key)
		}
		kc.entries = append(kc.entries, keychainEntry{
			key:    key,
			host:   host,
			prefix: prefix,
			glob:   strings.ContainsAny(host, "*?["),
			cfg:    cfg,
		})
	}
	// Deterministic order so that equally specific keys always resolve the same way.
	sort.Slice(kc.entries, func(a, b int) bool {
		if kc.entries[a].host != kc.entries[b].host {
			return kc.entries[a].host < kc.entries[b].host
		}
		if kc.entries[a].prefix != kc.entries[b].prefix {
			return kc.entries[a].prefix < kc.entries[b].prefix
		}
		// Aliases of one host ("docker.io", "index.docker.io"): as written.
		return kc.entries[a].key < kc.entries[b].key
	})
	// Of the keys that name one host and path, the first as written is used, and
	// only it: never one chosen by the order of a map.
	kc.entries = slices.CompactFunc(kc.entries, func(a, b keychainEntry) bool { return a.host == b.host && a.prefix == b.prefix })
	return kc, nil
}

// jsonError describes a JSON decoding failure without quoting the input.
func jsonError(err error) error {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return fmt.Errorf("invalid .dockerconfigjson: malformed JSON at byte offset %d", syn.Offset)
	}
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		return fmt.Errorf("invalid .dockerconfigjson: unexpected JSON %s at byte offset %d", typ.Value, typ.Offset)
	}
	return errors.New("invalid .dockerconfigjson: malformed JSON")
}

func (e dockerConfigEntry) authConfig() (authn.AuthConfig, error) {
	cfg := authn.AuthConfig{
		Username:      e.Username,
		Password:      e.Password,
		IdentityToken: e.IdentityToken,
		RegistryToken: e.RegistryToken,
	}
	if e.Auth != "" {
		dec, err := base64.StdEncoding.DecodeString(strings.TrimSpace(e.Auth))
		if err != nil {
			// Some tools write unpadded base64.
			dec, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(strings.TrimSpace(e.Auth), "="))
		}
		if err != nil {
			return authn.AuthConfig{}, errors.New(`field "auth" is not valid base64`)
		}
		user, pass, ok := strings.Cut(string(dec), ":")
		if !ok {
			return authn.AuthConfig{}, errors.New(`field "auth" is not base64("username:password")`)
		}
		cfg.Username, cfg.Password = user, pass
	}
	return cfg, nil
}

// parseAuthKey turns an "auths" key ("host", "host:port", "https://host/v1/",
// "host/team/") into a normalised host and optional repository path prefix.
func parseAuthKey(key string) (host, prefix string, ok bool) {
	k := strings.TrimSpace(key)
	if k == "" {
		return "", "", false
	}
	if !strings.Contains(k, "://") {
		k = "dummy://" + k
	}
	u, err := url.Parse(k)
	if err != nil || u.Host == "" {
		return "", "", false
	}
	host = strings.ToLower(u.Host)
	if dockerHubAliases[host] {
		host = dockerHubHost
	}
	p := strings.Trim(u.Path, "/")
	// Docker's own keys end in an API version path ("/v1/", "/v2/"): that is
	// not a repository prefix.
	if p == "v1" || p == "v2" {
		p = ""
	}
	return host, p, true
}

// Resolve implements authn.Keychain.
func (k *secretKeychain) Resolve(target authn.Resource) (authn.Authenticator, error) {
	host := strings.ToLower(target.RegistryStr())
	if dockerHubAliases[host] {
		host = dockerHubHost
	}
	repo := strings.TrimPrefix(target.String(), target.RegistryStr())
	repo = strings.Trim(repo, "/")

	best := -1
	for idx, e := range k.entries {
		if !hostMatches(e.host, host) {
			continue
		}
		if e.prefix != "" && repo != e.prefix && !strings.HasPrefix(repo, e.prefix+"/") {
			continue
		}
		if best < 0 || moreSpecific(e, k.entries[best]) {
			best = idx
		}
	}
	if best < 0 {
		return authn.Anonymous, nil
	}
	return authn.FromConfig(k.entries[best].cfg), nil
}

// moreSpecific reports whether a should win over b when both match.
func moreSpecific(a, b keychainEntry) bool {
	if a.glob != b.glob {
		return !a.glob
	}
	return len(a.prefix) > len(b.prefix)
}

// hostMatches compares a key host (maybe with glob labels) with an image's
// registry host. Ports must be equal; an absent port only matches an absent
// port, as the kubelet does.
func hostMatches(pattern, host string) bool {
	if pattern == host {
		return true
	}
	pHost, pPort := splitPort(pattern)
	hHost, hPort := splitPort(host)
	if pPort != hPort {
		return false
	}
	pl := strings.Split(pHost, ".")
	hl := strings.Split(hHost, ".")
	if len(pl) != len(hl) {
		return false
	}
	for i := range pl {
		if ok, err := path.Match(pl[i], hl[i]); err != nil || !ok {
			return false
		}
	}
	return true
}

func splitPort(hostport string) (host, port string) {
	// IPv6 literals are bracketed in image references: "[::1]:5000".
	if i := strings.LastIndex(hostport, ":"); i >= 0 && !strings.Contains(hostport[i:], "]") {
		return hostport[:i], hostport[i+1:]
	}
	return hostport, ""
}

// Login returns the username and password kc holds for the registry of image; both
// are empty when it holds none (anonymous access). A token credential is returned as
// the password of the user "<token>", as Docker does.
func Login(kc authn.Keychain, image string) (username, password string, err error) {
	ref, err := name.ParseReference(image)
	if err != nil {
		return "", "", fmt.Errorf("parsing image %q: %w", image, err)
	}
	a, err := kc.Resolve(ref.Context())
	if err != nil {
		return "", "", fmt.Errorf("resolving the credentials of %s: %w", ref.Context().RegistryStr(), err)
	}
	cfg, err := a.Authorization()
	if err != nil {
		return "", "", fmt.Errorf("reading the credentials of %s: %w", ref.Context().RegistryStr(), err)
	}
	switch {
	case cfg.Username != "" || cfg.Password != "":
		return cfg.Username, cfg.Password, nil
	case cfg.IdentityToken != "":
		return "<token>", cfg.IdentityToken, nil
	case cfg.RegistryToken != "":
		return "<token>", cfg.RegistryToken, nil
	}
	return "", "", nil
}

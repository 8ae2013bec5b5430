package git

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
	corev1 "k8s.io/api/core/v1"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/netguard"
)

// Keys of a repository auth Secret.
const (
	KeyToken    = "token"
	KeyUsername = "username"
	KeyPassword = "password"

	// KeySSHPrivateKey holds the SSH private key (PEM): "ssh-privatekey", the key of
	// kubernetes.io/ssh-auth Secrets and this operator's own name. KeyIdentity and
	// KeySSHPrivateKeyUpstream are other names for the same key (sshPrivateKeyKeys
	// says which one wins).
	KeySSHPrivateKey = corev1.SSHAuthPrivateKey
	// KeyIdentity is the name Flux's GitRepository Secrets give the SSH private key.
	KeyIdentity = "identity"
	// KeySSHPrivateKeyUpstream is the name the upstream operator
	// (functions-dev/func-operator, internal/git) reads the SSH private key from.
	KeySSHPrivateKeyUpstream = "sshPrivateKey"
	// KeyPassphrase holds the passphrase of an encrypted SSH private key: this
	// operator's own name.
	KeyPassphrase = "passphrase"
	// KeyPassphraseUpstream is the name the upstream operator
	// (functions-dev/func-operator, internal/git) reads the passphrase from.
	KeyPassphraseUpstream = "sshPrivateKeyPassword"
	// KeyKnownHosts holds the host keys an SSH server must present, in OpenSSH
	// known_hosts format. Required: host keys are always verified (the upstream
	// operator makes it optional and then checks no host key).
	KeyKnownHosts = "known_hosts"

	// KeyCACert holds PEM CA certificates trusted for HTTPS, in addition to the
	// system roots, as in Flux's GitRepository Secrets. SSH repositories ignore it.
	KeyCACert = "ca.crt"
)

// defaultTokenUser is the HTTP basic-auth user sent with a token when the Secret has
// no username: hosting services check the token, not the user name.
const defaultTokenUser = "git"

// protocolSSH is what Protocol returns for ssh:// and scp-like URLs.
const protocolSSH = "ssh"

// Auth is how to authenticate to a repository, and whom to trust.
type Auth struct {
	// Method is go-git's authentication; nil means anonymous.
	Method transport.AuthMethod
	// CABundle is the PEM CA certificates (key ca.crt) trusted for HTTPS in addition
	// to the system roots, validated; nil for the system roots only. It goes into
	// go-git's ListOptions.CABundle and CloneOptions.CABundle.
	CABundle []byte
	// secrets are the values to scrub from every message.
	secrets []string
	// material is every credential value of the Secret, length-prefixed, for
	// Identity; nil for an Auth not read from a Secret.
	material []byte
	// clone is what a clone outside the operator needs (ForClone), the SSH key
	// possibly still encrypted with passphrase.
	clone      CloneCredentials
	passphrase string
}

// CloneCredentials are an Auth's credentials for a clone outside the operator: a
// build's clone step, which runs git and ssh.
type CloneCredentials struct {
	// Username and Password are HTTP(S) basic auth (a token is the password).
	Username, Password string
	// SSHPrivateKey is the key, unencrypted (PEM), KnownHosts the host keys.
	SSHPrivateKey, KnownHosts []byte
	// CABundle is the PEM CAs trusted for HTTPS besides the system roots.
	CABundle []byte
}

// String never shows a credential.
func (c *CloneCredentials) String() string { return "CloneCredentials{redacted}" }

// ForClone returns a's credentials for a clone by git and ssh outside the operator, or
// nil when a is anonymous. An SSH key protected by a passphrase comes decrypted: the
// clone step cannot ask for the passphrase.
func (a *Auth) ForClone() (*CloneCredentials, error) {
	c := a.clone
	c.CABundle = a.CABundle
	if c.Password == "" && len(c.SSHPrivateKey) == 0 && len(c.CABundle) == 0 {
		return nil, nil
	}
	if a.passphrase != "" {
		raw, err := ssh.ParseRawPrivateKeyWithPassphrase(c.SSHPrivateKey, []byte(a.passphrase))
		if err != nil {
			return nil, errors.New("the SSH private key does not decrypt with its passphrase")
		}
		block, err := ssh.MarshalPrivateKey(raw, "")
		if err != nil {
			return nil, errors.New("the SSH private key cannot be written unencrypted for the clone step")
		}
		c.SSHPrivateKey = pem.EncodeToMemory(block)
	}
	return &c, nil
}

// Protocol returns the transport of a repository URL: http, https or ssh
// (scp-like URLs are ssh), or an error for anything else.
func Protocol(url string) (string, error) {
	ep, err := transport.NewEndpoint(url)
	if err != nil {
		return "", repositoryStalling(v1alpha1.ReasonGitCloneFailed, "repository URL cannot be parsed: %s", scrub(err.Error(), nil))
	}
	switch ep.Protocol {
	case "http", "https", protocolSSH:
		if ep.Host == "" {
			// Dialed, an empty host is this machine.
			return "", repositoryStalling(v1alpha1.ReasonGitCloneFailed, "repository URL in spec.repository.url has no host")
		}
		return ep.Protocol, nil
	default:
		return "", repositoryStalling(v1alpha1.ReasonGitCloneFailed,
			"repository URL scheme %q is not supported: use https://, http://, ssh:// or user@host:path", ep.Protocol)
	}
}

// AuthFromSecret builds the authentication for url from a Secret's data. secret is
// nil when the Function references none. Values of the Secret never appear in errors.
func AuthFromSecret(url string, secret *corev1.Secret) (*Auth, error) {
	proto, err := Protocol(url)
	if err != nil {
		return nil, err
	}
	if secret == nil {
		if proto == protocolSSH {
			return nil, stalling(v1alpha1.ReasonAuthSecretNotFound,
				"repository %s is reached over SSH, which needs spec.repository.authSecretRef naming a Secret with keys %s (or %s, or upstream's %s) and %s",
				lineBreaksEscaped.Replace(scrub(url, nil)), KeySSHPrivateKey, KeyIdentity, KeySSHPrivateKeyUpstream, KeyKnownHosts)
		}
		return &Auth{}, nil
	}
	if proto == protocolSSH {
		return sshAuth(url, secret)
	}
	ca, err := caBundle(secret)
	if err != nil {
		return nil, err
	}
	a, err := httpAuth(secret, ca != nil)
	if err != nil {
		return nil, err
	}
	a.CABundle = ca
	a.material = appendField(a.material, KeyCACert, ca)
	return a, nil
}

// httpAuth reads the credentials of an HTTP(S) Secret; one that has none is
// anonymous when it has a CA (hasCA): a public repository on a private CA.
func httpAuth(secret *corev1.Secret, hasCA bool) (*Auth, error) {
	d := secret.Data
	// A value written with `echo` into a file ends in a newline no server expects.
	trim := func(k string) string { return strings.TrimRight(string(d[k]), "\r\n") }
	user, pass, token := trim(KeyUsername), trim(KeyPassword), trim(KeyToken)
	switch {
	case token != "":
		if user == "" {
			user = defaultTokenUser
		}
		return &Auth{Method: &githttp.BasicAuth{Username: user, Password: token}, secrets: []string{token},
			material: material("http", KeyUsername, user, KeyPassword, token),
			clone:    CloneCredentials{Username: user, Password: token}}, nil
	case user != "" && pass != "":
		return &Auth{Method: &githttp.BasicAuth{Username: user, Password: pass}, secrets: []string{pass},
			material: material("http", KeyUsername, user, KeyPassword, pass),
			clone:    CloneCredentials{Username: user, Password: pass}}, nil
	case len(d[KeyToken]) > 0:
		return nil, stalling(v1alpha1.ReasonAuthSecretInvalid, "Secret %q: the value of key %q is empty", secret.Name, KeyToken)
	case user != "":
		return nil, stalling(v1alpha1.ReasonAuthSecretInvalid,
			"Secret %q has key %q but no non-empty %q: HTTP(S) repositories need %q, or %q and %q",
			secret.Name, KeyUsername, KeyPassword, KeyToken, KeyUsername, KeyPassword)
	case pass != "":
		return nil, stalling(v1alpha1.ReasonAuthSecretInvalid,
			"Secret %q has key %q but no %q: HTTP(S) repositories need %q, or %q and %q",
			secret.Name, KeyPassword, KeyUsername, KeyToken, KeyUsername, KeyPassword)
	case hasCA:
		return &Auth{material: material("http")}, nil
	default:
		return nil, stalling(v1alpha1.ReasonAuthSecretInvalid,
			"Secret %q has neither a non-empty key %q nor keys %q and %q, which HTTP(S) repositories need, nor a key %q for a public repository on a private CA (it has: %s)",
			secret.Name, KeyToken, KeyUsername, KeyPassword, KeyCACert, keyList(secret))
	}
}

// caBundle returns the validated ca.crt of an HTTP(S) Secret, nil when it has none.
func caBundle(secret *corev1.Secret) ([]byte, error) {
	ca, ok := secret.Data[KeyCACert]
	if !ok {
		return nil, nil
	}
	if len(bytes.TrimSpace(ca)) == 0 {
		return nil, stalling(v1alpha1.ReasonAuthSecretInvalid, "Secret %q: the value of key %q is empty", secret.Name, KeyCACert)
	}
	if _, err := netguard.ParseCABundle(ca); err != nil {
		return nil, stalling(v1alpha1.ReasonAuthSecretInvalid,
			"Secret %q: key %q must hold the PEM certificates of the CAs to trust: %s", secret.Name, KeyCACert, err)
	}
	return ca, nil
}

// sshAuth reads the credentials of an SSH repository's Secret: a private key under
// any of sshPrivateKeyKeys, its passphrase (if any) under any of passphraseKeys, and
// known_hosts, which is required.
func sshAuth(url string, secret *corev1.Secret) (*Auth, error) {
	d := secret.Data
	ep, _ := transport.NewEndpoint(url) // parsed by Protocol already
	key, err := sshPrivateKey(secret)
	if err != nil {
		return nil, err
	}
	if len(d[KeyKnownHosts]) == 0 {
		return nil, knownHostsMissing(secret, ep)
	}
	passphrase, err := sshKeyPassphrase(secret)
	if err != nil {
		return nil, err
	}
	user := ep.User
	if user == "" {
		user = "git"
	}
	pk, err := gitssh.NewPublicKeys(user, key.value, string(passphrase.value))
	if err != nil {
		return nil, stalling(v1alpha1.ReasonAuthSecretInvalid,
			"Secret %q: the SSH private key cannot be used: %s", secret.Name, describeKeyError(key.value, passphrase))
	}
	callback, err := knownHostsCallback(d[KeyKnownHosts])
	if err != nil {
		return nil, stalling(v1alpha1.ReasonAuthSecretInvalid, "Secret %q: key %q cannot be parsed: %s",
			secret.Name, KeyKnownHosts, err)
	}
	pk.HostKeyCallback = callback
	var secrets []string
	if len(passphrase.value) > 0 {
		secrets = append(secrets, string(passphrase.value))
	}
	// The material names each value by this operator's own key, whichever name the
	// Secret stores it under, and holds the key without the space around it (as the
	// names are compared): the same key has the same Identity under any name.
	m := material("ssh", "user", user, KeySSHPrivateKey, string(bytes.TrimSpace(key.value)), KeyPassphrase, string(passphrase.value),
		KeyKnownHosts, string(d[KeyKnownHosts]))
	return &Auth{Method: pk, secrets: secrets, material: m, passphrase: string(passphrase.value),
		clone: CloneCredentials{SSHPrivateKey: key.value, KnownHosts: d[KeyKnownHosts]}}, nil
}

// describeKeyError says why a private key was refused, without quoting it. passphrase
// names the key the passphrase was read from (empty when the Secret has none).
func describeKeyError(key []byte, passphrase secretValue) string {
	_, err := ssh.ParsePrivateKey(key)
	var missing *ssh.PassphraseMissingError
	switch {
	case errors.As(err, &missing) && len(passphrase.value) == 0:
		return fmt.Sprintf("it is protected by a passphrase and the Secret has no key %s", orList(passphraseKeys[:]))
	case errors.As(err, &missing):
		return fmt.Sprintf("key %q does not decrypt it", passphrase.name)
	case err != nil && strings.Contains(err.Error(), "no key found"):
		return "it is not a PEM-encoded private key"
	default:
		return "it cannot be parsed"
	}
}

// knownHostsCallback builds a host key check from known_hosts content. The x/crypto
// parser reads files only: the content passes through knownHostsFile, which writes
// nowhere on the filesystem (the root filesystem is read-only where config/ runs the
// operator).
func knownHostsCallback(content []byte) (ssh.HostKeyCallback, error) {
	path, done, err := knownHostsFile(content)
	if err != nil {
		return nil, fmt.Errorf("holding known_hosts for its parser: %w", err)
	}
	defer done()
	cb, err := knownhosts.New(path)
	if err != nil {
		return nil, errors.New(strings.ReplaceAll(err.Error(), path, KeyKnownHosts))
	}
	return cb, nil
}

func keyList(secret *corev1.Secret) string {
	if len(secret.Data) == 0 {
		return "no keys"
	}
	keys := make([]string, 0, len(secret.Data))
	for k := range secret.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}

// Identity names the credentials and trust of a, for keys that must tell one
// Secret's content from another's without holding it: a hex HMAC-SHA256, under a
// key drawn at random once per process, of every credential value and the CA
// bundle. It is "anonymous" for an Auth with neither. Equal content gives equal
// identities within one process; a value cannot be recovered or checked from it.
func (a *Auth) Identity() string {
	if a == nil || (a.Method == nil && len(a.CABundle) == 0 && a.material == nil) {
		return Anonymous
	}
	m := a.material
	if m == nil {
		m = methodMaterial(a.Method)
		m = appendField(m, KeyCACert, a.CABundle)
	}
	h := hmac.New(sha256.New, authIdentityKey())
	_, _ = h.Write(m)
	return hex.EncodeToString(h.Sum(nil))
}

// Anonymous is the Identity of no credentials.
const Anonymous = "anonymous"

// authIdentityKey is the HMAC key of Identity, drawn once per process.
var authIdentityKey = sync.OnceValue(func() []byte {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		panic(fmt.Sprintf("drawing the credential identity key: %v", err))
	}
	return k
})

// material encodes kind and name/value pairs unambiguously (each length-prefixed).
// An HTTP credential is encoded as what is sent (user and password, a token being
// the password), so that equal credentials have equal identities however written.
func material(kind string, pairs ...string) []byte {
	m := appendField(nil, "kind", []byte(kind))
	for i := 0; i+1 < len(pairs); i += 2 {
		m = appendField(m, pairs[i], []byte(pairs[i+1]))
	}
	return m
}

func appendField(m []byte, name string, value []byte) []byte {
	m = binary.BigEndian.AppendUint64(m, uint64(len(name)))
	m = append(m, name...)
	m = binary.BigEndian.AppendUint64(m, uint64(len(value)))
	return append(m, value...)
}

// methodMaterial is the credential material of an Auth built without a Secret.
// A method of a kind it does not know is named by its address: never equal to
// another, so never taken for another's.
func methodMaterial(method transport.AuthMethod) []byte {
	switch m := method.(type) {
	case nil:
		return material("anonymous")
	case *githttp.BasicAuth:
		return material("http", KeyUsername, m.Username, KeyPassword, m.Password)
	case *gitssh.PublicKeys:
		key := ""
		if m.Signer != nil {
			key = string(m.Signer.PublicKey().Marshal())
		}
		return material("ssh", "user", m.User, "public-key", key, "method", fmt.Sprintf("%p", m))
	default:
		return material("other", "method", fmt.Sprintf("%T %p", m, m))
	}
}

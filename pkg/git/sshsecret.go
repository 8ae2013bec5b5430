package git

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	corev1 "k8s.io/api/core/v1"

	"github.com/fnops/func-operator/api/v1alpha1"
)

// sshPrivateKeyKeys are the names an SSH Secret may hold its private key under, in
// precedence order: this operator's own (kubernetes.io/ssh-auth's), Flux's, the
// upstream operator's. A Secret that holds different keys under two of them is
// refused rather than one picked silently; the same key under several is that key.
var sshPrivateKeyKeys = [...]string{KeySSHPrivateKey, KeyIdentity, KeySSHPrivateKeyUpstream}

// passphraseKeys are the names an SSH Secret may hold the key's passphrase under, in
// precedence order, with the same rule: this operator's own, the upstream operator's.
var passphraseKeys = [...]string{KeyPassphrase, KeyPassphraseUpstream}

// secretValue is a value of a Secret and the key it was read from; the zero value is
// no value.
type secretValue struct {
	name  string
	value []byte
}

// sshPrivateKey returns the private key of an SSH Secret, or AuthSecretInvalid when
// it has none or two different ones. Whitespace around a PEM block is no part of the
// key: the same key with and without a trailing newline is one key.
func sshPrivateKey(secret *corev1.Secret) (secretValue, error) {
	v, other := oneOf(secret, sshPrivateKeyKeys[:], func(a, b []byte) bool {
		return bytes.Equal(bytes.TrimSpace(a), bytes.TrimSpace(b))
	})
	switch {
	case other != "":
		return secretValue{}, stalling(v1alpha1.ReasonAuthSecretInvalid,
			"Secret %q holds different SSH private keys under keys %q and %q: keep one of them (%s are names of the same key)",
			secret.Name, v.name, other, andList(sshPrivateKeyKeys[:]))
	case v.name == "":
		return secretValue{}, stalling(v1alpha1.ReasonAuthSecretInvalid,
			"Secret %q has no key %s holding the private key, which SSH repositories need (it has: %s)",
			secret.Name, orList(sshPrivateKeyKeys[:]), keyList(secret))
	}
	return v, nil
}

// sshKeyPassphrase returns the passphrase of an SSH Secret's private key, the zero
// secretValue when it has none, or AuthSecretInvalid when it has two different ones.
// A passphrase is compared as it is: every byte of it counts.
func sshKeyPassphrase(secret *corev1.Secret) (secretValue, error) {
	v, other := oneOf(secret, passphraseKeys[:], bytes.Equal)
	if other != "" {
		return secretValue{}, stalling(v1alpha1.ReasonAuthSecretInvalid,
			"Secret %q holds different passphrases under keys %q and %q: keep one of them (%s are names of the same key)",
			secret.Name, v.name, other, andList(passphraseKeys[:]))
	}
	return v, nil
}

// oneOf returns the first non-empty value of secret under names (an empty value is
// no value), and other, the first later name holding a value that is not the same
// (by same), or "" when every value is the same.
func oneOf(secret *corev1.Secret, names []string, same func(a, b []byte) bool) (v secretValue, other string) {
	for _, n := range names {
		value := secret.Data[n]
		switch {
		case len(value) == 0:
		case v.name == "":
			v = secretValue{name: n, value: value}
		case !same(v.value, value):
			return v, n
		}
	}
	return v, ""
}

// knownHostsMissing is the AuthSecretInvalid of an SSH Secret without known_hosts:
// what to add, and the commands that produce it for the repository's host and port
// and add it to the Secret.
func knownHostsMissing(secret *corev1.Secret, ep *transport.Endpoint) error {
	host := strings.TrimSuffix(strings.TrimPrefix(ep.Host, "["), "]") // ssh-keyscan takes an IPv6 address bare
	port := ep.Port
	if port == 0 {
		port = 22
	}
	ns := ""
	if secret.Namespace != "" {
		ns = "-n " + shellWord(secret.Namespace) + " "
	}
	return stalling(v1alpha1.ReasonAuthSecretInvalid,
		"Secret %q has no key %q: the host key of an SSH repository is always verified, so known_hosts is required. "+
			"Add key %q holding the host's public keys in OpenSSH known_hosts format: "+
			"`ssh-keyscan -p %d %s > known_hosts` writes them (check them against the fingerprints the host publishes: `ssh-keygen -lf known_hosts`), "+
			"and `kubectl %spatch secret %s --type merge -p \"{\\\"data\\\":{\\\"known_hosts\\\":\\\"$(base64 -w0 known_hosts)\\\"}}\"` adds them to the Secret",
		secret.Name, KeyKnownHosts, KeyKnownHosts, port, shellWord(lineBreaksEscaped.Replace(host)), ns, shellWord(secret.Name))
}

// shellWord quotes s for a POSIX shell when it holds anything but the characters of
// host names, addresses and Kubernetes names, so that a command in a message can be
// pasted as it is.
func shellWord(s string) string {
	unsafe := func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') && !strings.ContainsRune(".-_:%", r)
	}
	if s != "" && strings.IndexFunc(s, unsafe) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// orList is names quoted and joined by "or": "a", "b" or "c".
func orList(names []string) string { return joinQuoted(names, "or") }

// andList is names quoted and joined by "and".
func andList(names []string) string { return joinQuoted(names, "and") }

func joinQuoted(names []string, conj string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	if len(q) < 2 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " " + conj + " " + q[len(q)-1]
}

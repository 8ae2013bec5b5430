package git

import (
	"bytes"
	"strings"
	"testing"

	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fnops/func-operator/api/v1alpha1"
)

// TestSSHKeyNames reads SSH Secrets written with each accepted name of the private key
// (ours, Flux's, the upstream operator's) and of its passphrase (ours, upstream's):
// the same key is the same credentials (Identity, ForClone) under any name; two
// different values under two names are refused, naming both keys, never a value.
func TestSSHKeyNames(t *testing.T) {
	const (
		url        = "ssh://git@git.example.com:2222/org/repo.git"
		passphrase = "Passphrase-Value-5151"
	)
	key := newTestKey(t)
	other := newTestKey(t)
	encrypted := key.encrypted(t, passphrase)
	knownHosts := []byte(knownhosts.Line([]string{"[git.example.com]:2222"}, newTestKey(t).signer.PublicKey()) + "\n")
	read := func(t *testing.T, data map[string][]byte) (*Auth, error) {
		t.Helper()
		data[KeyKnownHosts] = knownHosts
		return AuthFromSecret(url, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "fns", Name: "repo-creds"}, Data: data})
	}
	ours, err := read(t, map[string][]byte{KeySSHPrivateKey: key.pem})
	if err != nil {
		t.Fatal(err)
	}
	oursEncrypted, err := read(t, map[string][]byte{KeySSHPrivateKey: encrypted, KeyPassphrase: []byte(passphrase)})
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		data map[string][]byte
		// same is the Auth of ours names with the same content: equal Identity.
		same        *Auth
		wantSecrets []string
		wantErr     *classified
	}{{
		name: "ssh-privatekey alone",
		data: map[string][]byte{KeySSHPrivateKey: key.pem},
		same: ours,
	}, {
		name: "identity (Flux) alone",
		data: map[string][]byte{KeyIdentity: key.pem},
		same: ours,
	}, {
		name: "sshPrivateKey (upstream) alone",
		data: map[string][]byte{KeySSHPrivateKeyUpstream: key.pem},
		same: ours,
	}, {
		name: "ssh-privatekey and sshPrivateKey, same key",
		data: map[string][]byte{KeySSHPrivateKey: key.pem, KeySSHPrivateKeyUpstream: key.pem},
		same: ours,
	}, {
		name: "all three names, same key, one without its trailing newline",
		data: map[string][]byte{KeySSHPrivateKey: key.pem, KeyIdentity: key.pem, KeySSHPrivateKeyUpstream: bytes.TrimSpace(key.pem)},
		same: ours,
	}, {
		name: "an empty ssh-privatekey is no key: sshPrivateKey is used",
		data: map[string][]byte{KeySSHPrivateKey: {}, KeySSHPrivateKeyUpstream: key.pem},
		same: ours,
	}, {
		name: "ssh-privatekey and sshPrivateKey, different keys",
		data: map[string][]byte{KeySSHPrivateKey: key.pem, KeySSHPrivateKeyUpstream: other.pem},
		wantErr: &classified{Reason: v1alpha1.ReasonAuthSecretInvalid, Stalling: true,
			Message: `Secret "repo-creds" holds different SSH private keys under keys "ssh-privatekey" and "sshPrivateKey": keep one of them ("ssh-privatekey", "identity" and "sshPrivateKey" are names of the same key)`},
	}, {
		name: "identity and sshPrivateKey, different keys",
		data: map[string][]byte{KeyIdentity: other.pem, KeySSHPrivateKeyUpstream: key.pem},
		wantErr: &classified{Reason: v1alpha1.ReasonAuthSecretInvalid, Stalling: true,
			Message: `Secret "repo-creds" holds different SSH private keys under keys "identity" and "sshPrivateKey": keep one of them ("ssh-privatekey", "identity" and "sshPrivateKey" are names of the same key)`},
	}, {
		name: "the same key, encrypted under one name and not under the other, is two values",
		data: map[string][]byte{KeySSHPrivateKey: key.pem, KeySSHPrivateKeyUpstream: encrypted, KeyPassphraseUpstream: []byte(passphrase)},
		wantErr: &classified{Reason: v1alpha1.ReasonAuthSecretInvalid, Stalling: true,
			Message: `Secret "repo-creds" holds different SSH private keys under keys "ssh-privatekey" and "sshPrivateKey": keep one of them ("ssh-privatekey", "identity" and "sshPrivateKey" are names of the same key)`},
	}, {
		name:        "upstream's names: encrypted key, passphrase under sshPrivateKeyPassword",
		data:        map[string][]byte{KeySSHPrivateKeyUpstream: encrypted, KeyPassphraseUpstream: []byte(passphrase)},
		same:        oursEncrypted,
		wantSecrets: []string{passphrase},
	}, {
		name:        "ours and upstream's passphrase, same value",
		data:        map[string][]byte{KeySSHPrivateKey: encrypted, KeyPassphrase: []byte(passphrase), KeyPassphraseUpstream: []byte(passphrase)},
		same:        oursEncrypted,
		wantSecrets: []string{passphrase},
	}, {
		name: "ours and upstream's passphrase, different values",
		data: map[string][]byte{KeySSHPrivateKey: encrypted, KeyPassphrase: []byte(passphrase), KeyPassphraseUpstream: []byte("Other-Passphrase-6262")},
		wantErr: &classified{Reason: v1alpha1.ReasonAuthSecretInvalid, Stalling: true,
			Message: `Secret "repo-creds" holds different passphrases under keys "passphrase" and "sshPrivateKeyPassword": keep one of them ("passphrase" and "sshPrivateKeyPassword" are names of the same key)`},
	}, {
		name: "a wrong passphrase under upstream's name is named",
		data: map[string][]byte{KeySSHPrivateKeyUpstream: encrypted, KeyPassphraseUpstream: []byte("Wrong-Passphrase-7373")},
		wantErr: &classified{Reason: v1alpha1.ReasonAuthSecretInvalid, Stalling: true,
			Message: `Secret "repo-creds": the SSH private key cannot be used: key "sshPrivateKeyPassword" does not decrypt it`},
	}, {
		name: "an encrypted key under upstream's name without a passphrase lists the passphrase names",
		data: map[string][]byte{KeySSHPrivateKeyUpstream: encrypted},
		wantErr: &classified{Reason: v1alpha1.ReasonAuthSecretInvalid, Stalling: true,
			Message: `Secret "repo-creds": the SSH private key cannot be used: it is protected by a passphrase and the Secret has no key "passphrase" or "sshPrivateKeyPassword"`},
	}, {
		name: "no key under any name lists the names",
		data: map[string][]byte{KeyPassphraseUpstream: []byte(passphrase), "ssh_private_key": key.pem},
		wantErr: &classified{Reason: v1alpha1.ReasonAuthSecretInvalid, Stalling: true,
			Message: `Secret "repo-creds" has no key "ssh-privatekey", "identity" or "sshPrivateKey" holding the private key, which SSH repositories need (it has: known_hosts, sshPrivateKeyPassword, ssh_private_key)`},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := map[string][]byte{}
			for k, v := range tt.data {
				data[k] = v
			}
			got, err := read(t, data)
			var gotErr *classified
			if err != nil {
				assertNoSecretValues(t, err.Error(), data)
				var ok bool
				if gotErr, ok = asClassified(err); !ok {
					t.Fatalf("error %v is not a classified error", err)
				}
			}
			if diff := cmp.Diff(tt.wantErr, gotErr); diff != "" {
				t.Fatalf("error (-want +got):\n%s", diff)
			}
			if err != nil {
				return
			}
			if diff := cmp.Diff(tt.wantSecrets, got.secrets); diff != "" {
				t.Errorf("secrets to scrub (-want +got):\n%s", diff)
			}
			pk, ok := got.Method.(*gitssh.PublicKeys)
			if !ok {
				t.Fatalf("Method = %T, want *ssh.PublicKeys", got.Method)
			}
			if !bytes.Equal(key.signer.PublicKey().Marshal(), pk.Signer.PublicKey().Marshal()) {
				t.Error("the Auth signs with another key")
			}
			if got.Identity() != tt.same.Identity() {
				t.Error("Identity differs from that of the same content under this operator's own key names")
			}
			// The build's clone step gets the key decrypted, whatever its name.
			clone, err := got.ForClone()
			if err != nil {
				t.Fatalf("ForClone: %v", err)
			}
			signer, err := ssh.ParsePrivateKey(clone.SSHPrivateKey)
			if err != nil {
				t.Fatalf("the clone step's key does not parse without a passphrase: %v", err)
			}
			if !bytes.Equal(key.signer.PublicKey().Marshal(), signer.PublicKey().Marshal()) {
				t.Error("the clone step's key is another key")
			}
			if diff := cmp.Diff(knownHosts, clone.KnownHosts); diff != "" {
				t.Errorf("the clone step's known_hosts (-want +got):\n%s", diff)
			}
		})
	}
	if ours.Identity() == oursEncrypted.Identity() {
		t.Error("the plain and the encrypted key have one Identity: the cases above compare nothing")
	}
	// The same key with a trailing newline (written with echo), under upstream's name:
	// one Identity, as the names compare equal.
	newline, err := read(t, map[string][]byte{KeySSHPrivateKeyUpstream: append(bytes.TrimSpace(key.pem), '\n', '\n')})
	if err != nil {
		t.Fatal(err)
	}
	if newline.Identity() != ours.Identity() {
		t.Error("the same key with space around it has another Identity")
	}
}

// TestKnownHostsMissing reads the message of an SSH Secret without known_hosts: what
// to add, and the commands that make it for the repository's own host and port and
// add it to the Secret.
func TestKnownHostsMissing(t *testing.T) {
	key := newTestKey(t)
	for _, tt := range []struct {
		name, namespace, url string
		// wantHas are substrings of the message.
		wantHas []string
	}{{
		name: "ssh URL with a port", namespace: "fns", url: "ssh://git@git.example.com:2222/org/repo.git",
		wantHas: []string{"`ssh-keyscan -p 2222 git.example.com > known_hosts`", "`kubectl -n fns patch secret repo-creds --type merge -p "},
	}, {
		name: "ssh URL without a port is port 22", url: "ssh://git.example.com/org/repo.git",
		wantHas: []string{"`ssh-keyscan -p 22 git.example.com > known_hosts`", "`kubectl patch secret repo-creds --type merge -p "},
	}, {
		name: "scp-like URL is port 22", namespace: "team-a", url: "git@github.com:org/repo.git",
		wantHas: []string{"`ssh-keyscan -p 22 github.com > known_hosts`", "`kubectl -n team-a patch secret repo-creds "},
	}, {
		name: "IPv6 address, bare for ssh-keyscan", url: "ssh://git@[fd00::7]:2200/org/repo.git",
		wantHas: []string{"`ssh-keyscan -p 2200 fd00::7 > known_hosts`"},
	}, {
		name: "a host a shell would read otherwise is quoted", url: "git@h$(id);x:org/repo.git",
		wantHas: []string{"`ssh-keyscan -p 22 'h$(id);x' > known_hosts`"},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			for _, name := range sshPrivateKeyKeys {
				data := map[string][]byte{name: key.pem}
				_, err := AuthFromSecret(tt.url, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tt.namespace, Name: "repo-creds"}, Data: data})
				got, ok := asClassified(err)
				if !ok {
					t.Fatalf("error %v is not a classified error", err)
				}
				if got.Reason != v1alpha1.ReasonAuthSecretInvalid || !got.Stalling {
					t.Errorf("%s: reason %s (stalling %t), want a stalling AuthSecretInvalid", name, got.Reason, got.Stalling)
				}
				want := append([]string{`Secret "repo-creds" has no key "known_hosts": `,
					`Add key "known_hosts" holding the host's public keys in OpenSSH known_hosts format`,
					`-p "{\"data\":{\"known_hosts\":\"$(base64 -w0 known_hosts)\"}}"` + "` adds them to the Secret"}, tt.wantHas...)
				for _, w := range want {
					if !strings.Contains(got.Message, w) {
						t.Errorf("%s: message %q\nlacks %q", name, got.Message, w)
					}
				}
				assertNoSecretValues(t, got.Message, data)
			}
		})
	}
}

func TestShellWord(t *testing.T) {
	for in, want := range map[string]string{
		"git.example.com": "git.example.com",
		"fd00::7":         "fd00::7",
		"fe80::1%eth0":    "fe80::1%eth0",
		"":                "''",
		"a b":             "'a b'",
		"$(id)":           "'$(id)'",
		"it's":            `'it'\''s'`,
	} {
		if got := shellWord(in); got != want {
			t.Errorf("shellWord(%q) = %s, want %s", in, got, want)
		}
	}
}

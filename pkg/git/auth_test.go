package git

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fnops/func-operator/api/v1alpha1"
)

// testKey is an ed25519 key in the encodings a Secret may hold.
type testKey struct {
	priv   ed25519.PrivateKey
	signer ssh.Signer
	pem    []byte
}

func newTestKey(t *testing.T) testKey {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatalf("generating key: %v", err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatalf("wrapping key: %v", err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatalf("marshalling key: %v", err)
	}
	return testKey{priv: priv, signer: signer, pem: pem.EncodeToMemory(block)}
}

// encrypted returns the key protected by passphrase.
func (k testKey) encrypted(t *testing.T, passphrase string) []byte {
	t.Helper()
	block, err := ssh.MarshalPrivateKeyWithPassphrase(k.priv, "", []byte(passphrase))
	if err != nil {
		t.Fatalf("encrypting key: %v", err)
	}
	return pem.EncodeToMemory(block)
}

// secretValueKeys are the keys of an auth Secret whose values are credentials.
var secretValueKeys = []string{KeyToken, KeyPassword, KeyPassphrase, KeyPassphraseUpstream, KeySSHPrivateKey, KeyIdentity,
	KeySSHPrivateKeyUpstream}

// assertNoSecretValues fails when msg holds a credential of data: a whole value, or
// any line of a multi-line one (such as the body of a PEM key).
func assertNoSecretValues(t *testing.T, msg string, data map[string][]byte) {
	t.Helper()
	for _, k := range secretValueKeys {
		v := string(data[k])
		if len(v) < 3 {
			continue
		}
		if strings.Contains(msg, v) {
			t.Errorf("message reveals the value of key %q: %q", k, msg)
			continue
		}
		for _, line := range strings.Split(v, "\n") {
			if len(line) >= 16 && !strings.HasPrefix(line, "-----") && strings.Contains(msg, line) {
				t.Errorf("message reveals part of key %q: %q", k, msg)
			}
		}
	}
}

func TestProtocol(t *testing.T) {
	tests := []struct {
		url     string
		want    string
		wantMsg string
	}{
		{url: "https://github.com/org/repo.git", want: "https"},
		{url: "https://github.com", want: "https"},
		{url: "HTTPS://github.com/org/repo.git", want: "https"},
		{url: "http://git.example.com:8080/org/repo.git", want: "http"},
		{url: "ssh://git@github.com/org/repo.git", want: "ssh"},
		{url: "ssh://alice@git.example.com:2222/srv/repo.git", want: "ssh"},
		{url: "git@github.com:org/repo.git", want: "ssh"},
		{url: "deploy@git.example.com:/srv/git/repo.git", want: "ssh"},
		{url: "ftp://x/y", wantMsg: `repository URL scheme "ftp" is not supported: use https://, http://, ssh:// or user@host:path`},
		{url: "file:///tmp/x", wantMsg: `repository URL scheme "file" is not supported: use https://, http://, ssh:// or user@host:path`},
		{url: "/tmp/x", wantMsg: `repository URL scheme "file" is not supported: use https://, http://, ssh:// or user@host:path`},
		{url: "git://github.com/org/repo.git", wantMsg: `repository URL scheme "git" is not supported: use https://, http://, ssh:// or user@host:path`},
		{url: "", wantMsg: `repository URL scheme "file" is not supported: use https://, http://, ssh:// or user@host:path`},
		{url: "https://%zz/x", wantMsg: `repository URL cannot be parsed: parse "https://%zz/x": invalid URL escape "%zz"`},
		{url: "https://user:tok3n-value@[::1", wantMsg: `repository URL cannot be parsed: parse "https://[redacted]@[::1": missing ']' in host`},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			got, err := Protocol(tt.url)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Protocol (-want +got):\n%s", diff)
			}
			var gotErr *classified
			if err != nil {
				var ok bool
				if gotErr, ok = asClassified(err); !ok {
					t.Fatalf("error %v is not a classified error", err)
				}
			}
			var wantErr *classified
			if tt.wantMsg != "" {
				wantErr = &classified{Reason: v1alpha1.ReasonGitCloneFailed, Message: tt.wantMsg, Stalling: true}
			}
			if diff := cmp.Diff(wantErr, gotErr); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAuthFromSecret(t *testing.T) {
	// As config/ runs the operator: the root filesystem is read-only, so no temporary
	// file can be made outside the work directory. SSH credentials work all the same.
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "not-there"))
	const (
		httpsURL = "https://git.example.com/org/repo.git"
		sshURL   = "ssh://git@git.example.com:2222/org/repo.git"
		// The values are long and distinctive, so that any leak is found.
		token      = "ghp_T0kenValue-0123456789"
		password   = "Pa55word-Value-9876543210"
		passphrase = "Passphrase-Value-4242"
		// knownHostsMissingMsg says what to add and how, for sshURL's host and port.
		knownHostsMissingMsg = `Secret "repo-creds" has no key "known_hosts": the host key of an SSH repository is always verified, so known_hosts is required. ` +
			`Add key "known_hosts" holding the host's public keys in OpenSSH known_hosts format: ` +
			"`ssh-keyscan -p 2222 git.example.com > known_hosts` writes them (check them against the fingerprints the host publishes: `ssh-keygen -lf known_hosts`), " +
			"and `kubectl -n fns patch secret repo-creds --type merge -p \"{\\\"data\\\":{\\\"known_hosts\\\":\\\"$(base64 -w0 known_hosts)\\\"}}\"` adds them to the Secret"
	)
	key := newTestKey(t)
	encryptedKey := key.encrypted(t, passphrase)
	hostKey := newTestKey(t).signer.PublicKey()
	otherHostKey := newTestKey(t).signer.PublicKey()
	knownHosts := []byte("# the host of the tests\n" + knownhosts.Line([]string{"[git.example.com]:2222"}, hostKey) + "\n")

	type wantSSH struct {
		user string
	}
	tests := []struct {
		name string
		url  string
		// data is the Secret's data; nil means no Secret.
		data     map[string][]byte
		noSecret bool
		// want is the go-git auth for HTTP(S), nil for anonymous.
		want        *githttp.BasicAuth
		wantSSH     *wantSSH
		wantSecrets []string
		wantErr     *classified
	}{{
		name:     "https without Secret is anonymous",
		url:      httpsURL,
		noSecret: true,
	}, {
		name:     "http without Secret is anonymous",
		url:      "http://git.example.com/org/repo.git",
		noSecret: true,
	}, {
		name:     "ssh without Secret",
		url:      sshURL,
		noSecret: true,
		wantErr: &classified{Reason: v1alpha1.ReasonAuthSecretNotFound, Stalling: true,
			Message: "repository " + sshURL + " is reached over SSH, which needs spec.repository.authSecretRef naming a Secret with keys ssh-privatekey (or identity, or upstream's sshPrivateKey) and known_hosts"},
	}, {
		name:     "scp-like URL is ssh",
		url:      "git@github.com:org/repo.git",
		noSecret: true,
		wantErr: &classified{Reason: v1alpha1.ReasonAuthSecretNotFound, Stalling: true,
			Message: "repository git@github.com:org/repo.git is reached over SSH, which needs spec.repository.authSecretRef naming a Secret with keys ssh-privatekey (or identity, or upstream's sshPrivateKey) and known_hosts"},
	}, {
		name:        "token is sent as the password of user git",
		url:         httpsURL,
		data:        map[string][]byte{KeyToken: []byte(token)},
		want:        &githttp.BasicAuth{Username: "git", Password: token},
		wantSecrets: []string{token},
	}, {
		name:        "a trailing newline of a token is dropped",
		url:         httpsURL,
		data:        map[string][]byte{KeyToken: []byte(token + "\n")},
		want:        &githttp.BasicAuth{Username: "git", Password: token},
		wantSecrets: []string{token},
	}, {
		name: "an empty token is named",
		url:  httpsURL,
		data: map[string][]byte{KeyToken: []byte("\n")},
		wantErr: &classified{Reason: v1alpha1.ReasonAuthSecretInvalid, Stalling: true,
			Message: `Secret "repo-creds": the value of key "token" is empty`},
	}, {
		name:        "token with username",
		url:         httpsURL,
		data:        map[string][]byte{KeyToken: []byte(token), KeyUsername: []byte("alice")},
		want:        &githttp.BasicAuth{Username: "alice", Password: token},
		wantSecrets: []string{token},
	}, {
		name:        "username and password",
		url:         httpsURL,
		data:        map[string][]byte{KeyUsername: []byte("alice"), KeyPassword: []byte(password)},
		want:        &githttp.BasicAuth{Username: "alice", Password: password},
		wantSecrets: []string{password},
	}, {
		name:        "token wins over a password",
		url:         httpsURL,
		data:        map[string][]byte{KeyToken: []byte(token), KeyUsername: []byte("alice"), KeyPassword: []byte(password)},
		want:        &githttp.BasicAuth{Username: "alice", Password: token},
		wantSecrets: []string{token},
	}, {
		name: "username without password",
		url:  httpsURL,
		data: map[string][]byte{KeyUsername: []byte("alice")},
		wantErr: &classified{Reason: v1alpha1.ReasonAuthSecretInvalid, Stalling: true,
			Message: `Secret "repo-creds" has key "username" but no non-empty "password": HTTP(S) repositories need "token", or "username" and "password"`},
	}, {
		name: "password without username",
		url:  httpsURL,
		data: map[string][]byte{KeyPassword: []byte(password)},
		wantErr: &classified{Reason: v1alpha1.ReasonAuthSecretInvalid, Stalling: true,
			Message: `Secret "repo-creds" has key "password" but no "username": HTTP(S) repositories need "token", or "username" and "password"`},
	}, {
		name: "empty Secret",
		url:  httpsURL,
		data: map[string][]byte{},
		wantErr: &classified{Reason: v1alpha1.ReasonAuthSecretInvalid, Stalling: true,
			Message: `Secret "repo-creds" has neither a non-empty key "token" nor keys "username" and "password", which HTTP(S) repositories need, nor a key "ca.crt" for a public repository on a private CA (it has: no keys)`},
	}, {
		name: "SSH Secret for an https repository lists its keys, not their values",
		url:  httpsURL,
		data: map[string][]byte{KeySSHPrivateKey: key.pem, KeyKnownHosts: knownHosts, KeyPassphrase: []byte(passphrase)},
		wantErr: &classified{Reason: v1alpha1.ReasonAuthSecretInvalid, Stalling: true,
			Message: `Secret "repo-creds" has neither a non-empty key "token" nor keys "username" and "password", which HTTP(S) repositories need, nor a key "ca.crt" for a public repository on a private CA (it has: known_hosts, passphrase, ssh-privatekey)`},
	}, {
		name:    "ssh key and known_hosts",
		url:     sshURL,
		data:    map[string][]byte{KeySSHPrivateKey: key.pem, KeyKnownHosts: knownHosts},
		wantSSH: &wantSSH{user: "git"},
	}, {
		name:    "ssh user comes from the URL",
		url:     "ssh://alice@git.example.com:2222/org/repo.git",
		data:    map[string][]byte{KeySSHPrivateKey: key.pem, KeyKnownHosts: knownHosts},
		wantSSH: &wantSSH{user: "alice"},
	}, {
		name:    "ssh user defaults to git",
		url:     "ssh://git.example.com:2222/org/repo.git",
		data:    map[string][]byte{KeySSHPrivateKey: key.pem, KeyKnownHosts: knownHosts},
		wantSSH: &wantSSH{user: "git"},
	}, {
		name:    "scp-like URL user",
		url:     "deploy@git.example.com:org/repo.git",
		data:    map[string][]byte{KeySSHPrivateKey: key.pem, KeyKnownHosts: knownHosts},
		wantSSH: &wantSSH{user: "deploy"},
	}, {
		name:    "identity is an alias of ssh-privatekey",
		url:     sshURL,
		data:    map[string][]byte{KeyIdentity: key.pem, KeyKnownHosts: knownHosts},
		wantSSH: &wantSSH{user: "git"},
	}, {
		// Issue 25: no silent pick between two different keys (TestSSHKeyNames).
		name: "different values under ssh-privatekey and identity are refused",
		url:  sshURL,
		data: map[string][]byte{KeySSHPrivateKey: []byte("not a key at all"), KeyIdentity: key.pem, KeyKnownHosts: knownHosts},
		wantErr: &classified{Reason: v1alpha1.ReasonAuthSecretInvalid, Stalling: true,
			Message: `Secret "repo-creds" holds different SSH private keys under keys "ssh-privatekey" and "identity": keep one of them ("ssh-privatekey", "identity" and "sshPrivateKey" are names of the same key)`},
	}, {
		name:        "encrypted key with its passphrase",
		url:         sshURL,
		data:        map[string][]byte{KeySSHPrivateKey: encryptedKey, KeyPassphrase: []byte(passphrase), KeyKnownHosts: knownHosts},
		wantSSH:     &wantSSH{user: "git"},
		wantSecrets: []string{passphrase},
	}, {
		name:        "plain key with a needless passphrase",
		url:         sshURL,
		data:        map[string][]byte{KeySSHPrivateKey: key.pem, KeyPassphrase: []byte(passphrase), KeyKnownHosts: knownHosts},
		wantSSH:     &wantSSH{user: "git"},
		wantSecrets: []string{passphrase},
	}, {
		name: "ssh key without known_hosts",
		url:  sshURL,
		data: map[string][]byte{KeySSHPrivateKey: key.pem},
		wantErr: &classified{Reason: v1alpha1.ReasonAuthSecretInvalid, Stalling: true,
			Message: knownHostsMissingMsg},
	}, {
		name: "ssh key with empty known_hosts",
		url:  sshURL,
		data: map[string][]byte{KeySSHPrivateKey: key.pem, KeyKnownHosts: {}},
		wantErr: &classified{Reason: v1alpha1.ReasonAuthSecretInvalid, Stalling: true,
			Message: knownHostsMissingMsg},
	}, {
		name: "ssh without key",
		url:  sshURL,
		data: map[string][]byte{KeyToken: []byte(token), KeyKnownHosts: knownHosts},
		wantErr: &classified{Reason: v1alpha1.ReasonAuthSecretInvalid, Stalling: true,
			Message: `Secret "repo-creds" has no key "ssh-privatekey", "identity" or "sshPrivateKey" holding the private key, which SSH repositories need (it has: known_hosts, token)`},
	}, {
		name: "garbage key",
		url:  sshURL,
		data: map[string][]byte{KeySSHPrivateKey: []byte("this-is-not-a-private-key-at-all"), KeyKnownHosts: knownHosts},
		wantErr: &classified{Reason: v1alpha1.ReasonAuthSecretInvalid, Stalling: true,
			Message: `Secret "repo-creds": the SSH private key cannot be used: it is not a PEM-encoded private key`},
	}, {
		name: "corrupt PEM key",
		url:  sshURL,
		data: map[string][]byte{KeySSHPrivateKey: []byte("-----BEGIN OPENSSH PRIVATE KEY-----\nY29ycnVwdGVkLWtleS1ib2R5LXZhbHVl\n-----END OPENSSH PRIVATE KEY-----\n"), KeyKnownHosts: knownHosts},
		wantErr: &classified{Reason: v1alpha1.ReasonAuthSecretInvalid, Stalling: true,
			Message: `Secret "repo-creds": the SSH private key cannot be used: it cannot be parsed`},
	}, {
		name: "encrypted key without passphrase",
		url:  sshURL,
		data: map[string][]byte{KeySSHPrivateKey: encryptedKey, KeyKnownHosts: knownHosts},
		wantErr: &classified{Reason: v1alpha1.ReasonAuthSecretInvalid, Stalling: true,
			Message: `Secret "repo-creds": the SSH private key cannot be used: it is protected by a passphrase and the Secret has no key "passphrase" or "sshPrivateKeyPassword"`},
	}, {
		name: "encrypted key with the wrong passphrase",
		url:  sshURL,
		data: map[string][]byte{KeySSHPrivateKey: encryptedKey, KeyPassphrase: []byte("Wrong-Passphrase-1234"), KeyKnownHosts: knownHosts},
		wantErr: &classified{Reason: v1alpha1.ReasonAuthSecretInvalid, Stalling: true,
			Message: `Secret "repo-creds": the SSH private key cannot be used: key "passphrase" does not decrypt it`},
	}, {
		name: "known_hosts that does not parse",
		url:  sshURL,
		data: map[string][]byte{KeySSHPrivateKey: key.pem, KeyKnownHosts: []byte("git.example.com ssh-ed25519 not-base64!\n")},
		wantErr: &classified{Reason: v1alpha1.ReasonAuthSecretInvalid, Stalling: true,
			Message: `Secret "repo-creds": key "known_hosts" cannot be parsed: knownhosts: known_hosts:1: illegal base64 data at input byte 3`},
	}, {
		name: "unsupported scheme with a Secret",
		url:  "ftp://x/y",
		data: map[string][]byte{KeyToken: []byte(token)},
		wantErr: &classified{Reason: v1alpha1.ReasonGitCloneFailed, Stalling: true,
			Message: `repository URL scheme "ftp" is not supported: use https://, http://, ssh:// or user@host:path`},
	}, {
		name:     "file URL",
		url:      "file:///tmp/x",
		noSecret: true,
		wantErr: &classified{Reason: v1alpha1.ReasonGitCloneFailed, Stalling: true,
			Message: `repository URL scheme "file" is not supported: use https://, http://, ssh:// or user@host:path`},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var secret *corev1.Secret
			if !tt.noSecret {
				secret = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "fns", Name: "repo-creds"}, Data: tt.data}
			}
			got, err := AuthFromSecret(tt.url, secret)

			var gotErr *classified
			if err != nil {
				var ok bool
				if gotErr, ok = asClassified(err); !ok {
					t.Fatalf("error %v is not a classified error", err)
				}
				assertNoSecretValues(t, err.Error(), tt.data)
				if strings.Contains(err.Error(), "known_hosts-") || strings.Contains(err.Error(), "/proc/self/fd") {
					t.Errorf("message names the temporary known_hosts file: %q", err)
				}
			}
			if diff := cmp.Diff(tt.wantErr, gotErr); diff != "" {
				t.Fatalf("error (-want +got):\n%s", diff)
			}
			if err != nil {
				if got != nil {
					t.Errorf("Auth = %+v with an error", got)
				}
				return
			}
			if got == nil {
				t.Fatal("Auth is nil")
			}
			if diff := cmp.Diff(tt.wantSecrets, got.secrets); diff != "" {
				t.Errorf("secrets to scrub (-want +got):\n%s", diff)
			}
			switch {
			case tt.wantSSH != nil:
				pk, ok := got.Method.(*gitssh.PublicKeys)
				if !ok {
					t.Fatalf("Method = %T, want *ssh.PublicKeys", got.Method)
				}
				if diff := cmp.Diff(tt.wantSSH.user, pk.User); diff != "" {
					t.Errorf("ssh user (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(key.signer.PublicKey().Marshal(), pk.Signer.PublicKey().Marshal()); diff != "" {
					t.Errorf("ssh key (-want +got):\n%s", diff)
				}
				// Host keys are checked against known_hosts, never accepted blindly.
				addr := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 2222}
				if err := pk.HostKeyCallback("git.example.com:2222", addr, hostKey); err != nil {
					t.Errorf("host key from known_hosts refused: %v", err)
				}
				if err := pk.HostKeyCallback("git.example.com:2222", addr, otherHostKey); err == nil {
					t.Error("another host key for the same host was accepted")
				}
				if err := pk.HostKeyCallback("other.example.com:22", addr, hostKey); err == nil {
					t.Error("a host missing from known_hosts was accepted")
				}
			case tt.want != nil:
				if diff := cmp.Diff(tt.want, got.Method); diff != "" {
					t.Errorf("Method (-want +got):\n%s", diff)
				}
			default:
				if got.Method != nil {
					t.Errorf("Method = %T, want nil (anonymous)", got.Method)
				}
			}
		})
	}
}

func TestScrub(t *testing.T) {
	tests := []struct {
		name    string
		msg     string
		secrets []string
		want    string
	}{{
		name: "credentials in a URL",
		msg:  `Get "https://user:tok@host/x/info/refs": dial tcp: refused`,
		want: `Get "https://[redacted]@host/x/info/refs": dial tcp: refused`,
	}, {
		name: "empty user in a URL",
		msg:  "cloning http://:tok@host/x",
		want: "cloning http://[redacted]@host/x",
	}, {
		name: "every URL of the message",
		msg:  "https://a:b@one/x and ssh://c:d@two/y",
		want: "https://[redacted]@one/x and ssh://[redacted]@two/y",
	}, {
		name: "a token as the user of an HTTPS URL",
		msg:  `Get "https://ghp_abc123@github.com/org/repo.git/info/refs": 401`,
		want: `Get "https://[redacted]@github.com/org/repo.git/info/refs": 401`,
	}, {
		name: "user without password is no credential",
		msg:  "cloning ssh://git@host/x and git@host:org/repo.git",
		want: "cloning ssh://git@host/x and git@host:org/repo.git",
	}, {
		name:    "secret values, wherever they are",
		msg:     "server said: bad token s3cret-t0ken (s3cret-t0ken)",
		secrets: []string{"s3cret-t0ken"},
		want:    "server said: bad token [redacted] ([redacted])",
	}, {
		name:    "several secrets",
		msg:     "pass=Pa55word phrase=Phr4se",
		secrets: []string{"Pa55word", "Phr4se"},
		want:    "pass=[redacted] phrase=[redacted]",
	}, {
		name:    "three characters are replaced",
		msg:     "the value is abc",
		secrets: []string{"abc"},
		want:    "the value is [redacted]",
	}, {
		name:    "shorter values are not, nor is an empty one",
		msg:     "a message about ab",
		secrets: []string{"ab", "a", ""},
		want:    "a message about ab",
	}, {
		name:    "secret in a URL",
		msg:     "cloning https://user:s3cret@host/x",
		secrets: []string{"s3cret"},
		want:    "cloning https://[redacted]@host/x",
	}, {
		name: "nothing to scrub",
		msg:  "repository not found",
		want: "repository not found",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, scrub(tt.msg, tt.secrets)); diff != "" {
				t.Errorf("scrub (-want +got):\n%s", diff)
			}
		})
	}
}

func TestError(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want *classified
	}{
		{"nil", nil, nil},
		{"other error", errors.New("boom"), nil},
		{"stalling", stalling(v1alpha1.ReasonAuthSecretNotFound, "Secret %q not found", "creds"),
			&classified{Reason: v1alpha1.ReasonAuthSecretNotFound, Message: `Secret "creds" not found`, Stalling: true}},
		{"transient", transient("timed out after %ds", 3),
			&classified{Reason: v1alpha1.ReasonGitCloneFailed, Message: "timed out after 3s"}},
		{"wrapped", fmt.Errorf("reconciling: %w", stalling(v1alpha1.ReasonPathNotFound, "no path")),
			&classified{Reason: v1alpha1.ReasonPathNotFound, Message: "reconciling: no path", Stalling: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := asClassified(tt.err)
			if diff := cmp.Diff(tt.want != nil, ok); diff != "" {
				t.Errorf("ok (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("asClassified (-want +got):\n%s", diff)
			}
		})
	}
}

func TestListSome(t *testing.T) {
	many := map[string]string{}
	for i := 0; i < 12; i++ {
		many[fmt.Sprintf("b%02d", i)] = "x"
	}
	tests := []struct {
		name string
		m    map[string]string
		want string
	}{
		{"none", nil, "none"},
		{"sorted", map[string]string{"main": "x", "dev": "y", "feature/a": "z"}, "dev, feature/a, main"},
		{"at most n", many, "b00, b01, b02, b03, b04, b05, b06, b07, b08, b09 and 2 more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, listSome(tt.m)); diff != "" {
				t.Errorf("listSome (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAuthFromSecret_CABundle(t *testing.T) {
	const (
		httpsURL = "https://git.example.com/org/repo.git"
		token    = "ghp_CaBundleT0ken-0123456789"
	)
	ca := otherCA(t)
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("pr1vate-key-bytes-0123456789")})
	tests := []struct {
		name       string
		url        string
		data       map[string][]byte
		wantCA     bool
		wantMethod bool
		wantErr    *classified
	}{
		{name: "ca.crt only: anonymous, with the CA", url: httpsURL, data: map[string][]byte{KeyCACert: ca}, wantCA: true},
		{name: "a token and ca.crt", url: httpsURL, data: map[string][]byte{KeyToken: []byte(token), KeyCACert: ca}, wantCA: true, wantMethod: true},
		{name: "plain HTTP takes it too (a redirect to HTTPS)", url: "http://git.example.com/r.git", data: map[string][]byte{KeyCACert: ca}, wantCA: true},
		{name: "ca.crt is not PEM", url: httpsURL, data: map[string][]byte{KeyToken: []byte(token), KeyCACert: []byte("n0t-a-PEM-" + token)},
			wantErr: &classified{Reason: v1alpha1.ReasonAuthSecretInvalid, Stalling: true,
				Message: `Secret "repo-creds": key "ca.crt" must hold the PEM certificates of the CAs to trust: it holds no PEM certificate (-----BEGIN CERTIFICATE-----)`}},
		{name: "ca.crt holds a private key", url: httpsURL, data: map[string][]byte{KeyCACert: keyPEM},
			wantErr: &classified{Reason: v1alpha1.ReasonAuthSecretInvalid, Stalling: true,
				Message: `Secret "repo-creds": key "ca.crt" must hold the PEM certificates of the CAs to trust: PEM block 1 is a private key, not a CERTIFICATE: only CA certificates belong here`}},
		{name: "ca.crt is empty", url: httpsURL, data: map[string][]byte{KeyToken: []byte(token), KeyCACert: []byte("\n")},
			wantErr: &classified{Reason: v1alpha1.ReasonAuthSecretInvalid, Stalling: true, Message: `Secret "repo-creds": the value of key "ca.crt" is empty`}},
		{name: "ca.crt does not make a half credential whole", url: httpsURL, data: map[string][]byte{KeyUsername: []byte("u"), KeyCACert: ca},
			wantErr: &classified{Reason: v1alpha1.ReasonAuthSecretInvalid, Stalling: true,
				Message: `Secret "repo-creds" has key "username" but no non-empty "password": HTTP(S) repositories need "token", or "username" and "password"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "fns", Name: "repo-creds"}, Data: tt.data}
			got, err := AuthFromSecret(tt.url, secret)
			var gotErr *classified
			if err != nil {
				var ok bool
				if gotErr, ok = asClassified(err); !ok {
					t.Fatalf("error %v is not a classified error", err)
				}
				assertNoSecretValues(t, err.Error(), tt.data)
				if strings.Contains(err.Error(), "pr1vate") || strings.Contains(err.Error(), "n0t-a-PEM") {
					t.Errorf("the error quotes ca.crt: %v", err)
				}
			}
			if diff := cmp.Diff(tt.wantErr, gotErr); diff != "" {
				t.Fatalf("error (-want +got):\n%s", diff)
			}
			if err != nil {
				return
			}
			if diff := cmp.Diff([]bool{tt.wantCA, tt.wantMethod}, []bool{got.CABundle != nil, got.Method != nil}); diff != "" {
				t.Errorf("[has CA, has method] (-want +got):\n%s", diff)
			}
		})
	}

	// SSH verifies the host key with known_hosts: ca.crt is not used, nor checked.
	key := newTestKey(t)
	sshAuth := secretAuth(t, "ssh://git@git.example.com/r.git", map[string][]byte{
		KeySSHPrivateKey: key.pem, KeyKnownHosts: []byte("git.example.com " + string(ssh.MarshalAuthorizedKey(key.signer.PublicKey()))),
		KeyCACert: []byte("not PEM"),
	})
	if sshAuth.CABundle != nil {
		t.Errorf("an SSH Auth took ca.crt")
	}
}

func TestAuth_Identity(t *testing.T) {
	const url = "https://git.example.com/r.git"
	const token = "ghp_IdentityT0ken-0123456789"
	ca, ca2 := otherCA(t), otherCA(t)
	id := func(data map[string][]byte) string { return secretAuth(t, url, data).Identity() }
	ids := map[string]string{
		"token":          id(map[string][]byte{KeyToken: []byte(token)}),
		"token again":    id(map[string][]byte{KeyToken: []byte(token + "\n")}), // the same credential
		"another token":  id(map[string][]byte{KeyToken: []byte(token + "x")}),
		"token, user":    id(map[string][]byte{KeyToken: []byte(token), KeyUsername: []byte("bot")}),
		"token and CA":   id(map[string][]byte{KeyToken: []byte(token), KeyCACert: ca}),
		"token, CA 2":    id(map[string][]byte{KeyToken: []byte(token), KeyCACert: ca2}),
		"CA only":        id(map[string][]byte{KeyCACert: ca}),
		"user, password": id(map[string][]byte{KeyUsername: []byte("git"), KeyPassword: []byte(token)}),
		"no Secret":      (&Auth{}).Identity(),
		"nil":            (*Auth)(nil).Identity(),
		"a literal Auth": (&Auth{Method: &githttp.BasicAuth{Username: "git", Password: token}}).Identity(),
	}
	if diff := cmp.Diff("anonymous", ids["no Secret"]+ids["nil"][len("anonymous"):]); diff != "" {
		t.Errorf("the identity of no credentials (-want +got):\n%s", diff)
	}
	// The same credential however written: a token is the password of user "git".
	for _, same := range [][2]string{{"token", "token again"}, {"token", "user, password"}, {"token", "a literal Auth"}} {
		if diff := cmp.Diff(ids[same[0]], ids[same[1]]); diff != "" {
			t.Errorf("%q and %q: one credential, two identities (-want +got):\n%s", same[0], same[1], diff)
		}
	}
	seen := map[string]string{}
	for name, v := range ids {
		if name == "token again" || name == "nil" || name == "user, password" || name == "a literal Auth" {
			continue
		}
		if other, ok := seen[v]; ok {
			t.Errorf("%q and %q have the same identity", name, other)
		}
		seen[v] = name
		if name != "no Secret" && (len(v) != 64 || strings.Contains(v, token)) {
			t.Errorf("identity of %q = %q, want 64 hex digits revealing nothing", name, v)
		}
	}
}

package git

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestAuth_ForClone reads what a build's clone step gets from each kind of Secret:
// the same credentials the operator lists with, an SSH key decrypted (the clone step
// cannot ask for a passphrase), nothing for an anonymous repository.
func TestAuth_ForClone(t *testing.T) {
	key := newTestKey(t)
	const passphrase = "Passphrase-Value-4242"
	ca := otherCA(t)
	knownHosts := []byte("[127.0.0.1]:2222 " + string(bytes.TrimSpace(ssh.MarshalAuthorizedKey(key.signer.PublicKey()))) + "\n")
	secret := func(data map[string]string) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "repo-creds"}, Data: map[string][]byte{}}
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
		return s
	}
	for _, tt := range []struct {
		name   string
		url    string
		secret *corev1.Secret
		want   *CloneCredentials
	}{{
		name: "anonymous", url: "http://127.0.0.1/org/repo.git",
	}, {
		name: "token", url: "https://127.0.0.1/org/repo.git", secret: secret(map[string]string{KeyToken: "tok\n"}),
		want: &CloneCredentials{Username: "git", Password: "tok"},
	}, {
		name: "user and password, and a CA", url: "https://127.0.0.1/org/repo.git",
		secret: secret(map[string]string{KeyUsername: "me", KeyPassword: "pw", KeyCACert: string(ca)}),
		want:   &CloneCredentials{Username: "me", Password: "pw", CABundle: ca},
	}, {
		name: "SSH key", url: "ssh://git@127.0.0.1:2222/org/repo.git",
		secret: secret(map[string]string{KeySSHPrivateKey: string(key.pem), KeyKnownHosts: string(knownHosts)}),
		want:   &CloneCredentials{SSHPrivateKey: key.pem, KnownHosts: knownHosts},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			a, err := AuthFromSecret(tt.url, tt.secret)
			if err != nil {
				t.Fatal(err)
			}
			got, err := a.ForClone()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ForClone (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("SSH key with a passphrase", func(t *testing.T) {
		a, err := AuthFromSecret("git@127.0.0.1:org/repo.git", secret(map[string]string{
			KeySSHPrivateKey: string(key.encrypted(t, passphrase)), KeyPassphrase: passphrase, KeyKnownHosts: string(knownHosts)}))
		if err != nil {
			t.Fatal(err)
		}
		got, err := a.ForClone()
		if err != nil {
			t.Fatal(err)
		}
		signer, err := ssh.ParsePrivateKey(got.SSHPrivateKey)
		if err != nil {
			t.Fatalf("the clone step's key does not parse without a passphrase: %v", err)
		}
		if !bytes.Equal(signer.PublicKey().Marshal(), key.signer.PublicKey().Marshal()) {
			t.Error("the decrypted key is another key")
		}
		if bytes.Contains(got.SSHPrivateKey, []byte(passphrase)) || got.String() != "CloneCredentials{redacted}" {
			t.Error("the passphrase, or a credential, shows")
		}
	})
}

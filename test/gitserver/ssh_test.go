package gitserver_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/fnops/func-operator/test/gitserver"
)

// sshAuth builds go-git public-key auth that verifies the host against
// knownHosts.
func sshAuth(t *testing.T, user string, pemBytes []byte, passphrase string, knownHosts []byte) *gitssh.PublicKeys {
	t.Helper()
	auth, err := gitssh.NewPublicKeys(user, pemBytes, passphrase)
	if err != nil {
		t.Fatalf("load client key: %v", err)
	}
	file := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(file, knownHosts, 0o600); err != nil {
		t.Fatalf("write known_hosts: %v", err)
	}
	cb, err := knownhosts.New(file)
	if err != nil {
		t.Fatalf("parse known_hosts: %v", err)
	}
	auth.HostKeyCallback = cb
	return auth
}

func TestSSH(t *testing.T) {
	srv := gitserver.StartSSH(t)
	root := gitserver.NewRepoRoot(t)
	repo := gitserver.CreateRepo(t, root, "fns")
	repo.Commit(t, "main", map[string]string{"fns/hello/func.yaml": "name: hello\n"}, "init")
	url := srv.URL(repo.Dir)

	t.Run("URL and known_hosts format", func(t *testing.T) {
		if want := fmt.Sprintf("ssh://%s@127.0.0.1:%d%s", srv.User(), srv.Port(), repo.Dir); url != want {
			t.Fatalf("URL = %s, want %s", url, want)
		}
		prefix := fmt.Sprintf("[127.0.0.1]:%d ssh-ed25519 AAAA", srv.Port())
		for _, line := range [][]byte{srv.KnownHosts(), srv.OtherKnownHosts()} {
			if !strings.HasPrefix(string(line), prefix) {
				t.Fatalf("known_hosts line %q lacks prefix %q", line, prefix)
			}
		}
		if string(srv.KnownHosts()) == string(srv.OtherKnownHosts()) {
			t.Fatal("OtherKnownHosts equals KnownHosts")
		}
		_, _, key, _, _, err := ssh.ParseKnownHosts(srv.KnownHosts())
		if err != nil {
			t.Fatalf("parse KnownHosts: %v", err)
		}
		if string(key.Marshal()) != string(srv.HostPublicKey().Marshal()) {
			t.Fatal("KnownHosts key differs from HostPublicKey")
		}
	})

	t.Run("clone with known host", func(t *testing.T) {
		auth := sshAuth(t, srv.User(), srv.ClientPrivateKeyPEM(), "", srv.KnownHosts())
		dir := mustClone(t, url, auth)
		assertFile(t, dir, "fns/hello/func.yaml", "name: hello\n")
	})

	t.Run("host key mismatch", func(t *testing.T) {
		auth := sshAuth(t, srv.User(), srv.ClientPrivateKeyPEM(), "", srv.OtherKnownHosts())
		_, err := clone(t, url, auth)
		if err == nil || !strings.Contains(err.Error(), "key mismatch") {
			t.Fatalf("clone error = %v, want a knownhosts key mismatch", err)
		}
	})

	t.Run("passphrase-protected key", func(t *testing.T) {
		encrypted := srv.EncryptedClientPrivateKeyPEM("open sesame")
		if _, err := gitssh.NewPublicKeys(srv.User(), encrypted, "wrong"); err == nil {
			t.Fatal("wrong passphrase accepted")
		}
		if _, err := gitssh.NewPublicKeys(srv.User(), encrypted, ""); err == nil {
			t.Fatal("encrypted key loaded without passphrase")
		}
		auth := sshAuth(t, srv.User(), encrypted, "open sesame", srv.KnownHosts())
		dir := mustClone(t, url, auth)
		assertFile(t, dir, "fns/hello/func.yaml", "name: hello\n")
	})

	t.Run("unknown client key", func(t *testing.T) {
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatalf("generate key: %v", err)
		}
		block, err := ssh.MarshalPrivateKey(priv, "")
		if err != nil {
			t.Fatalf("marshal key: %v", err)
		}
		auth := sshAuth(t, srv.User(), pem.EncodeToMemory(block), "", srv.KnownHosts())
		if _, err := clone(t, url, auth); err == nil {
			t.Fatal("clone with an unauthorised client key succeeded")
		}
	})
}

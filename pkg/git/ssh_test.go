package git

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/test/gitserver"
	"github.com/fnops/func-operator/test/testfs"
)

const sshPassphrase = "ssh-Pa55phrase-112358"

func TestFetcher_SSH(t *testing.T) {
	srv := gitserver.StartSSH(t)
	root := gitserver.NewRepoRoot(t)
	repo := gitserver.CreateRepo(t, root, "fns")
	commit := repo.Commit(t, "main", map[string]string{
		"func.yaml":           funcYAML("root-fn", "go"),
		"fns/hello/func.yaml": funcYAML("hello", "springboot"),
	}, "init")
	url := srv.URL(repo.Dir)
	head := Head{Branch: "main", Ref: "refs/heads/main", Commit: commit}
	unauthorised := newTestKey(t)
	otherHost := fmt.Sprintf("[127.0.0.1]:%d ", srv.Port()+1) // the right key, for another port
	otherHostKnownHosts := strings.Replace(string(srv.KnownHosts()), fmt.Sprintf("[127.0.0.1]:%d ", srv.Port()), otherHost, 1)

	tests := []struct {
		name    string
		url     string // instead of url
		data    map[string][]byte
		fnPath  string
		want    Result
		wantErr *wantError
		// wantReadErr is the error of Read when it differs from Head's.
		wantReadErr *wantError
	}{{
		name:   "key and known_hosts",
		data:   map[string][]byte{KeySSHPrivateKey: srv.ClientPrivateKeyPEM(), KeyKnownHosts: srv.KnownHosts()},
		fnPath: "fns/hello",
		want:   Result{Head: head, Metadata: md("hello", "springboot"), Cloned: true},
	}, {
		name: "identity key",
		data: map[string][]byte{KeyIdentity: srv.ClientPrivateKeyPEM(), KeyKnownHosts: srv.KnownHosts()},
		want: Result{Head: head, Metadata: md("root-fn", "go"), Cloned: true},
	}, {
		name: "passphrase-protected key with its passphrase",
		data: map[string][]byte{
			KeySSHPrivateKey: srv.EncryptedClientPrivateKeyPEM(sshPassphrase),
			KeyPassphrase:    []byte(sshPassphrase),
			KeyKnownHosts:    srv.KnownHosts(),
		},
		want: Result{Head: head, Metadata: md("root-fn", "go"), Cloned: true},
	}, {
		name: "host key that does not match known_hosts",
		data: map[string][]byte{KeySSHPrivateKey: srv.ClientPrivateKeyPEM(), KeyKnownHosts: srv.OtherKnownHosts()},
		wantErr: &wantError{reason: v1alpha1.ReasonBranchListFailed, stalling: true,
			msgHas: []string{"listing the branches of " + url, "knownhosts: key mismatch",
				`the server's host key does not match key "known_hosts" of the auth Secret`}},
		wantReadErr: &wantError{reason: v1alpha1.ReasonGitCloneFailed, stalling: true,
			msgHas: []string{"cloning " + url, "knownhosts: key mismatch",
				`the server's host key does not match key "known_hosts" of the auth Secret`}},
	}, {
		name: "host missing from known_hosts",
		data: map[string][]byte{KeySSHPrivateKey: srv.ClientPrivateKeyPEM(), KeyKnownHosts: []byte(otherHostKnownHosts)},
		wantErr: &wantError{reason: v1alpha1.ReasonBranchListFailed, stalling: true,
			msgHas: []string{"knownhosts: key is unknown", `key "known_hosts" of the auth Secret`}},
		wantReadErr: &wantError{reason: v1alpha1.ReasonGitCloneFailed, stalling: true,
			msgHas: []string{"knownhosts: key is unknown", `key "known_hosts" of the auth Secret`}},
	}, {
		name: "key the server does not authorise",
		data: map[string][]byte{KeySSHPrivateKey: unauthorised.pem, KeyKnownHosts: srv.KnownHosts()},
		wantErr: &wantError{reason: v1alpha1.ReasonBranchListFailed, stalling: true,
			msgHas: []string{"listing the branches of " + url, "unable to authenticate",
				"the SSH key in spec.repository.authSecretRef was refused"}},
		wantReadErr: &wantError{reason: v1alpha1.ReasonGitCloneFailed, stalling: true,
			msgHas: []string{"cloning " + url, "unable to authenticate",
				"the SSH key in spec.repository.authSecretRef was refused"}},
	}, {
		name: "user the server does not know",
		url:  strings.Replace(url, "ssh://"+srv.User()+"@", "ssh://nobody-here@", 1),
		data: map[string][]byte{KeySSHPrivateKey: srv.ClientPrivateKeyPEM(), KeyKnownHosts: srv.KnownHosts()},
		wantErr: &wantError{reason: v1alpha1.ReasonBranchListFailed, stalling: true,
			msgHas: []string{"unable to authenticate", "the SSH key in spec.repository.authSecretRef was refused"}},
		wantReadErr: &wantError{reason: v1alpha1.ReasonGitCloneFailed, stalling: true,
			msgHas: []string{"unable to authenticate", "the SSH key in spec.repository.authSecretRef was refused"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := url
			if tt.url != "" {
				u = tt.url
			}
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ssh-creds"}, Data: tt.data}
			auth, err := AuthFromSecret(u, secret)
			if err != nil {
				t.Fatalf("AuthFromSecret: %v", err)
			}
			tmp := t.TempDir()
			f := NewFetcher(tmp, 0, manifests)

			gotHead, err := f.Head(context.Background(), u, "", auth, gitTimeout)
			checkError(t, tt.wantErr, err)
			assertNoSecretValues(t, errString(err), tt.data)
			if diff := cmp.Diff(tt.want.Head, gotHead); diff != "" {
				t.Errorf("Head (-want +got):\n%s", diff)
			}

			// Read the branch as Head found it, or as it is when Head failed.
			got, err := f.Read(context.Background(), u, head, tt.fnPath, auth, gitTimeout)
			wantReadErr := tt.wantReadErr
			if wantReadErr == nil {
				wantReadErr = tt.wantErr
			}
			checkError(t, wantReadErr, err)
			assertNoSecretValues(t, errString(err), tt.data)
			if diff := cmp.Diff(tt.want, got, ignoreSourceMiddleware, ignoreLayout); diff != "" {
				t.Errorf("Result (-want +got):\n%s", diff)
			}
			testfs.AssertEmptyDir(t, tmp)
		})
	}
}

// TestFetcher_SSHUpstreamSecret clones through a Secret written for the upstream
// operator (functions-dev/func-operator): the key under sshPrivateKey, encrypted, its
// passphrase under sshPrivateKeyPassword, and known_hosts. The operator lists and
// reads the branch with it, and a real git and ssh clone with what the build's clone
// step gets (ForClone). Without known_hosts (upstream makes it optional) the same
// Secret is refused, and the message's ssh-keyscan, run against the server, makes a
// known_hosts that works.
func TestFetcher_SSHUpstreamSecret(t *testing.T) {
	srv := gitserver.StartSSH(t)
	root := gitserver.NewRepoRoot(t)
	repo := gitserver.CreateRepo(t, root, "upstream")
	commit := repo.Commit(t, "main", map[string]string{"func.yaml": funcYAML("up-fn", "go")}, "init")
	url := srv.URL(repo.Dir)
	head := Head{Branch: "main", Ref: "refs/heads/main", Commit: commit}
	upstream := func(knownHosts []byte) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "upstream-creds"}, Data: map[string][]byte{
			KeySSHPrivateKeyUpstream: srv.EncryptedClientPrivateKeyPEM(sshPassphrase),
			KeyPassphraseUpstream:    []byte(sshPassphrase),
		}}
		if knownHosts != nil {
			s.Data[KeyKnownHosts] = knownHosts
		}
		return s
	}
	fetch := func(t *testing.T, secret *corev1.Secret) *Auth {
		t.Helper()
		auth, err := AuthFromSecret(url, secret)
		if err != nil {
			t.Fatalf("AuthFromSecret: %v", err)
		}
		tmp := t.TempDir()
		f := NewFetcher(tmp, 0, manifests)
		gotHead, err := f.Head(context.Background(), url, "", auth, gitTimeout)
		if err != nil {
			t.Fatalf("Head: %v", err)
		}
		if diff := cmp.Diff(head, gotHead); diff != "" {
			t.Errorf("Head (-want +got):\n%s", diff)
		}
		got, err := f.Read(context.Background(), url, head, "", auth, gitTimeout)
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		want := Result{Head: head, Metadata: md("up-fn", "go"), Cloned: true}
		if diff := cmp.Diff(want, got, ignoreSourceMiddleware, ignoreLayout); diff != "" {
			t.Errorf("Result (-want +got):\n%s", diff)
		}
		testfs.AssertEmptyDir(t, tmp)
		return auth
	}

	t.Run("with known_hosts", func(t *testing.T) {
		auth := fetch(t, upstream(srv.KnownHosts()))
		creds, err := auth.ForClone()
		if err != nil {
			t.Fatalf("ForClone: %v", err)
		}
		if err := cloneWithSSH(t, url, creds); err != nil {
			t.Fatalf("git clone with the clone step's credentials: %v", err)
		}
		// The control: ssh does check the host key.
		creds.KnownHosts = srv.OtherKnownHosts()
		if err := cloneWithSSH(t, url, creds); err == nil {
			t.Error("git clone succeeded with another host key in known_hosts")
		}
	})

	t.Run("without known_hosts", func(t *testing.T) {
		secret := upstream(nil)
		_, err := AuthFromSecret(url, secret)
		got, ok := asClassified(err)
		if !ok {
			t.Fatalf("error %v is not a classified error", err)
		}
		if got.Reason != v1alpha1.ReasonAuthSecretInvalid || !got.Stalling {
			t.Errorf("reason %s (stalling %t), want a stalling AuthSecretInvalid", got.Reason, got.Stalling)
		}
		assertNoSecretValues(t, got.Message, secret.Data)
		scan := fmt.Sprintf("ssh-keyscan -p %d 127.0.0.1", srv.Port())
		for _, w := range []string{`Secret "upstream-creds" has no key "known_hosts"`, "`" + scan + " > known_hosts`",
			"`kubectl patch secret upstream-creds --type merge -p "} {
			if !strings.Contains(got.Message, w) {
				t.Errorf("message %q\nlacks %q", got.Message, w)
			}
		}
		// What the message says to run makes a known_hosts the operator accepts.
		args := strings.Fields(scan)
		out, err := exec.Command(args[0], args[1:]...).Output()
		if err != nil {
			t.Fatalf("%s: %v", scan, err)
		}
		fetch(t, upstream(out))
	})
}

// cloneWithSSH clones url with git and ssh as a build's clone step does, with only
// creds: ssh reads the key and known_hosts from files and checks the host key.
func cloneWithSSH(t *testing.T, url string, creds *CloneCredentials) error {
	t.Helper()
	dir := t.TempDir()
	key, knownHosts := filepath.Join(dir, "id_ed25519"), filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(key, creds.SSHPrivateKey, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(knownHosts, creds.KnownHosts, 0o600); err != nil {
		t.Fatal(err)
	}
	clone := filepath.Join(dir, "clone")
	cmd := exec.Command("git", "clone", "--quiet", "--depth=1", url, clone)
	cmd.Env = []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH"), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_SSH_COMMAND=ssh -F /dev/null -o BatchMode=yes -o IdentitiesOnly=yes -o StrictHostKeyChecking=yes" +
			" -o GlobalKnownHostsFile=/dev/null -o UserKnownHostsFile=" + knownHosts + " -i " + key}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%w: %s", err, out)
	}
	if _, err := os.Stat(filepath.Join(clone, "func.yaml")); err != nil {
		return fmt.Errorf("the clone has no func.yaml: %w", err)
	}
	return nil
}

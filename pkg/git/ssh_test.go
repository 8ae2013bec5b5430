package git

import (
	"context"
	"fmt"
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
			f := NewFetcher(tmp, 0)

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
			if diff := cmp.Diff(tt.want, got, ignoreSourceMiddleware); diff != "" {
				t.Errorf("Result (-want +got):\n%s", diff)
			}
			testfs.AssertEmptyDir(t, tmp)
		})
	}
}

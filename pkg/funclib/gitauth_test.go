package funclib

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"golang.org/x/crypto/ssh"
	"sigs.k8s.io/yaml"
)

// TestNewGitAuth checks the files each kind of credentials gives the git-clone
// task's workspaces, and the credentials it refuses.
func TestNewGitAuth(t *testing.T) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	key := pem.EncodeToMemory(block)
	for _, tt := range []struct {
		name, url  string
		creds      *GitCredentials
		workspaces map[string][]string
		files      map[string]string
		wantErr    string
	}{{
		name: "token over HTTPS", url: "https://127.0.0.1:8443/org/repo.git", creds: &GitCredentials{Username: "git", Password: "p@ss/word"},
		workspaces: map[string][]string{PipelineWorkspaceHTTP: {".git-credentials", ".gitconfig"}},
		files:      map[string]string{".git-credentials": "https://git:p%40ss%2Fword@127.0.0.1:8443\n", ".gitconfig": "[credential]\n\thelper = store\n"},
	}, {
		name: "basic auth over HTTP, with a CA", url: "http://127.0.0.1/org/repo.git", creds: &GitCredentials{Username: "me", Password: "pw", CABundle: []byte("CA")},
		workspaces: map[string][]string{PipelineWorkspaceHTTP: {".git-credentials", ".gitconfig"}, PipelineWorkspaceCA: {"ca-bundle.crt"}},
		files:      map[string]string{".git-credentials": "http://me:pw@127.0.0.1\n", ".gitconfig": "[credential]\n\thelper = store\n", "ca-bundle.crt": "CA"},
	}, {
		name: "a CA only: a public repository on a private CA", url: "https://127.0.0.1/org/repo.git", creds: &GitCredentials{CABundle: []byte("CA")},
		workspaces: map[string][]string{PipelineWorkspaceCA: {"ca-bundle.crt"}},
		files:      map[string]string{"ca-bundle.crt": "CA"},
	}, {
		name: "SSH", url: "ssh://git@127.0.0.1:2222/org/repo.git", creds: &GitCredentials{SSHPrivateKey: key, KnownHosts: []byte("[127.0.0.1]:2222 ssh-ed25519 AAAA\n")},
		workspaces: map[string][]string{PipelineWorkspaceSSH: {"id_ed25519", "known_hosts", "config"}},
		files:      map[string]string{"id_ed25519": string(key), "known_hosts": "[127.0.0.1]:2222 ssh-ed25519 AAAA\n", "config": sshConfig},
	}, {
		name: "SSH without known_hosts", url: "git@127.0.0.1:org/repo.git", creds: &GitCredentials{SSHPrivateKey: key},
		wantErr: "without known_hosts",
	}, {
		name: "an encrypted or broken key", url: "git@127.0.0.1:org/repo.git", creds: &GitCredentials{SSHPrivateKey: []byte("-----BEGIN OPENSSH PRIVATE KEY-----\nc2VjcmV0\n"), KnownHosts: []byte("x")},
		wantErr: "cannot be read unencrypted",
	}, {
		name: "a password for an SSH URL", url: "git@127.0.0.1:org/repo.git", creds: &GitCredentials{Username: "git", Password: "pw"},
		wantErr: "not http(s)",
	}, {
		name: "nothing", url: "https://127.0.0.1/org/repo.git", creds: &GitCredentials{},
		wantErr: "without a password, SSH key or CA",
	}} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := newGitAuth(tt.url, tt.creds)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("newGitAuth = %v, want an error with %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "c2VjcmV0") || strings.Contains(err.Error(), "pw") {
					t.Errorf("the error quotes a credential: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.workspaces, got.workspaces); diff != "" {
				t.Errorf("workspaces (-want +got):\n%s", diff)
			}
			files := map[string]string{}
			for k, v := range got.data {
				files[k] = string(v)
			}
			if diff := cmp.Diff(tt.files, files); diff != "" {
				t.Errorf("files (-want +got):\n%s", diff)
			}
		})
	}
	if s := (&GitCredentials{Password: "pw"}).String(); strings.Contains(s, "pw") {
		t.Errorf("String() = %q shows the password", s)
	}
}

// TestGitSecretName keeps the name of a build's credentials Secret within 253 bytes.
func TestGitSecretName(t *testing.T) {
	if got := GitSecretName("hello", "abc"); got != "hello-git-credentials-abc" {
		t.Errorf("GitSecretName = %q", got)
	}
	long := GitSecretName(strings.Repeat("a", 250)+".b", "0123456789")
	if len(long) > 253 || !strings.HasSuffix(long, "-git-credentials-0123456789") {
		t.Errorf("GitSecretName of a long name = %q (%d bytes)", long, len(long))
	}
}

// TestEmbedGitClone replaces func's Tekton Hub reference and refuses every other task
// the cluster would resolve.
func TestEmbedGitClone(t *testing.T) {
	const hubClone = `
- name: fetch-sources
  taskRef: {resolver: hub, params: [{name: kind, value: task}, {name: name, value: git-clone}, {name: version, value: "0.4"}]}
  workspaces: [{name: output, workspace: source-workspace}]`
	const inline = `
- name: build
  taskSpec: {steps: [{name: build, image: x, script: "true"}]}`
	for _, tt := range []struct {
		name, tasks, finally, wantErr string
	}{
		{name: "func's pipeline", tasks: hubClone + inline},
		{name: "another hub task", tasks: hubClone + `
- name: lint
  taskRef: {resolver: hub, params: [{name: name, value: golangci-lint}]}`, wantErr: `pipeline task "lint" refers to a task the cluster would resolve (resolver "hub")`},
		{name: "a git resolver", tasks: `
- name: fetch-sources
  taskRef: {resolver: git, params: [{name: name, value: git-clone}]}`, wantErr: `(resolver "git")`},
		{name: "a Task of the namespace", tasks: `
- name: build
  taskRef: {name: buildah}`, wantErr: `(Task "buildah")`},
		{name: "finally", tasks: inline, finally: inline, wantErr: "finally tasks"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var spec pipelinev1.PipelineSpec
			doc := "tasks:" + tt.tasks
			if tt.finally != "" {
				doc += "\nfinally:" + tt.finally
			}
			if err := yaml.UnmarshalStrict([]byte(doc), &spec); err != nil {
				t.Fatal(err)
			}
			err := embedGitClone(&spec)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("embedGitClone = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			clone := spec.Tasks[0]
			if clone.TaskRef != nil || clone.TaskSpec == nil || clone.TaskSpec.Steps[0].Name != "clone" {
				t.Fatalf("fetch-sources = %+v, want the embedded task", clone)
			}
			var image string
			for _, p := range clone.Params {
				if p.Name == gitCloneImageParam {
					image = p.Value.StringVal
				}
			}
			if image != "ghcr.io/tektoncd-catalog/git-clone:v1.1.0" {
				t.Errorf("clone image = %q, want the task's default", image)
			}
			var declared []string
			for _, w := range spec.Workspaces {
				if w.Optional {
					declared = append(declared, w.Name)
				}
			}
			if diff := cmp.Diff([]string{PipelineWorkspaceHTTP, PipelineWorkspaceSSH, PipelineWorkspaceCA}, declared); diff != "" {
				t.Errorf("optional workspaces (-want +got):\n%s", diff)
			}
		})
	}
}

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

// buildTask is func v0.50's build task as its pack pipeline writes it, trimmed to
// what splitClone reads: the clone step first, referring to the catalog's git-clone
// StepAction through the bundles resolver.
const buildTask = `
- name: build
  params:
  - {name: GIT_REPOSITORY, value: $(params.gitRepository)}
  - {name: GIT_REVISION, value: $(params.gitRevision)}
  - {name: APP_IMAGE, value: $(params.imageName)}
  workspaces:
  - {name: source, workspace: source-workspace}
  - {name: cache, workspace: cache-workspace}
  - {name: dockerconfig, workspace: dockerconfig-workspace}
  taskSpec:
    params: [{name: GIT_REPOSITORY}, {name: GIT_REVISION}, {name: APP_IMAGE}]
    workspaces: [{name: source}, {name: cache, optional: true}, {name: dockerconfig, optional: true}]
    steps:
    - name: fetch-src
      ref:
        resolver: bundles
        params:
        - {name: bundle, value: "ghcr.io/tektoncd/catalog/upstream/stepactions/git-clone:09f70e6a6485a7d99b01d75610870b13222732e8"}
        - {name: kind, value: StepAction}
        - {name: name, value: git-clone}
      when: [{input: "$(params.GIT_REPOSITORY)", operator: notin, values: [""]}]
      params:
      - {name: output-path, value: "$(workspaces.source.path)"}
      - {name: url, value: "$(params.GIT_REPOSITORY)"}
      - {name: revision, value: "$(params.GIT_REVISION)"}
    - {name: func-scaffold, image: scaffold, command: [scaffold]}
    - {name: create, image: builder, command: [/cnb/lifecycle/creator]}
    - {name: func-deploy, image: deployer, command: [deploy]}`

// TestSplitClone moves func's clone step into a pipeline task that runs the
// embedded git-clone task, and refuses every other task or step the cluster would
// resolve.
func TestSplitClone(t *testing.T) {
	for _, tt := range []struct {
		name, tasks, finally, wantErr string
	}{
		{name: "func's pipeline", tasks: buildTask},
		{name: "a hub task", tasks: buildTask + `
- name: lint
  taskRef: {resolver: hub, params: [{name: name, value: golangci-lint}]}`, wantErr: `pipeline task "lint" refers to a task the cluster would resolve (resolver "hub")`},
		{name: "a Task of the namespace", tasks: `
- name: build
  taskRef: {name: buildah}`, wantErr: `(Task "buildah")`},
		{name: "another StepAction", tasks: strings.Replace(buildTask, "- {name: func-scaffold, image: scaffold, command: [scaffold]}",
			"- {name: func-scaffold, ref: {resolver: bundles, params: [{name: kind, value: StepAction}, {name: name, value: scaffold}]}}", 1),
			wantErr: `step "func-scaffold" of pipeline task "build" refers to a StepAction the cluster would resolve (resolver "bundles")`},
		{name: "a StepAction of the namespace", tasks: strings.Replace(buildTask, "- {name: func-scaffold, image: scaffold, command: [scaffold]}",
			"- {name: func-scaffold, ref: {name: scaffold}}", 1), wantErr: `(StepAction "scaffold")`},
		{name: "a clone parameter the task does not take", tasks: strings.Replace(buildTask, `- {name: url, value: "$(params.GIT_REPOSITORY)"}`,
			`- {name: url, value: "$(params.GIT_REPOSITORY)"}
      - {name: sslVerify, value: "false"}`, 1), wantErr: `parameter "sslVerify", which the operator's clone task does not take`},
		{name: "a url that is no parameter", tasks: strings.Replace(buildTask, `value: "$(params.GIT_REPOSITORY)"}`, `value: "https://127.0.0.1/x.git"}`, 1),
			wantErr: `"https://127.0.0.1/x.git" is not a reference to one of the task's parameters`},
		{name: "a task named like the clone task", tasks: buildTask + `
- name: fetch-sources
  taskSpec: {steps: [{name: x, image: x}]}`, wantErr: `a task named "fetch-sources" already`},
		{name: "a task that binds the credentials", tasks: strings.Replace(buildTask, "- {name: cache, workspace: cache-workspace}",
			"- {name: cache, workspace: cache-workspace}\n  - {name: keys, workspace: git-ssh-directory}", 1),
			wantErr: `pipeline task "build" binds workspace "git-ssh-directory": only the operator's clone task`},
		{name: "a custom task", tasks: buildTask + `
- name: notify
  taskSpec: {apiVersion: example.dev/v1, kind: Notifier, spec: {to: x}}`, wantErr: `pipeline task "notify" is a custom task (example.dev/v1 Notifier)`},
		{name: "finally", tasks: buildTask, finally: `
- name: notify
  taskSpec: {steps: [{name: x, image: x}]}`, wantErr: "finally tasks"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var spec pipelinev1.PipelineSpec
			doc := "workspaces: [{name: source-workspace}, {name: cache-workspace}, {name: dockerconfig-workspace, optional: true}]\ntasks:" + tt.tasks
			if tt.finally != "" {
				doc += "\nfinally:" + tt.finally
			}
			if err := yaml.UnmarshalStrict([]byte(doc), &spec); err != nil {
				t.Fatal(err)
			}
			err := splitClone(&spec)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("splitClone = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var want pipelinev1.PipelineSpec
			if err := yaml.UnmarshalStrict([]byte(`
tasks:
- name: fetch-sources
  params:
  - {name: url, value: $(params.gitRepository)}
  - {name: revision, value: $(params.gitRevision)}
  - {name: gitInitImage, value: "ghcr.io/tektoncd-catalog/git-clone:v1.1.0"}
  when: [{input: "$(params.gitRepository)", operator: notin, values: [""]}]
  workspaces:
  - {name: output, workspace: source-workspace}
  - {name: colocate-cache, workspace: cache-workspace}
  - {name: basic-auth, workspace: git-basic-auth}
  - {name: ssh-directory, workspace: git-ssh-directory}
  - {name: ssl-ca-directory, workspace: git-ssl-ca-directory}
- name: build
  runAfter: [fetch-sources]
  params:
  - {name: GIT_REPOSITORY, value: $(params.gitRepository)}
  - {name: GIT_REVISION, value: $(params.gitRevision)}
  - {name: APP_IMAGE, value: $(params.imageName)}
  workspaces:
  - {name: source, workspace: source-workspace}
  - {name: cache, workspace: cache-workspace}
  - {name: dockerconfig, workspace: dockerconfig-workspace}
  taskSpec:
    params: [{name: GIT_REPOSITORY}, {name: GIT_REVISION}, {name: APP_IMAGE}]
    workspaces: [{name: source}, {name: cache, optional: true}, {name: dockerconfig, optional: true}]
    steps:
    - {name: func-scaffold, image: scaffold, command: [scaffold]}
    - {name: create, image: builder, command: [/cnb/lifecycle/creator]}
    - {name: func-deploy, image: deployer, command: [deploy]}
workspaces:
- {name: source-workspace}
- {name: cache-workspace}
- {name: dockerconfig-workspace, optional: true}
- {name: git-basic-auth, optional: true, description: "func-operator: the build's git credentials Secret, bound only to the clone task"}
- {name: git-ssh-directory, optional: true, description: "func-operator: the build's git credentials Secret, bound only to the clone task"}
- {name: git-ssl-ca-directory, optional: true, description: "func-operator: the build's git credentials Secret, bound only to the clone task"}
`), &want); err != nil {
				t.Fatal(err)
			}
			task, err := gitCloneTask()
			if err != nil {
				t.Fatal(err)
			}
			// The cache workspace, bound so that Tekton's affinity assistant places the
			// clone's pod with the build's (colocate): declared, used by no step.
			task.Workspaces = append(task.Workspaces, pipelinev1.WorkspaceDeclaration{Name: "colocate-cache", Optional: true,
				Description: "func-operator: unused; binds what the build task binds, so that Tekton's affinity assistant places both pods alike"})
			want.Tasks[0].TaskSpec = &pipelinev1.EmbeddedTask{TaskSpec: task}
			if diff := cmp.Diff(want, spec); diff != "" {
				t.Errorf("the rewritten pipeline (-want +got):\n%s", diff)
			}
		})
	}
}

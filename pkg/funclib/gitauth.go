package funclib

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"strings"

	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GitCredentials are what a build's clone step authenticates to the repository with,
// read from the Function's repository Secret. They reach the cluster only as a Secret
// of the build (GitAuthSecretData), never in the Pipeline or the PipelineRun.
type GitCredentials struct {
	// Username and Password are HTTP(S) basic auth (a token is the password).
	Username, Password string
	// SSHPrivateKey is an unencrypted private key (PEM), KnownHosts the host keys
	// the clone step verifies the server against.
	SSHPrivateKey, KnownHosts []byte
	// CABundle holds PEM CAs trusted for HTTPS besides the image's roots.
	CABundle []byte
}

// String never shows a credential.
func (c *GitCredentials) String() string { return "GitCredentials{redacted}" }

// GoString never shows a credential.
func (c *GitCredentials) GoString() string { return c.String() }

// Keys of a build's git credentials Secret: the files the git-clone task's
// workspaces expect.
const (
	gitCredentialsFile = ".git-credentials"
	gitConfigFile      = ".gitconfig"
	caBundleFile       = "ca-bundle.crt" // the task's crtFileName default
	knownHostsFile     = "known_hosts"
	sshConfigFile      = "config"
)

// sshConfig makes the clone step's ssh verify the host key against known_hosts
// only, whatever the image's defaults.
const sshConfig = "Host *\n  StrictHostKeyChecking yes\n  UserKnownHostsFile ~/.ssh/known_hosts\n  User git\n  IdentitiesOnly yes\n  PasswordAuthentication no\n  KbdInteractiveAuthentication no\n"

// gitAuth is a build's git credentials Secret as the pipeline binds it: the Secret's
// data, and per Pipeline workspace the keys of it that workspace shows.
type gitAuth struct {
	data       map[string][]byte
	workspaces map[string][]string
}

// CheckGitCredentials says why the clone step of a build of repository repoURL
// could not use c, if it could not.
func CheckGitCredentials(repoURL string, c *GitCredentials) error {
	_, err := newGitAuth(repoURL, c)
	return err
}

// newGitAuth returns what the clone step of repository repoURL needs from c: for
// HTTP(S), a .git-credentials file for the URL's host and a .gitconfig that reads it
// (the task's basic-auth workspace), and the CA (ssl-ca-directory); for SSH, the key,
// known_hosts and an ssh config that checks host keys strictly (ssh-directory).
func newGitAuth(repoURL string, c *GitCredentials) (*gitAuth, error) {
	if c == nil {
		return nil, errors.New("no git credentials")
	}
	a := &gitAuth{data: map[string][]byte{}, workspaces: map[string][]string{}}
	if len(c.SSHPrivateKey) > 0 {
		if len(c.KnownHosts) == 0 {
			return nil, errors.New("an SSH key without known_hosts: the clone step verifies the host key")
		}
		name, err := sshKeyFile(c.SSHPrivateKey)
		if err != nil {
			return nil, err
		}
		a.data[name] = c.SSHPrivateKey
		a.data[knownHostsFile] = c.KnownHosts
		a.data[sshConfigFile] = []byte(sshConfig)
		a.workspaces[PipelineWorkspaceSSH] = []string{name, knownHostsFile, sshConfigFile}
		return a, nil
	}
	if c.Password != "" {
		u, err := url.Parse(repoURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, errors.New("HTTP credentials for a repository URL that is not http(s)://host/…")
		}
		line := (&url.URL{Scheme: u.Scheme, User: url.UserPassword(c.Username, c.Password), Host: u.Host}).String()
		a.data[gitCredentialsFile] = []byte(line + "\n")
		a.data[gitConfigFile] = []byte("[credential]\n\thelper = store\n")
		a.workspaces[PipelineWorkspaceHTTP] = []string{gitCredentialsFile, gitConfigFile}
	}
	if len(c.CABundle) > 0 {
		a.data[caBundleFile] = c.CABundle
		a.workspaces[PipelineWorkspaceCA] = []string{caBundleFile}
	}
	if len(a.workspaces) == 0 {
		return nil, errors.New("git credentials without a password, SSH key or CA")
	}
	return a, nil
}

// sshKeyFile is the file name ssh looks for a key of this type under by default.
func sshKeyFile(pemKey []byte) (string, error) {
	signer, err := ssh.ParsePrivateKey(pemKey)
	if err != nil {
		return "", errors.New("the SSH key cannot be read unencrypted") // never the parser's text: it may quote the key
	}
	switch t := signer.PublicKey().Type(); {
	case t == ssh.KeyAlgoRSA:
		return "id_rsa", nil
	case t == ssh.KeyAlgoED25519:
		return "id_ed25519", nil
	case strings.HasPrefix(t, "ecdsa-sha2-"):
		return "id_ecdsa", nil
	default:
		return "", fmt.Errorf("SSH keys of type %s are not used by ssh by default", t)
	}
}

// bindings are the PipelineRun's workspace bindings of secret.
func (a *gitAuth) bindings(secret string) []pipelinev1.WorkspaceBinding {
	var out []pipelinev1.WorkspaceBinding
	for _, ws := range []string{PipelineWorkspaceHTTP, PipelineWorkspaceSSH, PipelineWorkspaceCA} {
		keys, ok := a.workspaces[ws]
		if !ok {
			continue
		}
		src := &corev1.SecretVolumeSource{SecretName: secret}
		for _, k := range keys {
			src.Items = append(src.Items, corev1.KeyToPath{Key: k, Path: k})
		}
		out = append(out, pipelinev1.WorkspaceBinding{Name: ws, Secret: src})
	}
	return out
}

// GitSecretName is the name of the git credentials Secret of build id of owner.
func GitSecretName(owner, id string) string {
	const suffix = "-git-credentials-"
	if max := 253 - len(suffix) - len(id); len(owner) > max {
		owner = strings.TrimRight(owner[:max], ".-")
	}
	return owner + suffix + id
}

// createGitSecret creates the git credentials Secret of req, owned by req.Owner and
// immutable, with the operator's own identity, and returns its name.
func (p *apiProxy) createGitSecret(ctx context.Context, req BuildRequest, auth *gitAuth) (string, error) {
	labels := maps.Clone(req.Labels)
	labels[LabelGitCredentials] = "true"
	immutable := true
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: GitSecretName(req.Owner.Name, req.ID), Namespace: req.Namespace, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{req.Owner},
		},
		Type:      corev1.SecretTypeOpaque,
		Immutable: &immutable,
		Data:      auth.data,
	}
	if _, err := p.core.CoreV1().Secrets(req.Namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("creating the clone step's credentials Secret %s/%s: %w", req.Namespace, s.Name, err)
	}
	return s.Name, nil
}

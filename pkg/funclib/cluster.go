package funclib

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"knative.dev/func/pkg/k8s"
)

// KubeconfigFile is the name of the kubeconfig UseCluster writes.
const KubeconfigFile = "func-library.kubeconfig"

// UseCluster points the func library at the cluster of cfg. func v0.44 builds its
// clients from KUBECONFIG (or the in-cluster config) and takes no rest.Config, so
// this writes cfg as a kubeconfig (mode 0600) into dir, sets KUBECONFIG to it for the
// whole process, and checks that func's clients now reach the same API server as the
// same user. Call it once at start-up.
//
// dir must be a directory of this process alone (mode 0700, as os.MkdirTemp makes
// it): the kubeconfig holds the operator's credentials, or the paths to them. Client
// certificates, tokens, token files and exec plugins carry over; auth-provider plugins
// do not, and make UseCluster fail.
func UseCluster(ctx context.Context, cfg *rest.Config, dir string) (string, error) {
	if cfg.AuthProvider != nil {
		return "", fmt.Errorf("the operator authenticates through the %q auth-provider plugin, which the func library's kubeconfig cannot carry: "+
			"use a client certificate, a token, a token file or an exec plugin", cfg.AuthProvider.Name)
	}
	if err := privateDir(dir); err != nil {
		return "", err
	}
	kc := clientcmdapi.NewConfig()
	const name = "func-operator"
	kc.Clusters[name] = &clientcmdapi.Cluster{
		Server:                   cfg.Host + cfg.APIPath,
		CertificateAuthority:     cfg.CAFile,
		CertificateAuthorityData: cfg.CAData,
		InsecureSkipTLSVerify:    cfg.Insecure,
		TLSServerName:            cfg.ServerName,
	}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{
		ClientCertificate:     cfg.CertFile,
		ClientCertificateData: cfg.CertData,
		ClientKey:             cfg.KeyFile,
		ClientKeyData:         cfg.KeyData,
		Token:                 tokenUnlessFile(cfg),
		TokenFile:             cfg.BearerTokenFile,
		Username:              cfg.Username,
		Password:              cfg.Password,
		Exec:                  cfg.ExecProvider.DeepCopy(),
		Impersonate:           cfg.Impersonate.UserName,
		ImpersonateUID:        cfg.Impersonate.UID,
		ImpersonateGroups:     cfg.Impersonate.Groups,
		ImpersonateUserExtra:  cfg.Impersonate.Extra,
	}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	kc.CurrentContext = name
	path := filepath.Join(dir, KubeconfigFile)
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return "", fmt.Errorf("writing the func library's kubeconfig: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		return "", fmt.Errorf("restricting the func library's kubeconfig: %w", err)
	}
	if err := os.Setenv(clientcmd.RecommendedConfigPathEnvVar, path); err != nil {
		return "", fmt.Errorf("setting KUBECONFIG: %w", err)
	}
	got, err := k8s.GetClientConfig().ClientConfig()
	if err != nil {
		return "", fmt.Errorf("the func library cannot load its cluster config: %w", err)
	}
	if got.Host != kc.Clusters[name].Server {
		return "", fmt.Errorf("the func library talks to %s, the operator to %s", got.Host, kc.Clusters[name].Server)
	}
	want, err := whoAmI(ctx, cfg)
	if err != nil {
		return "", fmt.Errorf("asking the API server who the operator is: %w", err)
	}
	is, err := whoAmI(ctx, got)
	if err != nil {
		return "", fmt.Errorf("the func library cannot authenticate with the operator's credentials: %w", err)
	}
	if is != want {
		return "", fmt.Errorf("the func library authenticates as %s, the operator as %s", is, want)
	}
	return path, nil
}

// tokenUnlessFile is cfg's bearer token, unless it comes from a file (as in a pod):
// then the kubeconfig names the file, which the kubelet rotates, and holds no token.
func tokenUnlessFile(cfg *rest.Config) string {
	if cfg.BearerTokenFile != "" {
		return ""
	}
	return cfg.BearerToken
}

// privateDir fails unless dir is a directory that only its owner may enter.
func privateDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case err != nil:
		return fmt.Errorf("the directory for the func library's kubeconfig: %w", err)
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	case fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("%s has mode %v: the func library's kubeconfig holds the operator's credentials and goes only into a private directory (0700)",
			dir, fi.Mode().Perm())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s belongs to user %d, not to the operator's (%d): the func library's kubeconfig goes only into a directory of the operator's own",
			dir, st.Uid, os.Geteuid())
	}
	return nil
}

// whoAmI returns the user the API server sees behind cfg: its name and UID.
func whoAmI(ctx context.Context, cfg *rest.Config) (string, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	if r.Status.UserInfo.Username == "" {
		return "", errors.New("the API server names no user")
	}
	return fmt.Sprintf("%q (UID %q)", r.Status.UserInfo.Username, r.Status.UserInfo.UID), nil
}

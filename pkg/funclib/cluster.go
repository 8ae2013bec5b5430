package funclib

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"knative.dev/func/pkg/k8s"
)

// KubeconfigFile is the name of the kubeconfig UseCluster writes.
const KubeconfigFile = "func-library.kubeconfig"

// UseCluster points the func library at the cluster of cfg. func v0.44 builds its
// clients from KUBECONFIG (or the in-cluster config) and takes no rest.Config, so
// this writes cfg as a kubeconfig under dir, sets KUBECONFIG to it for the whole
// process, and checks that func now resolves the same API server. Call it once at
// start-up. cfg's credentials stay files or in-memory values of this process: the
// kubeconfig is written with mode 0600 into the operator's own work directory.
func UseCluster(cfg *rest.Config, dir string) (string, error) {
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
		Token:                 cfg.BearerToken,
		TokenFile:             cfg.BearerTokenFile,
		Username:              cfg.Username,
		Password:              cfg.Password,
		Impersonate:           cfg.Impersonate.UserName,
		ImpersonateUID:        cfg.Impersonate.UID,
		ImpersonateGroups:     cfg.Impersonate.Groups,
		ImpersonateUserExtra:  cfg.Impersonate.Extra,
	}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	kc.CurrentContext = name
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("creating %s: %w", dir, err)
	}
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
	return path, nil
}

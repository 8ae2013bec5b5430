package envtest

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Kubeconfig writes cfg as a kubeconfig, for a process the tests start (the garbage
// collector, the Tekton controller): the server and its CA, and whichever credentials
// cfg has (client certificate, token, basic auth, exec or auth provider), inline or
// as files, with its impersonation.
func Kubeconfig(cfg *rest.Config) ([]byte, error) {
	server, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("the API server's URL: %w", err)
	}
	const name = "envtest"
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{
		Server:                   server.String(),
		TLSServerName:            cfg.ServerName,
		InsecureSkipTLSVerify:    cfg.Insecure,
		CertificateAuthority:     cfg.CAFile,
		CertificateAuthorityData: cfg.CAData,
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
		AuthProvider:          cfg.AuthProvider,
		Exec:                  cfg.ExecProvider,
	}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	kc.CurrentContext = name
	content, err := clientcmd.Write(*kc)
	if err != nil {
		return nil, fmt.Errorf("writing a kubeconfig: %w", err)
	}
	return content, nil
}

package funclib

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/retry"
	"knative.dev/func/pkg/k8s"
)

// KubeconfigFile is the name of the kubeconfig UseCluster writes.
const KubeconfigFile = "func-library.kubeconfig"

// Cluster is the func library's way to the operator's cluster: a kubeconfig in a
// private directory that points at a loopback proxy (see apiProxy).
type Cluster struct {
	// Kubeconfig is the path of the kubeconfig KUBECONFIG names.
	Kubeconfig string
	proxy      *apiProxy
}

// Close stops the proxy; the func library reaches the cluster no more.
func (c *Cluster) Close() error {
	activeProxy.CompareAndSwap(c.proxy, nil)
	return c.proxy.close()
}

// activeProxy is the proxy KUBECONFIG points at, while it serves.
var activeProxy atomic.Pointer[apiProxy]

// throughProxy fails unless func's clients, built now as func builds them, go
// through the proxy that serves: not, for instance, straight to the API server with
// the in-cluster credentials, as func falls back to when KUBECONFIG names no file.
// It returns the proxy.
func throughProxy() (*apiProxy, error) {
	p := activeProxy.Load()
	if p == nil {
		return nil, errors.New("the func library's proxy is not running")
	}
	cfg, err := k8s.GetClientConfig().ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("the func library cannot load its cluster config: %w", err)
	}
	if cfg.Host != p.url() {
		return nil, fmt.Errorf("the func library would reach %s, not the operator's proxy %s", cfg.Host, p.url())
	}
	return p, nil
}

// UseCluster points the func library at the cluster of cfg. func (v0.50 as v0.44) builds its
// clients from KUBECONFIG (or the in-cluster config) and takes no rest.Config, so
// this starts a loopback proxy that forwards func's requests with cfg, writes a
// kubeconfig for the proxy (mode 0600, holding only the proxy's random token) into
// dir, sets KUBECONFIG to it for the whole process, and checks that func's clients
// now reach the API server as the same user as cfg. The proxy sets
// buildServiceAccount on every PipelineRun func creates. Call it once at start-up,
// and Close the Cluster when the operator stops.
//
// dir must be a directory of this process alone (mode 0700, as os.MkdirTemp makes
// it). Whatever credentials cfg carries work (client certificates, tokens, token
// files, exec plugins), since they never leave the process.
func UseCluster(ctx context.Context, cfg *rest.Config, dir string, buildServiceAccount func() string) (_ *Cluster, retErr error) {
	if err := privateDir(dir); err != nil {
		return nil, err
	}
	want, err := whoAmI(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("asking the API server who the operator is: %w", err)
	}
	proxy, err := startProxy(cfg, buildServiceAccount)
	if err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			_ = proxy.close()
		}
	}()
	kc := clientcmdapi.NewConfig()
	const name = "func-operator"
	kc.Clusters[name] = &clientcmdapi.Cluster{Server: proxy.url(), CertificateAuthorityData: proxy.caPEM}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: proxy.token}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	kc.CurrentContext = name
	path := filepath.Join(dir, KubeconfigFile)
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return nil, fmt.Errorf("writing the func library's kubeconfig: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		return nil, fmt.Errorf("restricting the func library's kubeconfig: %w", err)
	}
	if err := os.Setenv(clientcmd.RecommendedConfigPathEnvVar, path); err != nil {
		return nil, fmt.Errorf("setting KUBECONFIG: %w", err)
	}
	got, err := k8s.GetClientConfig().ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("the func library cannot load its cluster config: %w", err)
	}
	if got.Host != proxy.url() {
		return nil, fmt.Errorf("the func library talks to %s, not to the operator's proxy %s", got.Host, proxy.url())
	}
	is, err := whoAmI(ctx, got)
	if err != nil {
		return nil, fmt.Errorf("the func library cannot reach the API server through the operator's proxy: %w", err)
	}
	if is != want {
		return nil, fmt.Errorf("the func library authenticates as %s, the operator as %s", is, want)
	}
	// Were the kubeconfig ever gone, func would fall back to the in-cluster config,
	// past the proxy: the process has no in-cluster config from here on (the
	// operator's own clients are built already).
	for _, v := range []string{"KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"} {
		if err := os.Unsetenv(v); err != nil {
			return nil, fmt.Errorf("unsetting %s: %w", v, err)
		}
	}
	activeProxy.Store(proxy)
	return &Cluster{Kubeconfig: path, proxy: proxy}, nil
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
	var r *authenticationv1.SelfSubjectReview
	err = retry.OnError(whoAmIBackoff, func(err error) bool {
		return ctx.Err() == nil && !apierrors.IsUnauthorized(err) && !apierrors.IsForbidden(err)
	},
		func() (err error) {
			r, err = cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
			return err
		})
	if err != nil {
		return "", err
	}
	if r.Status.UserInfo.Username == "" {
		return "", errors.New("the API server names no user")
	}
	return fmt.Sprintf("%q (UID %q)", r.Status.UserInfo.Username, r.Status.UserInfo.UID), nil
}

// whoAmIBackoff retries a review that failed for another reason than the
// credentials (a connection lost mid-answer, as a loaded API server's at start: seen
// once in CI), for about 1.5 s: the operator does not start when it fails.
var whoAmIBackoff = wait.Backoff{Steps: 5, Duration: 100 * time.Millisecond, Factor: 2}

package operator

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"k8s.io/client-go/rest"

	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/netguard"
	"github.com/fnops/func-operator/pkg/registry"
	"github.com/fnops/func-operator/pkg/source"
)

// remotes returns what reads Functions' repositories and images, every connection
// through the network guard and every read within the ConfigMap's bounds.
func remotes(restConfig *rest.Config, store *config.Store, workDir string) (*netguard.Guard, *source.Fetcher, *registry.Inspector, error) {
	guard, err := newGuard(restConfig, store.Load())
	if err != nil {
		return nil, nil, nil, err
	}
	source.InstallGuard(guard)
	inspector := registry.NewInspector(registry.DefaultCacheSize, remote.WithTransport(guard.Transport(0)))
	inspector.Limits = func() registry.Limits {
		c := store.Load()
		return registry.Limits{MaxMemory: c.InspectMaxMemory, MaxBytes: c.InspectMaxBytes}
	}
	fetcher := source.NewFetcher(workDir, source.DefaultCacheSize)
	fetcher.Guard = guard
	fetcher.Limits = func() source.Limits {
		c := store.Load()
		return source.Limits{MaxBytes: c.CloneMaxBytes, MaxFiles: c.CloneMaxFiles}
	}
	return guard, fetcher, inspector, nil
}

// newGuard returns the network guard of the git and registry clients: the
// built-in refusals, the API server the operator talks to, and the ConfigMap's
// lists.
func newGuard(restConfig *rest.Config, c config.Config) (*netguard.Guard, error) {
	p, err := policy(restConfig, c)
	if err != nil {
		return nil, err
	}
	return netguard.New(p), nil
}

// updateGuard puts the lists of c in force.
func updateGuard(g *netguard.Guard, restConfig *rest.Config, c config.Config) error {
	p, err := policy(restConfig, c)
	if err != nil {
		return err
	}
	g.SetPolicy(p)
	return nil
}

func policy(restConfig *rest.Config, c config.Config) (*netguard.Policy, error) {
	apiServers, err := netguard.ResolveAPIServer(lookup, restConfig.Host,
		os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT"))
	if err != nil {
		return nil, fmt.Errorf("the network policy needs the API server's addresses: %w", err)
	}
	p, err := netguard.NewPolicy(apiServers, c.HostDeny, c.HostAllow)
	if err != nil {
		return nil, fmt.Errorf("the network policy: %w", err)
	}
	return p, nil
}

func lookup(host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(context.Background(), "ip", host)
}

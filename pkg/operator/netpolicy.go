package operator

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"k8s.io/client-go/rest"

	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/git"
	"github.com/fnops/func-operator/pkg/netguard"
	"github.com/fnops/func-operator/pkg/registry"
)

// remotes returns what reads Functions' repositories and images, every connection
// through the network guard and every read within the ConfigMap's bounds.
func remotes(restConfig *rest.Config, store *config.Store, workDir string, own netguard.Own) (*netguard.Guard, *git.Fetcher, *registry.Inspector, error) {
	guard, err := newGuard(restConfig, own, store.Load())
	if err != nil {
		return nil, nil, nil, err
	}
	git.InstallGuard(guard)
	inspector := registry.NewInspector(registry.DefaultCacheSize, remote.WithTransport(guard.Transport(0)))
	inspector.Guard = guard // the transports of inspections with a Secret's ca.crt
	inspector.Limits = func() registry.Limits {
		c := store.Load()
		return registry.Limits{MaxMemory: c.InspectMaxMemory, MaxBytes: c.InspectMaxBytes}
	}
	// How long what a base tag points to is taken as read: the ConfigMap's
	// baseCheckInterval, which nothing else reads.
	inspector.BaseTTL = func() time.Duration { return store.Load().Base.CheckInterval }
	fetcher := git.NewFetcher(workDir, git.DefaultCacheSize, funclib.SourceManifests{})
	fetcher.Guard = guard
	fetcher.Limits = func() git.Limits {
		c := store.Load()
		return git.Limits{MaxBytes: c.CloneMaxBytes, MaxFiles: c.CloneMaxFiles, MaxObjectBytes: c.CloneMaxObjectBytes}
	}
	fetcher.CommitStoreBytes = func() int64 { return store.Load().CommitStoreMaxBytes }
	return guard, fetcher, inspector, nil
}

// newGuard returns the network guard of the git and registry clients: the
// built-in refusals, the API server the operator talks to, its own listeners and,
// unless own.AllowLoopback, loopback, and the ConfigMap's lists.
func newGuard(restConfig *rest.Config, own netguard.Own, c config.Config) (*netguard.Guard, error) {
	p, err := policy(restConfig, own, c)
	if err != nil {
		return nil, err
	}
	g := netguard.New(p)
	// HTTPS_PROXY, HTTP_PROXY and NO_PROXY, as the process started with them.
	g.SetProxy(netguard.ProxyFromEnvironment())
	return g, nil
}

// updateGuard puts the lists of c in force.
func updateGuard(g *netguard.Guard, restConfig *rest.Config, own netguard.Own, c config.Config) error {
	p, err := policy(restConfig, own, c)
	if err != nil {
		return err
	}
	g.SetPolicy(p)
	return nil
}

func policy(restConfig *rest.Config, own netguard.Own, c config.Config) (*netguard.Policy, error) {
	apiServers, err := netguard.ResolveAPIServer(lookup, restConfig.Host,
		os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT"))
	if err != nil {
		return nil, fmt.Errorf("the network policy needs the API server's addresses: %w", err)
	}
	p, err := netguard.NewPolicyWithOwn(apiServers, own, c.HostDeny, c.HostAllow)
	if err != nil {
		return nil, fmt.Errorf("the network policy: %w", err)
	}
	return p, nil
}

func lookup(host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(context.Background(), "ip", host)
}

// ownListeners are the addresses of the operator's own listeners (metrics,
// probes, push receiver, profiles, the func library's API proxy) that a Function
// must not make it connect to: on every address of the host when a listener binds
// them all.
func ownListeners(binds ...string) []netip.AddrPort {
	var local []netip.Addr
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil {
				local = append(local, p.Addr())
			}
		}
	}
	local = append(local, netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback())
	var out []netip.AddrPort
	for _, b := range binds {
		host, portText, err := net.SplitHostPort(b)
		if err != nil {
			continue // "0": disabled
		}
		port, err := strconv.ParseUint(portText, 10, 16)
		if err != nil || port == 0 {
			continue
		}
		if a, err := netip.ParseAddr(host); err == nil && !a.IsUnspecified() {
			out = append(out, netip.AddrPortFrom(a, uint16(port)))
			continue
		}
		for _, a := range local {
			out = append(out, netip.AddrPortFrom(a, uint16(port)))
		}
	}
	return out
}

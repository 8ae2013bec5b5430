package envtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/fnops/func-operator/test/testfs"
)

// AssetsEnv names the directory holding etcd, kube-apiserver and kubectl.
const AssetsEnv = "KUBEBUILDER_ASSETS"

// Third-party CRDs, copied from the modules go.mod pins by hack/update-third-party.sh.
const (
	KnativeServingCRDs = "third_party/knative-serving"
	// KnativeNetworkingCRDs are the KIngress, Certificate, ServerlessService and
	// ClusterDomainClaim, which the real Serving controller (test/knative) needs.
	KnativeNetworkingCRDs = "third_party/knative-networking"
	// KnativeCachingCRDs is Knative's Image, which the real Serving controller watches.
	KnativeCachingCRDs  = "third_party/knative-caching"
	KnativeEventingCRDs = "third_party/knative-eventing"
	TektonCRDs          = "third_party/tekton-pipeline"
	// KEDAHTTPCRDs is the KEDA HTTP add-on's HTTPScaledObject, which func's keda
	// deployer writes (github.com/kedacore/http-add-on, config/crd/bases). No add-on
	// operator runs: SimulateKEDAHTTPAddOn plays its status.
	KEDAHTTPCRDs = "third_party/keda-http-add-on"
)

// Environment is a running control plane.
type Environment struct {
	env    *envtest.Environment
	Config *rest.Config
	// certDir keeps the API server's serving certificates across a restart, so that
	// clients made before it trust the restarted one.
	certDir string
	// assets is the directory of the binaries it runs.
	assets string
}

// RepoRoot returns the root of the func-operator checkout (testfs.RepoRoot).
func RepoRoot() string { return testfs.RepoRoot() }

// Start starts etcd and kube-apiserver from $KUBEBUILDER_ASSETS and installs the
// Function CRD from config/ plus the CRD files given (paths relative to the repository
// root or absolute). `make test` sets KUBEBUILDER_ASSETS to the binaries that
// hack/control-plane.sh builds.
func Start(extraCRDs ...string) (*Environment, error) {
	assets := os.Getenv(AssetsEnv)
	if assets == "" {
		return nil, fmt.Errorf("%s is not set: run `make test`, or export %s=$(hack/control-plane.sh)", AssetsEnv, AssetsEnv)
	}
	return StartFrom(assets, extraCRDs...)
}

// StartFrom is Start with the binaries of the directory assets (a folder that
// hack/control-plane.sh printed, e.g. of another Kubernetes version) instead of
// $KUBEBUILDER_ASSETS'.
func StartFrom(assets string, extraCRDs ...string) (*Environment, error) {
	if _, err := os.Stat(filepath.Join(assets, "kube-apiserver")); err != nil {
		return nil, fmt.Errorf("no control plane in %s (build one with hack/control-plane.sh): %w", assets, err)
	}
	root := RepoRoot()
	crds := []string{filepath.Join(root, "config", "300-function.yaml")}
	var unconverted []string
	for _, p := range extraCRDs {
		if !filepath.IsAbs(p) {
			p = filepath.Join(root, p)
		}
		if filepath.Base(p) == filepath.Base(TektonCRDs) {
			unconverted = append(unconverted, p)
			continue
		}
		crds = append(crds, p)
	}
	// Tekton's CRDs convert between their versions (v1beta1 and v1; v1alpha1 and
	// v1beta1 for StepActions and ResolutionRequests) through the Tekton webhook,
	// which does not run here: without a webhook only each storage version could be
	// served. func v0.50.1 and the operator write tekton.dev/v1, the storage version,
	// but a client may still read or write another served version. With the
	// conversion strategy None the API server serves every version of one stored
	// object, changing only apiVersion — enough for the fields func and the operator use.
	extra, err := crdsWithoutConversion(unconverted...)
	if err != nil {
		return nil, err
	}
	certDir, err := os.MkdirTemp("", "func-operator-apiserver-")
	if err != nil {
		return nil, fmt.Errorf("creating the API server's certificate directory: %w", err)
	}
	// envtest's Start sets etcd's and kube-apiserver's start and stop timeouts from
	// these two, over any the components were given (controller-runtime v0.23
	// envtest/server.go), so they are set here, not on the components: before, its
	// defaults of 20 s applied, and under load kube-apiserver took longer to start. A stop
	// that takes longer than apiServerStopTimeout (open watches) ends in SIGKILL.
	env := &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		CRDDirectoryPaths:        crds,
		CRDs:                     extra,
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: startTimeout,
		ControlPlaneStopTimeout:  apiServerStopTimeout,
		// envtest waits 10 s for the CRDs to be served; on a loaded machine (2 cores,
		// the suites beside) installing the 20 of them took 17 s.
		CRDInstallOptions: envtest.CRDInstallOptions{MaxTime: crdWaitTimeout},
	}
	// The binaries' paths are explicit: envtest would otherwise take them from
	// $KUBEBUILDER_ASSETS before BinaryAssetsDirectory, whatever StartFrom was given.
	env.ControlPlane.APIServer = &envtest.APIServer{CertDir: certDir, Path: filepath.Join(assets, "kube-apiserver")}
	env.ControlPlane.Etcd = &envtest.Etcd{Path: filepath.Join(assets, "etcd")}
	env.ControlPlane.KubectlPath = filepath.Join(assets, "kubectl")
	cfg, err := env.Start()
	if err != nil {
		// Start fails after etcd and kube-apiserver run too (installing the CRDs):
		// they are stopped here, not left behind.
		_ = env.Stop()
		_ = os.RemoveAll(certDir)
		return nil, fmt.Errorf("starting the control plane from %s: %w", assets, err)
	}
	return &Environment{env: env, Config: cfg, certDir: certDir, assets: assets}, nil
}

// startTimeout is how long etcd and kube-apiserver may take to become ready, each try
// (envtest tries 5 times), and kube-apiserver again after StopAPIServer. envtest's
// default, 20 s, is what an idle machine needs several times over; beside make test's
// other phases and a busy core, kube-apiserver took longer (make run's, in hack/run's test).
const startTimeout = 2 * time.Minute

// apiServerStopTimeout is how long kube-apiserver (and etcd, when the environment
// stops) may take to stop on SIGTERM before it is killed.
const apiServerStopTimeout = 3 * time.Second

// StopAPIServer stops kube-apiserver (etcd keeps running), as an outage of the
// control plane: every client's requests fail until StartAPIServer. One that does not
// stop within apiServerStopTimeout of SIGTERM is killed (SIGKILL), as a crash.
func (e *Environment) StopAPIServer() error {
	err := e.env.ControlPlane.APIServer.Stop()
	if err != nil && !strings.Contains(err.Error(), "timeout waiting for process") {
		return fmt.Errorf("stopping kube-apiserver: %w", err)
	}
	if err != nil {
		time.Sleep(time.Second) // for the killed process to let its port go
	}
	return nil
}

// StartAPIServer starts kube-apiserver again after StopAPIServer, on the same
// address, with the same certificates and users, and returns once it is healthy.
func (e *Environment) StartAPIServer() error {
	if err := e.env.ControlPlane.APIServer.Start(); err != nil {
		return fmt.Errorf("starting kube-apiserver again: %w", err)
	}
	return nil
}

// crdsWithoutConversion reads the CRDs of the directories given with their
// conversion strategy set to None.
func crdsWithoutConversion(dirs ...string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if err != nil {
			return nil, fmt.Errorf("listing CRDs in %s: %w", dir, err)
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("no CRDs in %s", dir)
		}
		for _, f := range files {
			content, err := os.ReadFile(f)
			if err != nil {
				return nil, fmt.Errorf("reading CRD: %w", err)
			}
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.UnmarshalStrict(content, crd); err != nil {
				return nil, fmt.Errorf("decoding CRD %s: %w", f, err)
			}
			crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
			crds = append(crds, crd)
		}
	}
	return crds, nil
}

// AddUser adds a user to the control plane, for a kubeconfig of its own.
func (e *Environment) AddUser(u envtest.User) (*envtest.AuthenticatedUser, error) {
	user, err := e.env.AddUser(u, nil)
	if err != nil {
		return nil, fmt.Errorf("adding user %s: %w", u.Name, err)
	}
	return user, nil
}

// Stop stops the control plane.
func (e *Environment) Stop() error {
	err := e.env.Stop()
	if rmErr := os.RemoveAll(e.certDir); err == nil && rmErr != nil {
		err = rmErr
	}
	if err != nil {
		return fmt.Errorf("stopping the control plane: %w", err)
	}
	return nil
}

// StartT starts a control plane for one test, with extraCRDs, and stops it when the
// test ends.
func StartT(t testing.TB, extraCRDs ...string) *Environment {
	t.Helper()
	skipShort(t)
	env, err := Start(extraCRDs...)
	if err != nil {
		t.Fatal(err)
	}
	stopAtCleanup(t, env)
	return env
}

// StartFromT is StartT with the binaries of the directory assets (StartFrom).
func StartFromT(t testing.TB, assets string, extraCRDs ...string) *Environment {
	t.Helper()
	skipShort(t)
	env, err := StartFrom(assets, extraCRDs...)
	if err != nil {
		t.Fatal(err)
	}
	stopAtCleanup(t, env)
	return env
}

// Assets returns the directory of the binaries the control plane runs.
func (e *Environment) Assets() string { return e.assets }

// stopAtCleanup stops env when the test ends.
func stopAtCleanup(t testing.TB, env *Environment) {
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})
}

// InstallCRDs installs, into a running control plane, the CRDs of the directories
// given (relative to the repository root or absolute), as Start would have: Tekton's
// with the conversion strategy None. It returns once they are served.
func (e *Environment) InstallCRDs(dirs ...string) error {
	var plain, unconverted []string
	for _, p := range dirs {
		if !filepath.IsAbs(p) {
			p = filepath.Join(RepoRoot(), p)
		}
		if filepath.Base(p) == filepath.Base(TektonCRDs) {
			unconverted = append(unconverted, p)
		} else {
			plain = append(plain, p)
		}
	}
	extra, err := crdsWithoutConversion(unconverted...)
	if err != nil {
		return err
	}
	if _, err := envtest.InstallCRDs(e.Config, envtest.CRDInstallOptions{Paths: plain, CRDs: extra, ErrorIfPathMissing: true, MaxTime: crdWaitTimeout}); err != nil {
		return fmt.Errorf("installing CRDs: %w", err)
	}
	return nil
}

// crdWaitTimeout bounds the wait for installed CRDs to be served.
const crdWaitTimeout = 2 * time.Minute

// skipShort skips a test that needs a control plane under -short: it is not of the
// quick tier (make test-unit).
func skipShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a control plane: not in the quick tier (-short, make test-unit)")
	}
}

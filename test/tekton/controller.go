// Package tekton runs the real Tekton Pipelines controller against envtest, with a kubelet simulation, for tests.
package tekton

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/fnops/func-operator/test/sharedmain"
)

// ControllerEnv names the Tekton controller binary that hack/tekton-controller.sh
// builds; `make test` sets it.
const ControllerEnv = "FUNC_OPERATOR_TEKTON_CONTROLLER"

// SystemNamespace is the namespace the controller reads its ConfigMaps from, as
// Tekton's release installs it.
const SystemNamespace = "tekton-pipelines"

// tektonModule is the Go module whose config/config-*.yaml are the controller's
// ConfigMaps.
const tektonModule = "github.com/tektoncd/pipeline"

// featureFlags are the values of the feature-flags ConfigMap that differ from
// Tekton's release, and why.
var featureFlags = map[string]string{
	// envtest runs no StatefulSet controller, so an affinity assistant (a
	// StatefulSet per PipelineRun with a PVC workspace, as func's) would never
	// start. (Tekton v1 dropped the older disable-affinity-assistant flag.)
	"coschedule": "disabled",
}

// releaseEnvSkipped are the variables of the release's controller container that
// are not set here, and why: they name files of volumes the release mounts
// (config-registry-cert, the image's CA bundle), which do not exist here.
var releaseEnvSkipped = map[string]bool{"SSL_CERT_FILE": true, "SSL_CERT_DIR": true}

// Controller is a running Tekton Pipelines controller process.
type Controller struct {
	*sharedmain.Process
}

// StartController starts the Tekton controller of $FUNC_OPERATOR_TEKTON_CONTROLLER
// against the API server of cfg, as Tekton's release runs it (the arguments and
// environment of the container of config/controller.yaml, read from the module
// go.mod pins; see releaseCommand), and returns once its reconcilers run. It first
// creates the namespace tekton-pipelines and the controller's ConfigMaps there:
// those of Tekton's config/config-*.yaml, with the affinity assistant off (see
// featureFlags). No resolvers deployment runs: a remote reference (hub, bundles,
// git…) stays unresolved. The controller logs to tekton-controller.log in logDir, or
// in a directory of its own that Stop removes when logDir is empty; it runs without
// leader election (-disable-ha), one replica.
//
// It runs as sharedmain.Start runs a controller: ports free when it starts, and no
// request out of the machine.
func StartController(cfg *rest.Config, logDir string) (*Controller, error) {
	bin := os.Getenv(ControllerEnv)
	if bin == "" {
		return nil, fmt.Errorf("%s is not set: run `make test`, or export %s=$(hack/tekton-controller.sh)", ControllerEnv, ControllerEnv)
	}
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%s: %w (build it with hack/tekton-controller.sh)", ControllerEnv, err)
	}
	if err := installConfig(context.Background(), cfg); err != nil {
		return nil, err
	}
	release, err := releaseCommand()
	if err != nil {
		return nil, err
	}
	p, err := sharedmain.Start(cfg, sharedmain.Options{
		Name: "the Tekton controller", Binary: bin, Args: append([]string{"-disable-ha"}, release.Args...), Env: release.Env,
		LogDir: logDir, LogName: "tekton-controller",
	})
	if err != nil {
		return nil, err
	}
	return &Controller{Process: p}, nil
}

// StartControllerT starts the controller (StartController) for one test, logging
// to a directory of the test's, and stops it when the test ends. The end of its
// log is in the test's output when the test failed.
func StartControllerT(t testing.TB, cfg *rest.Config) *Controller {
	t.Helper()
	c, err := StartController(cfg, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the Tekton controller's log ends with:\n%s", c.LogTail(60))
		}
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// installConfig creates the namespace tekton-pipelines and the controller's
// ConfigMaps; those that exist are left as they are.
func installConfig(ctx context.Context, cfg *rest.Config) error {
	cms, err := configMaps()
	if err != nil {
		return err
	}
	return sharedmain.Install(ctx, cfg, SystemNamespace, cms)
}

// configMaps returns the ConfigMaps of Tekton's config/config-*.yaml, read once,
// in SystemNamespace and with featureFlags applied.
var configMaps = sync.OnceValues(func() ([]*corev1.ConfigMap, error) {
	dir, err := sharedmain.ModuleDir(tektonModule)
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(dir, "config", "config-*.yaml"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no config/config-*.yaml in %s (%v)", dir, err)
	}
	cms, err := sharedmain.ConfigMaps(SystemNamespace, files...)
	if err != nil {
		return nil, err
	}
	flagsFound := false
	for _, cm := range cms {
		if cm.Name != "feature-flags" {
			continue
		}
		flagsFound = true
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		for k, v := range featureFlags {
			cm.Data[k] = v
		}
	}
	if !flagsFound {
		return nil, fmt.Errorf("no ConfigMap feature-flags in %s/config", dir)
	}
	return cms, nil
})

// imageFlagValue is what every image flag of the controller is given: no container
// runs, so any names do (the flags are required).
func imageFlagValue(flagName string) string {
	return "tekton-test.invalid/" + flagName + ":simulated"
}

// releaseCommand reads the controller's container from Tekton's config/controller.yaml
// (the module go.mod pins) and returns its arguments, with every image flag
// (-entrypoint-image, -nop-image, ..., -shell-image-win) given imageFlagValue, and
// its environment: the literal values (e.g. KUBERNETES_MIN_VERSION, the lowest
// Kubernetes the release accepts, and the ConfigMaps' names) but releaseEnvSkipped,
// and SYSTEM_NAMESPACE, which the release takes from the Pod's namespace.
var releaseCommand = sync.OnceValues(func() (sharedmain.Container, error) {
	dir, err := sharedmain.ModuleDir(tektonModule)
	if err != nil {
		return sharedmain.Container{}, err
	}
	file := filepath.Join(dir, "config", "controller.yaml")
	ctr, err := sharedmain.ReleaseContainer(file, SystemNamespace, "tekton-pipelines-controller", "tekton-pipelines-controller", releaseEnvSkipped)
	if err != nil {
		return sharedmain.Container{}, err
	}
	run := sharedmain.Container{Env: ctr.Env}
	images := 0
	for i := 0; i < len(ctr.Args); i++ {
		arg := ctr.Args[i]
		run.Args = append(run.Args, arg)
		flagName := strings.TrimLeft(arg, "-")
		if strings.HasPrefix(arg, "-") && (strings.HasSuffix(flagName, "-image") || strings.HasSuffix(flagName, "-image-win")) && i+1 < len(ctr.Args) {
			run.Args = append(run.Args, imageFlagValue(flagName))
			images++
			i++
		}
	}
	if images == 0 {
		return sharedmain.Container{}, fmt.Errorf("%s: no image flags in the controller's arguments %v", file, ctr.Args)
	}
	return run, nil
})

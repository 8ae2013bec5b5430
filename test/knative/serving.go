package knative

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/fnops/func-operator/test/envtest"
	"github.com/fnops/func-operator/test/sharedmain"
)

// ControllerEnv names the Serving controller binary that
// hack/knative-serving-controller.sh builds; `make test` sets it.
const ControllerEnv = "FUNC_OPERATOR_KNATIVE_SERVING_CONTROLLER"

// SystemNamespace is the namespace the controller reads its ConfigMaps from, as
// Serving's release installs it.
const SystemNamespace = "knative-serving"

const (
	servingModule    = "knative.dev/serving"
	networkingModule = "knative.dev/networking"
)

// CRDs are the CRD folders a Serving stack needs: envtest.Start(knative.CRDs...).
var CRDs = []string{envtest.KnativeServingCRDs, envtest.KnativeNetworkingCRDs, envtest.KnativeCachingCRDs}

// queueImage is the queue-proxy image the Revisions' pods are given: no container
// runs, so any name does (the release's is a ko:// reference).
const queueImage = "knative-test.invalid/queue:simulated"

// Options configure a Serving stack.
type Options struct {
	// ProgressDeadline is config-deployment's progress-deadline: how long a new
	// Revision's pods may take to be ready before Knative reports it failed (the
	// release's 600s when zero).
	ProgressDeadline time.Duration
	// OwnWorkloads says the caller runs kube-controller-manager's workload
	// controllers (envtest.WorkloadControllers) and a kubelet simulation against the
	// API server already: Start starts neither, and NotReady and Pull are unused.
	OwnWorkloads bool
	// NotReady and Pull are the kubelet simulation's (envtest.KubeletOptions).
	NotReady func(*corev1.Pod) bool
	Pull     func(image string) error
	// LogDir holds the controller's log; a directory of its own, removed by Stop,
	// when empty. (kube-controller-manager logs to a directory of its own, which
	// Stop removes.)
	LogDir string
	// Logf, when set, logs what the simulations could not write.
	Logf func(format string, args ...any)
	// Observe, when set, is told what the autoscaler and networking simulations did,
	// each sentence naming its simulation (make demo).
	Observe func(msg string)
}

// Serving is a running Serving stack.
type Serving struct {
	Controller *sharedmain.Process
	Kubelet    *envtest.Kubelet
	Autoscaler *envtest.Autoscaler
	Networking *envtest.Networking

	webhook   *webhook
	stopKCM   func() error
	stopOnce  sync.Once
	stopError error
}

// Start starts, against env (started with CRDs), a Serving stack: Knative's webhook code
// (webhook.go), the namespace knative-serving with the ConfigMaps of Serving's
// config/core/configmaps and networking's config-network (queue-sidecar-image a
// name, progress-deadline from opts), kube-controller-manager's deployment,
// replicaset and garbage-collector controllers and the kubelet simulation (unless
// opts.OwnWorkloads), the autoscaler and networking simulations, and the controller of $FUNC_OPERATOR_KNATIVE_SERVING_CONTROLLER
// as Serving's release runs it (config/core/deployments/controller.yaml). It returns
// once the controller's reconcilers run. One stack per API server: its controllers
// work in every namespace.
func Start(env *envtest.Environment, opts Options) (_ *Serving, err error) {
	bin := os.Getenv(ControllerEnv)
	if bin == "" {
		return nil, fmt.Errorf("%s is not set: run `make test`, or export %s=$(hack/knative-serving-controller.sh)", ControllerEnv, ControllerEnv)
	}
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%s: %w (build it with hack/knative-serving-controller.sh)", ControllerEnv, err)
	}
	ctx := context.Background()
	s := &Serving{}
	defer func() {
		if err != nil {
			_ = s.Stop()
		}
	}()
	cms, err := configMaps(opts.ProgressDeadline)
	if err != nil {
		return nil, err
	}
	if err := sharedmain.Install(ctx, env.Config, SystemNamespace, cms); err != nil {
		return nil, err
	}
	if s.webhook, err = startWebhook(ctx, env.Config); err != nil {
		return nil, err
	}
	if !opts.OwnWorkloads {
		if s.stopKCM, err = env.StartControllers(envtest.WorkloadControllers()...); err != nil {
			return nil, err
		}
		if s.Kubelet, err = envtest.SimulateKubelet(ctx, env.Config, envtest.KubeletOptions{NotReady: opts.NotReady, Pull: opts.Pull, Logf: opts.Logf}); err != nil {
			return nil, err
		}
	}
	if s.Autoscaler, err = envtest.SimulateAutoscaler(ctx, env.Config, envtest.AutoscalerOptions{Logf: opts.Logf, Observe: opts.Observe}); err != nil {
		return nil, err
	}
	if s.Networking, err = envtest.SimulateNetworking(ctx, env.Config, envtest.NetworkingOptions{Logf: opts.Logf, Observe: opts.Observe}); err != nil {
		return nil, err
	}
	release, err := releaseCommand()
	if err != nil {
		return nil, err
	}
	s.Controller, err = sharedmain.Start(env.Config, sharedmain.Options{
		Name: "the Knative Serving controller", Binary: bin, Args: release.Args, Env: release.Env,
		LogDir: opts.LogDir, LogName: "knative-serving-controller",
	})
	if err != nil {
		return nil, err
	}
	if opts.Logf != nil {
		played := "Knative's autoscaler and networking layer"
		if !opts.OwnWorkloads {
			played = "the kubelet, " + played
		}
		opts.Logf("knative: the real Serving controller runs (pid %d, log %s); simulated, for want of pods and a data plane: %s",
			s.Controller.Pid(), s.Controller.LogFile, played)
	}
	return s, nil
}

// StartT starts a Serving stack (Start) for one test, or a test binary's TestMain
// through its top test, and stops it when the test ends; the end of the
// controller's log is in the test's output when the test failed.
func StartT(t testing.TB, env *envtest.Environment, opts Options) *Serving {
	t.Helper()
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	if opts.LogDir == "" {
		opts.LogDir = t.TempDir()
	}
	s, err := Start(env, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the Knative Serving controller's log ends with:\n%s", s.Controller.LogTail(60))
		}
		if err := s.Stop(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// Stop stops the stack, the controller first; it may be called more than once.
func (s *Serving) Stop() error {
	s.stopOnce.Do(func() {
		var errs []error
		if s.Controller != nil {
			errs = append(errs, s.Controller.Stop())
		}
		if s.Networking != nil {
			s.Networking.Stop()
		}
		if s.Autoscaler != nil {
			s.Autoscaler.Stop()
		}
		if s.Kubelet != nil {
			s.Kubelet.Stop()
		}
		if s.stopKCM != nil {
			errs = append(errs, s.stopKCM())
		}
		if s.webhook != nil {
			s.webhook.stop()
		}
		s.stopError = errors.Join(errs...)
	})
	return s.stopError
}

// configMaps returns Serving's ConfigMaps and networking's config-network, in
// SystemNamespace, with queue-sidecar-image queueImage and progress-deadline.
func configMaps(progressDeadline time.Duration) ([]*corev1.ConfigMap, error) {
	serving, err := sharedmain.ModuleDir(servingModule)
	if err != nil {
		return nil, err
	}
	networking, err := sharedmain.ModuleDir(networkingModule)
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(serving, "config", "core", "configmaps", "*.yaml"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no config/core/configmaps/*.yaml in %s (%v)", serving, err)
	}
	files = append(files, filepath.Join(networking, "config", "config-network.yaml"))
	cms, err := sharedmain.ConfigMaps(SystemNamespace, files...)
	if err != nil {
		return nil, err
	}
	found := false
	for _, cm := range cms {
		if cm.Name != "config-deployment" {
			continue
		}
		found = true
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data["queue-sidecar-image"] = queueImage
		if progressDeadline > 0 {
			cm.Data["progress-deadline"] = progressDeadline.String()
		}
	}
	if !found {
		return nil, fmt.Errorf("no ConfigMap config-deployment in %s/config/core/configmaps", serving)
	}
	return cms, nil
}

// releaseCommand reads the controller's container from Serving's
// config/core/deployments/controller.yaml (the module go.mod pins): no arguments,
// and its environment (the ConfigMaps' names; SYSTEM_NAMESPACE and POD_NAME, which
// the release takes from the Pod).
var releaseCommand = sync.OnceValues(func() (sharedmain.Container, error) {
	dir, err := sharedmain.ModuleDir(servingModule)
	if err != nil {
		return sharedmain.Container{}, err
	}
	return sharedmain.ReleaseContainer(filepath.Join(dir, "config", "core", "deployments", "controller.yaml"), SystemNamespace, "controller", "controller", nil)
})

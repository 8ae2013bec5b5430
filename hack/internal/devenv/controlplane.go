package devenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	fotenv "github.com/fnops/func-operator/test/envtest"
)

// ControlPlaneCRDs are the third-party CRDs of the embedded control plane: the same
// as the tests', Tekton's without their conversion webhook.
var ControlPlaneCRDs = []string{fotenv.KnativeServingCRDs, fotenv.KnativeEventingCRDs, fotenv.TektonCRDs}

// StartControlPlane starts etcd and kube-apiserver (from $KUBEBUILDER_ASSETS, else
// built once and cached by hack/control-plane.sh, which then says so on progress)
// with the operator's CRDs, ControlPlaneCRDs and the folders of extraCRDs that
// ControlPlaneCRDs lacks (make demo adds those the real Knative Serving controller
// watches: test/knative's CRDs).
func StartControlPlane(root string, progress io.Writer, extraCRDs ...string) (*fotenv.Environment, error) {
	assets := os.Getenv(fotenv.AssetsEnv)
	if assets == "" {
		_, _ = fmt.Fprintln(progress, "the control plane's binaries: hack/control-plane.sh builds them once, then caches them")
		cmd := exec.Command(filepath.Join(root, "hack", "control-plane.sh"))
		cmd.Stderr = progress
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("building the control plane: %w", err)
		}
		assets = strings.TrimSpace(string(out))
	}
	crds := slices.Clone(ControlPlaneCRDs)
	for _, dir := range extraCRDs {
		if !slices.Contains(crds, dir) {
			crds = append(crds, dir)
		}
	}
	env, err := fotenv.StartFrom(assets, crds...)
	if err != nil {
		return nil, fmt.Errorf("starting the embedded control plane: %w", err)
	}
	return env, nil
}

// WriteKubeconfig adds a user of group system:masters to the control plane and
// writes its kubeconfig, for kubectl, to path (its directory made when missing).
func WriteKubeconfig(env *fotenv.Environment, path string) error {
	user, err := env.AddUser(envtest.User{Name: "developer", Groups: []string{"system:masters"}})
	if err != nil {
		return err
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return fmt.Errorf("writing the kubeconfig: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("writing the kubeconfig: %w", err)
	}
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		return fmt.Errorf("writing the kubeconfig: %w", err)
	}
	return nil
}

// EnsureNamespace creates namespace name unless it exists.
func EnsureNamespace(ctx context.Context, cfg *rest.Config, name string) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating a client: %w", err)
	}
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

// RepoRoot returns the root of the func-operator checkout the working directory is
// in.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "hack", "control-plane.sh")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run from inside the func-operator checkout")
		}
		dir = parent
	}
}

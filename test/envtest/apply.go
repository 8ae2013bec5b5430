package envtest

import (
	"time"

	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Apply server-side applies every object of the YAML files given (paths relative to
// the repository root or absolute) as kubectl apply --server-side would, and returns them.
func Apply(ctx context.Context, cfg *rest.Config, files ...string) ([]*unstructured.Unstructured, error) {
	objs, err := Read(files...)
	if err != nil {
		return nil, err
	}
	return objs, ApplyObjects(ctx, cfg, objs...)
}

// Read returns every object of the YAML files given (paths relative to the
// repository root or absolute).
func Read(files ...string) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	for _, f := range files {
		if !filepath.IsAbs(f) {
			f = filepath.Join(RepoRoot(), f)
		}
		content, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", f, err)
		}
		docs, err := Decode(content)
		if err != nil {
			return nil, fmt.Errorf("decoding %s: %w", f, err)
		}
		objs = append(objs, docs...)
	}
	return objs, nil
}

// ApplyObjects server-side applies objs.
func ApplyObjects(ctx context.Context, cfg *rest.Config, objs ...*unstructured.Unstructured) error {
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return fmt.Errorf("creating a client: %w", err)
	}
	for _, o := range objs {
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), client.FieldOwner("func-operator-dev"), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
	return nil
}

// Decode splits a multi-document YAML into objects, skipping empty documents.
func Decode(content []byte) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(content)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{}
		if err := utilyaml.Unmarshal(doc, &u.Object); err != nil {
			return nil, err
		}
		if len(u.Object) == 0 {
			continue
		}
		objs = append(objs, u)
	}
}

// RBACFiles are the RBAC objects of config/, as `ko apply -f config/` installs them.
var RBACFiles = []string{
	"config/100-namespace.yaml", "config/200-serviceaccount.yaml",
	"config/200-clusterrole.yaml", "config/200-namespace-clusterrole.yaml", "config/200-builder-clusterrole.yaml",
	"config/200-builder-keda-clusterrole.yaml", MetricsReaderFile,
	"config/200-clusterrolebinding.yaml", "config/200-rolebinding.yaml",
}

// MetricsReaderFile is config/'s ClusterRole of who may scrape the operator's metrics
// (get on /metrics), which Prometheus's ServiceAccount is bound to.
const MetricsReaderFile = "config/200-metrics-reader-clusterrole.yaml"

// NetworkPolicyFile is config/'s NetworkPolicy of what reaches the operator's pods.
const NetworkPolicyFile = "config/600-networkpolicy.yaml"

// DeploymentFile holds config/'s operator Deployment and its Services.
const DeploymentFile = "config/500-controller.yaml"

// PolicyFiles are the admission policies of config/: the Secrets a Function may name,
// the hosts a build's HTTPScaledObject may claim (KedaHostsPolicyFile), and the
// operator's ConfigMap checked when it is written (ConfigPolicyFile).
var PolicyFiles = []string{"config/310-function-secret-policy.yaml", KedaHostsPolicyFile, ConfigPolicyFile}

// KedaHostsPolicyFile limits the HTTPScaledObjects a build ServiceAccount
// (func-operator-builder) writes to the hosts func's keda deployer writes.
const KedaHostsPolicyFile = "config/320-keda-hosts-policy.yaml"

// ConfigPolicyFile checks the operator's ConfigMap (config/400-config.yaml, in
// namespace func-operator) at admission, as the operator reads it.
const ConfigPolicyFile = "config/390-config-policy.yaml"

// OnboardingFile onboards a namespace to the operator.
const OnboardingFile = "config/namespace/onboard.yaml"

// KedaOnboardingFile lets the operator rebuild a namespace's keda functions, beside
// OnboardingFile.
const KedaOnboardingFile = "config/namespace/onboard-keda.yaml"

// Onboard applies OnboardingFile in namespace, as its admin would with
// `kubectl apply -n <namespace> -f config/namespace/onboard.yaml`. The ClusterRoles it
// binds come from RBACFiles.
func Onboard(ctx context.Context, cfg *rest.Config, namespace string) error {
	return applyIn(ctx, cfg, namespace, OnboardingFile)
}

// OnboardKEDA applies KedaOnboardingFile in namespace, as its admin would.
func OnboardKEDA(ctx context.Context, cfg *rest.Config, namespace string) error {
	return applyIn(ctx, cfg, namespace, KedaOnboardingFile)
}

// applyIn applies file, whose objects name no namespace, in namespace (kubectl apply -n).
func applyIn(ctx context.Context, cfg *rest.Config, namespace, file string) error {
	objs, err := Read(file)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if o.GetNamespace() != "" {
			return fmt.Errorf("%s: %s %s names namespace %s; it is applied with -n", file, o.GetKind(), o.GetName(), o.GetNamespace())
		}
		o.SetNamespace(namespace)
	}
	return ApplyObjects(ctx, cfg, objs...)
}

// OperatorUser is the operator's ServiceAccount, as the API server names it.
const OperatorUser = "system:serviceaccount:func-operator:func-operator"

// AsOperator returns cfg impersonating the operator's ServiceAccount (config/'s
// func-operator/func-operator), with the groups a ServiceAccount token carries: a
// client of it has only the RBAC of config/.
func AsOperator(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{
		UserName: OperatorUser,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:func-operator", "system:authenticated"},
	}
	return c
}

// NewNamespace creates a namespace of its own for a test (name prefix, then random),
// onboarded to the operator (OnboardingFile) when onboard is set.
func NewNamespace(t testing.TB, cfg *rest.Config, prefix string, onboard bool) string {
	t.Helper()
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}
	if err := c.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	if onboard {
		if err := Onboard(context.Background(), cfg, ns.Name); err != nil {
			t.Fatalf("onboarding namespace %s: %v", ns.Name, err)
		}
	}
	return ns.Name
}

// OperatorClient is a client with the operator's identity (AsOperator) and only the
// RBAC of config/, knowing the types of scheme.
func OperatorClient(t testing.TB, cfg *rest.Config, scheme *runtime.Scheme) client.Client {
	t.Helper()
	c, err := client.New(AsOperator(cfg), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Until polls cond every 100 ms for 10 seconds, and fails the test when it never held.
func Until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("not within 10s: %s", what)
}

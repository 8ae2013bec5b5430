package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/operator"
	fotenv "github.com/fnops/func-operator/test/envtest"
)

// TestSample runs what `make run` does on its embedded control plane: the sample
// repository served here, the sample Function from config/samples, and the operator,
// until the Function's source is ready.
func TestSample(t *testing.T) {
	env, err := fotenv.Start(fotenv.KnativeServingCRDs, fotenv.KnativeEventingCRDs, fotenv.TektonCRDs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})
	url, stop, err := serveSample(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)

	ctx, cancel := context.WithCancel(context.Background())
	if err := ensureNamespace(ctx, env.Config, "func-operator"); err != nil {
		t.Fatal(err)
	}
	mgr, err := operator.New(ctx, env.Config, operator.Options{
		SystemNamespace: "func-operator", MetricsAddr: "0", ProbeAddr: "0", WorkDir: t.TempDir(),
		SkipControllerNameValidation: true, // go test -count=N runs it N times in one process
		AllowLoopback:                true, // the sample repository is on loopback
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	if err := applySample(ctx, env.Config, fotenv.RepoRoot(), url); err != nil {
		t.Fatal(err)
	}

	scheme, err := operator.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		fn := &v1alpha1.Function{}
		err := c.Get(ctx, types.NamespacedName{Namespace: "default", Name: "sample"}, fn)
		msg := fmt.Sprint(err)
		if err == nil {
			src := fn.Status.GetCondition(v1alpha1.FunctionConditionSourceReady)
			dep := fn.Status.GetCondition(v1alpha1.FunctionConditionDeployed)
			if src != nil && src.Status == corev1.ConditionTrue && fn.Status.Name == "hello" && fn.Status.Deployment.Runtime == "go" &&
				dep != nil && dep.Reason == v1alpha1.ReasonNotDeployed {
				return
			}
			msg = fmt.Sprintf("SourceReady = %+v, Deployed = %+v, name %q", src, dep, fn.Status.Name)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sample Function: %s", msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

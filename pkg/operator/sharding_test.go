package operator

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/test/gitserver"
)

// TestOperator_Shards: two operators, each with its own label selector and leader
// election Lease, reconcile each its own Functions and none of the other's.
func TestOperator_Shards(t *testing.T) {
	root := gitserver.NewRepoRoot(t)
	srv := gitserver.StartHTTP(t, root)
	repo := gitserver.CreateRepo(t, root, "sharded")
	repo.Commit(t, "main", map[string]string{"func.yaml": funcYAML("sharded", "go")}, "first")

	ns := newNamespace(t)
	cfg := config.Defaults()
	cfg.CheckInterval, cfg.GitTimeout = time.Second, 10*time.Second
	startOperatorOptions(t, cfg, nil, func(o *Options) {
		o.WatchLabelSelector, o.LeaderElection, o.LeaderElectionID = "functions.dev/shard=a", true, "shard-a"
	}, ns)
	ctx := context.Background()
	for _, shard := range []string{"a", "b"} {
		if err := k8sClient.Create(ctx, &v1alpha1.Function{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fn-" + shard, Labels: map[string]string{"functions.dev/shard": shard}},
			Spec:       v1alpha1.FunctionSpec{Repository: v1alpha1.Repository{URL: srv.URL("sharded")}},
		}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 30*time.Second, sourceReady(ns, "fn-a", corev1.ConditionTrue, v1alpha1.ReasonFuncYamlRead))
	time.Sleep(3 * time.Second) // three check intervals
	if got := getFunction(t, ns, "fn-b"); len(got.Status.Conditions) != 0 {
		t.Fatalf("shard a's operator reconciled fn-b (shard b): status %+v", got.Status)
	}

	// Shard b's operator, with a Lease of its own, leads at the same time and takes it.
	startOperatorOptions(t, cfg, nil, func(o *Options) {
		o.WatchLabelSelector, o.LeaderElection, o.LeaderElectionID = "functions.dev/shard=b", true, "shard-b"
	}, ns)
	eventually(t, 30*time.Second, sourceReady(ns, "fn-b", corev1.ConditionTrue, v1alpha1.ReasonFuncYamlRead))
}

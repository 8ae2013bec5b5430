package operator

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/test/gitserver"
)

// TestOperator_OneTransferPerCommit: the Functions of a monorepo cost one object
// transfer of each commit, counted at the server: one for their first check, one for
// a push that changes every one of them (without sharing, one per Function each time).
func TestOperator_OneTransferPerCommit(t *testing.T) {
	const (
		interval = 4 * time.Second
		m        = 10
	)
	root := gitserver.NewRepoRoot(t)
	srv := gitserver.StartHTTP(t, root)
	mono := gitserver.CreateRepo(t, root, "mono")
	files := map[string]string{}
	for i := 0; i < m; i++ {
		files[fmt.Sprintf("fn%d/func.yaml", i)] = funcYAML(fmt.Sprintf("fn%d", i), "go")
		files[fmt.Sprintf("fn%d/handle.go", i)] = "package function\n"
	}
	c1 := mono.Commit(t, "main", files, "functions")

	ns := newNamespace(t)
	startOperator(t, interval, ns)
	ctx := context.Background()
	for i := 0; i < m; i++ {
		if err := k8sClient.Create(ctx, &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("fn%d", i)},
			Spec: v1alpha1.FunctionSpec{Repository: v1alpha1.Repository{URL: srv.URL("mono"), Branch: "main", Path: fmt.Sprintf("fn%d", i)}}}); err != nil {
			t.Fatal(err)
		}
	}
	observed := func(commit string) func() string {
		return func() string {
			for i := 0; i < m; i++ {
				if g := getFunction(t, ns, fmt.Sprintf("fn%d", i)).Status.Git; g == nil || g.ObservedCommit != commit {
					return fmt.Sprintf("fn%d: status.git = %+v, want commit %s", i, g, commit)
				}
			}
			return ""
		}
	}
	for i := 0; i < m; i++ {
		eventually(t, 30*time.Second, sourceReady(ns, fmt.Sprintf("fn%d", i), corev1.ConditionTrue, v1alpha1.ReasonFuncYamlRead))
	}
	eventually(t, 10*time.Second, observed(c1))
	if got := srv.UploadPacks("mono"); got != 1 {
		t.Errorf("first check: %d transfers at the server for %d Functions on one commit, want 1", got, m)
	}

	// A push that changes every function directory.
	changed := map[string]string{}
	for i := 0; i < m; i++ {
		changed[fmt.Sprintf("fn%d/handle.go", i)] = "package function\n\n// changed\n"
	}
	c2 := mono.Commit(t, "main", changed, "change every function")
	eventually(t, 3*interval, observed(c2))
	if got := srv.UploadPacks("mono"); got != 2 {
		t.Errorf("after one push: %d transfers at the server in all, want 2 (one per commit)", got)
	}
	// Steady state: no transfer.
	time.Sleep(2 * interval)
	if got := srv.UploadPacks("mono"); got != 2 {
		t.Errorf("steady state: %d transfers at the server in all, want still 2", got)
	}
}

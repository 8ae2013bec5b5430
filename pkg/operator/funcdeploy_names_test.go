package operator

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/test/gitserver"
)

// TestOperator_FuncDeployOverUpstreamsNewNames: a Function written with upstream's
// newer names (revision, dir) is followed, a later func v0.50.1 deploy, which writes
// the older ones (branch, path) through types that know no others, replaces them and
// is not refused by the rules that refuse both names of a pair, and a newer func,
// writing the newer names over the older ones, neither. The status shows both names
// of what is followed at each step.
func TestOperator_FuncDeployOverUpstreamsNewNames(t *testing.T) {
	ctx := context.Background()
	root := gitserver.NewRepoRoot(t)
	srv := gitserver.StartHTTP(t, root)
	repo := gitserver.CreateRepo(t, root, "names")
	tagged := repo.Commit(t, "main", map[string]string{"fns/hello/func.yaml": funcYAML("hello", "go")}, "hello")
	repo.Tag(t, "v1", tagged, true)
	onMain := repo.Commit(t, "main", map[string]string{"fns/hello/README.md": "after v1\n"}, "after v1")
	url := srv.URL("names")

	ns := newNamespace(t)
	userCfg := newFuncUser(t, ns, "hello")
	startOperator(t, time.Hour, ns) // no periodic check: the writes below wake it
	gitIs := func(want v1alpha1.GitStatus) func() string {
		return func() string {
			fn := getFunction(t, ns, "hello")
			if fn.Status.ObservedGeneration != fn.Generation || fn.Status.Git == nil {
				return fmt.Sprintf("generation %d observed %d, status.git %+v", fn.Generation, fn.Status.ObservedGeneration, fn.Status.Git)
			}
			got := *fn.Status.Git
			got.LastChecked = nil
			if diff := cmp.Diff(want, got); diff != "" {
				return "status.git (-want +got):\n" + diff
			}
			return ""
		}
	}

	// Upstream's newer names: a tag by its plain name.
	fn := &v1alpha1.Function{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hello"},
		Spec:       v1alpha1.FunctionSpec{Repository: v1alpha1.Repository{URL: url, Revision: "v1", Dir: "fns/hello"}},
	}
	if err := k8sClient.Create(ctx, fn); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, gitIs(v1alpha1.GitStatus{ResolvedRevision: "refs/tags/v1", ResolvedRef: "refs/tags/v1", ObservedCommit: tagged}))

	// func v0.50.1 deploys: its Update carries branch and path, and drops revision and
	// dir, which its types do not know. (The developer's RoleBinding reaches the
	// authorizer a moment after it is made; func does not retry a conflict.)
	fd := newFuncDeployer(t, userCfg, ns, "hello")
	eventually(t, 20*time.Second, func() string {
		op, err := fd.deploy(ctx, url, "main", "fns/hello")
		if err != nil {
			return "func deploy: " + err.Error()
		}
		if op != "updated" {
			t.Fatalf("func deploy %s the Function, want updated", op)
		}
		return ""
	})
	if r := getFunction(t, ns, "hello").Spec.Repository; r != (v1alpha1.Repository{URL: url, Branch: "main", Path: "fns/hello"}) {
		t.Errorf("spec.repository = %+v after func deploy, want branch main and path fns/hello alone", r)
	}
	eventually(t, 30*time.Second, gitIs(v1alpha1.GitStatus{ResolvedBranch: "main", ResolvedRevision: "main", ResolvedRef: "refs/heads/main", ObservedCommit: onMain}))
	if c := fd.clashes(); len(c) > 0 {
		t.Errorf("func's decoding into upstream's types failed: %v", c)
	}

	// The control: an update that merges revision into that spec is refused, so the
	// deploy above passed the rule, not around it.
	err := k8sClient.Patch(ctx, &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hello"}},
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"repository":{"revision":"v1"}}}`)))
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "set branch or revision, not both") {
		t.Errorf("merge patch adding revision beside branch: %v, want it refused naming both", err)
	}

	// A newer func writes upstream's newer names, replacing the spec as func does.
	eventually(t, 20*time.Second, func() string {
		fn := getFunction(t, ns, "hello")
		fn.Spec.Repository = v1alpha1.Repository{URL: url, Revision: "refs/heads/main", Dir: "fns/hello"}
		if err := k8sClient.Update(ctx, fn); err != nil {
			if apierrors.IsConflict(err) {
				return err.Error()
			}
			t.Fatalf("the newer names over the older ones: %v", err)
		}
		return ""
	})
	eventually(t, 30*time.Second, gitIs(v1alpha1.GitStatus{ResolvedBranch: "main", ResolvedRevision: "main", ResolvedRef: "refs/heads/main", ObservedCommit: onMain}))
}

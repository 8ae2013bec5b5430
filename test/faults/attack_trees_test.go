package faults

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/test/envtest"
	"github.com/fnops/func-operator/test/gitserver"
)

// wideTreesRSS is the most memory the operator may use reading the wide trees' commit
// (its peak resident set): what it uses through every other attack (rssBound), and
// what go-git's indexing of a clone holds, which this operator does not bound: its
// cache of delta bases (96 MiB) and the object it resolves with its base (two times
// cloneMaxObjectBytes). Measured: 301 to 320 MiB; 636 MiB when every tree was copied
// into memory first (docs/limitations.md).
const wideTreesRSS = rssBound + 96<<20 + 2*(32<<20)

// TestAttack_WideTrees: a tenant's commit holds, beside its function's directory,
// six trees of 850,001 entries each (29 MiB each, 175 MiB in all, about 2 MiB on the
// wire), over what the commit store may keep (64 MiB) though each is under
// cloneMaxObjectBytes. The operator binary, as shipped (default bounds), reads the
// function's directory (SourceReady True), measures the trees one at a time as they
// stream, keeps none of them, and stays under wideTreesRSS.
func TestAttack_WideTrees(t *testing.T) {
	// The clone (the server walks 5 million tree entries) takes a few seconds beside
	// the other tests; the suite's 2s is for failing fast elsewhere.
	s := setUp(t, map[string]string{config.KeyGitTimeout: "1m"}, nil)
	ns := envtest.NewNamespace(t, s.env.Config, "trees-", true)
	s.createSecrets(t, ns)
	repo := gitserver.CreateRepo(t, s.gitRoot, ns)
	repo.CommitWideTrees(t, "main", map[string]string{"fn/func.yaml": funcYAMLFor("wide")}, 6, 850001)
	before := peakRSS(t, s.kubelet.pid())
	s.createFunction(t, ns, "wide", s.git.URL(ns), "fn", "")
	waited := until(t, 3*time.Minute, "wide SourceReady", func() string {
		fn := s.function(ns, "wide")
		if fn == nil {
			return "not read"
		}
		if c := fn.Status.GetCondition(v1alpha1.FunctionConditionSourceReady); c == nil || c.Status != corev1.ConditionTrue {
			return fmt.Sprintf("SourceReady %+v", c)
		}
		return ""
	})
	hwm := peakRSS(t, s.kubelet.pid())
	t.Logf("the wide trees' function read in %s; operator peak RSS %d MiB (%d MiB before)", waited.Round(100*time.Millisecond), hwm>>20, before>>20)
	if hwm > wideTreesRSS {
		t.Errorf("operator peak RSS %d MiB reading the wide trees, over the bound of %d MiB", hwm>>20, wideTreesRSS>>20)
	}
	if n := s.kubelet.Starts(); n != 1 {
		t.Errorf("the operator was started %d times, want 1", n)
	}
}

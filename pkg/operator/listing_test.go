package operator

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/test/gitserver"
)

// TestOperator_OneListingPerRepository: the Functions on one repository with the same
// credentials share one listing per check interval, in every namespace; other
// credentials never get it; a new commit, or a new tag in a semver range, reaches
// every Function within one interval.
func TestOperator_OneListingPerRepository(t *testing.T) {
	const (
		interval = 4 * time.Second
		public   = 6
	)
	root := gitserver.NewRepoRoot(t)
	srv := gitserver.StartHTTP(t, root)
	mono := gitserver.CreateRepo(t, root, "mono")
	files := map[string]string{}
	for i := 0; i < public; i++ {
		files[fmt.Sprintf("fn%d/func.yaml", i)] = funcYAML(fmt.Sprintf("fn%d", i), "go")
	}
	c1 := mono.Commit(t, "main", files, "functions")
	mono.Tag(t, "v1.0.0", c1, true)
	priv := gitserver.CreateRepo(t, root, "priv")
	priv.Commit(t, "main", map[string]string{"func.yaml": funcYAML("priv", "go")}, "private")
	srv.RequireToken("priv", token)

	ns1, ns2 := newNamespace(t), newNamespace(t)
	_, store := startOperator(t, interval, ns1, ns2)
	ctx := context.Background()
	for _, s := range []struct{ ns, name, token string }{{ns1, "git", token}, {ns2, "git", token}, {ns2, "wrong", wrongToken}} {
		if err := k8sClient.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: s.name},
			Data:       map[string][]byte{"token": []byte(s.token)},
		}); err != nil {
			t.Fatal(err)
		}
	}
	create := func(ns, name string, repo v1alpha1.Repository) {
		t.Helper()
		if err := k8sClient.Create(ctx, &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.FunctionSpec{Repository: repo}}); err != nil {
			t.Fatal(err)
		}
	}
	var monoFns []string
	for i := 0; i < public; i++ {
		ns := []string{ns1, ns2}[i%2]
		create(ns, fmt.Sprintf("fn%d", i), v1alpha1.Repository{URL: srv.URL("mono"), Branch: "main", Path: fmt.Sprintf("fn%d", i)})
		monoFns = append(monoFns, ns+"/"+fmt.Sprintf("fn%d", i))
	}
	create(ns1, "tagged", v1alpha1.Repository{URL: srv.URL("mono"), Path: "fn0", Ref: &v1alpha1.GitRef{SemVer: "^1"}})
	secretRef := func(name string) *corev1.LocalObjectReference { return &corev1.LocalObjectReference{Name: name} }
	create(ns1, "priv", v1alpha1.Repository{URL: srv.URL("priv"), AuthSecretRef: secretRef("git")})
	create(ns2, "priv", v1alpha1.Repository{URL: srv.URL("priv"), AuthSecretRef: secretRef("git")})
	create(ns2, "priv-wrong", v1alpha1.Repository{URL: srv.URL("priv"), AuthSecretRef: secretRef("wrong")})
	create(ns2, "priv-anonymous", v1alpha1.Repository{URL: srv.URL("priv")})

	for _, fn := range append(monoFns, ns1+"/tagged", ns1+"/priv", ns2+"/priv") {
		ns, name := splitKey(fn)
		eventually(t, 30*time.Second, sourceReady(ns, name, corev1.ConditionTrue, v1alpha1.ReasonFuncYamlRead))
	}
	// Other credentials, and none, never get the listing made with the token.
	eventually(t, 30*time.Second, sourceReady(ns2, "priv-wrong", corev1.ConditionFalse, v1alpha1.ReasonBranchListFailed))
	eventually(t, 30*time.Second, sourceReady(ns2, "priv-anonymous", corev1.ConditionFalse, v1alpha1.ReasonBranchListFailed))
	if got := getFunction(t, ns1, "tagged").Status.Git; got == nil || got.ResolvedRef != "refs/tags/v1.0.0" || got.ObservedCommit != c1 {
		t.Errorf("tagged: status.git = %+v, want resolvedRef refs/tags/v1.0.0 at %s", got, c1)
	}

	// Steady state: one listing per repository and interval, not one per Function.
	const intervals = 4
	monoBefore, privBefore := srv.RefAdvertisements("mono"), srv.RefAdvertisements("priv")
	clonesBefore := srv.UploadPacks("mono")
	if clonesBefore > public {
		t.Errorf("mono: %d clones for %d function directories, want one each at most (the tag's commit is the branch's)", clonesBefore, public)
	}
	time.Sleep(intervals * interval)
	monoListings := srv.RefAdvertisements("mono") - monoBefore
	privListings := srv.RefAdvertisements("priv") - privBefore
	// 7 Functions on mono and 2 on priv with the same token: without sharing, 28 and 8.
	if monoListings < intervals-1 || monoListings > intervals+2 {
		t.Errorf("mono: %d listings in %d intervals for %d Functions, want about one per interval", monoListings, intervals, public+1)
	}
	if privListings > intervals+2 {
		t.Errorf("priv: %d listings in %d intervals, want about one per interval (the stalled ones recheck later)", privListings, intervals)
	}
	if c := srv.UploadPacks("mono") - clonesBefore; c != 0 {
		t.Errorf("mono: %d clones in steady state, want none", c)
	}

	// A new commit reaches every Function on the repository within one interval (with
	// a moment for the reconcile), and a new tag the semver range matches too.
	c2 := mono.Commit(t, "main", map[string]string{"README.md": "second"}, "second")
	mono.Tag(t, "v1.1.0", c2, false)
	start := time.Now()
	// Within one interval, with a moment for the reconciles: 2 intervals is a bound a
	// missed change would pass too, so the time is logged, and asserted below.
	eventually(t, 2*interval, func() string {
		for _, key := range monoFns {
			ns, name := splitKey(key)
			if g := getFunction(t, ns, name).Status.Git; g == nil || g.ObservedCommit != c2 {
				return fmt.Sprintf("%s: status.git = %+v, want commit %s", key, g, c2)
			}
		}
		if g := getFunction(t, ns1, "tagged").Status.Git; g == nil || g.ResolvedRef != "refs/tags/v1.1.0" || g.ObservedCommit != c2 {
			return fmt.Sprintf("tagged: status.git = %+v, want refs/tags/v1.1.0 at %s", g, c2)
		}
		return ""
	})
	took := time.Since(start)
	t.Logf("the new commit reached all %d Functions %s after it was pushed (checkInterval %s)", public+1, took.Round(10*time.Millisecond), interval)
	if took > interval+interval/2 {
		t.Errorf("the new commit took %s to reach every Function, want within one interval (%s) and a moment", took.Round(10*time.Millisecond), interval)
	}

	// A listing that finds a change brings every Function on the repository back at
	// once, not at its own next check: with a 30 s interval, one Function asked to check
	// now (requested-at) lists the repository, and the others follow within seconds.
	cfg := config.Defaults()
	cfg.CheckInterval, cfg.GitTimeout = 30*time.Second, 10*time.Second
	store.Set(cfg)
	time.Sleep(interval + time.Second) // every check queued at the old interval has run
	c3 := mono.Commit(t, "main", map[string]string{"README.md": "third"}, "third")
	requestCheck(t, ns1, "fn0")
	eventually(t, 8*time.Second, func() string {
		for _, key := range monoFns {
			ns, name := splitKey(key)
			if g := getFunction(t, ns, name).Status.Git; g == nil || g.ObservedCommit != c3 {
				return fmt.Sprintf("%s: status.git = %+v, want commit %s (their own checks are 27 s or more away)", key, g, c3)
			}
		}
		return ""
	})
}

// requestCheck sets annotation functions.dev/requested-at of a Function to a new value.
func requestCheck(t *testing.T, ns, name string) {
	t.Helper()
	fn := getFunction(t, ns, name)
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`,
		v1alpha1.AnnotationRequestedAt, time.Now().Format(time.RFC3339Nano))))
	if err := k8sClient.Patch(context.Background(), fn, patch); err != nil {
		t.Fatal(err)
	}
}

func splitKey(key string) (ns, name string) {
	for i := range key {
		if key[i] == '/' {
			return key[:i], key[i+1:]
		}
	}
	return "", key
}

package faults

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/test/envtest"
	"github.com/fnops/func-operator/test/gitserver"
	"github.com/fnops/func-operator/test/knative"
	"github.com/fnops/func-operator/test/registrytest"
)

// forgedVersion and trueVersion: tenant A's image runs func-go trueVersion, older
// than what the linked func builds; the layer tenant B forges claims forgedVersion.
const (
	trueVersion   = "v0.21.3"
	forgedVersion = registrytest.FuncGoVersion
)

// TestAttack_ForgedDigest: tenant B's registry serves tenant A's manifest and
// config with a forged layer of B's making (its executable claims the newest
// func-go), and B's Knative Service names B's registry with A's digest. After B's
// Function was read, A's Function must still show the middleware of its own image,
// outdated, and B's a verification failure, with no verdict, against the operator
// binary as shipped.
func TestAttack_ForgedDigest(t *testing.T) {
	s := setUp(t, nil, nil)
	if err := s.env.InstallCRDs(knative.CRDs...); err != nil {
		t.Fatal(err)
	}
	s.startKnative(t)

	nsA := envtest.NewNamespace(t, s.env.Config, "digest-a-", true)
	nsB := envtest.NewNamespace(t, s.env.Config, "digest-b-", true)
	s.createSecrets(t, nsA)
	s.createSecrets(t, nsB)

	// A's image, in the suite's private registry.
	refA := s.reg.PushFuncGoELF(t, nsA+"/fn", trueVersion)
	imgA := pull(t, refA, &authn.Basic{Username: registryUser, Password: registryPassword})
	digestA, err := imgA.Digest()
	if err != nil {
		t.Fatal(err)
	}
	layers, err := imgA.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("A's image: %d layers, %v; want 1", len(layers), err)
	}
	layerA, err := layers[0].Digest()
	if err != nil {
		t.Fatal(err)
	}

	// B's registry: A's manifest and config (copied), and under the digest of A's
	// layer, the bytes of a layer B built.
	regB := registrytest.Start(t)
	forgedImg := pull(t, regB.PushFuncGoELF(t, "forged", forgedVersion), authn.Anonymous)
	forgedLayers, err := forgedImg.Layers()
	if err != nil {
		t.Fatal(err)
	}
	rc, err := forgedLayers[0].Compressed()
	if err != nil {
		t.Fatal(err)
	}
	forged, err := io.ReadAll(rc)
	_ = rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	copied, err := name.ParseReference(regB.Host + "/bx:copied")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(copied, imgA); err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse("http://" + regB.Host)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	hostB := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/blobs/"+layerA.String()) {
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("Content-Length", fmt.Sprint(len(forged)))
			_, _ = w.Write(forged)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(hostB.Close)
	refB := strings.TrimPrefix(hostB.URL, "http://") + "/bx@" + digestA.String()

	// B's Function first.
	gitserver.CreateRepo(t, s.gitRoot, nsB).Commit(t, "main", map[string]string{"fns/fn-b/func.yaml": funcYAMLFor("fn-b")}, "B")
	s.createService(t, nsB, "fn-b", refB)
	s.createFunction(t, nsB, "fn-b", s.git.URL(nsB), "fns/fn-b", "")
	until(t, time.Minute, "B's image read", func() string { return middlewareRead(s.function(nsB, "fn-b")) })

	// Then A's.
	gitserver.CreateRepo(t, s.gitRoot, nsA).Commit(t, "main", map[string]string{"fns/fn-a/func.yaml": funcYAMLFor("fn-a")}, "A")
	s.createService(t, nsA, "fn-a", refA)
	s.createFunction(t, nsA, "fn-a", s.git.URL(nsA), "fns/fn-a", "")
	until(t, time.Minute, "A's image read", func() string { return middlewareRead(s.function(nsA, "fn-a")) })

	// Positive control: A's Function read A's own image, from its executable.
	fnA := s.function(nsA, "fn-a")
	if mw := fnA.Status.Middleware; mw == nil || mw.Current != trueVersion || mw.CurrentSource != v1alpha1.MiddlewareSourceBuildInfo {
		t.Errorf("A's Function: status.middleware %+v, want current %s from its build info", mw, trueVersion)
	}
	if c := fnA.Status.GetCondition(v1alpha1.FunctionConditionMiddlewareUpToDate); c == nil || c.Status != corev1.ConditionFalse {
		t.Errorf("A's Function: MiddlewareUpToDate %+v, want False (func-go %s is outdated)", c, trueVersion)
	}
	// The attack: B's Function has no verdict, and says why.
	fnB := s.function(nsB, "fn-b")
	if c := fnB.Status.GetCondition(v1alpha1.FunctionConditionMiddlewareUpToDate); c == nil || c.Reason != v1alpha1.ReasonImageDigestMismatch {
		t.Errorf("B's Function: MiddlewareUpToDate %+v, want reason %s", c, v1alpha1.ReasonImageDigestMismatch)
	}
	if mw := fnB.Status.Middleware; mw != nil && mw.Current != "" {
		t.Errorf("B's Function: status.middleware.current %q, want none from a forged layer", mw.Current)
	}
	if n := s.kubelet.Starts(); n != 1 {
		t.Errorf("the operator was started %d times, want 1", n)
	}
}

// middlewareRead is "" once the operator judged fn's image: a verdict (a current
// version) or a MiddlewareUpToDate reason of a failed read.
func middlewareRead(fn *v1alpha1.Function) string {
	if fn == nil {
		return "not read"
	}
	if fn.Status.Middleware != nil && fn.Status.Middleware.Current != "" {
		return ""
	}
	c := fn.Status.GetCondition(v1alpha1.FunctionConditionMiddlewareUpToDate)
	if c != nil && (c.Reason == v1alpha1.ReasonImageDigestMismatch || c.Reason == v1alpha1.ReasonImageInspectFailed) {
		return ""
	}
	return fmt.Sprintf("%s: MiddlewareUpToDate %+v, status.middleware %+v", fn.Name, c, fn.Status.Middleware)
}

// pull reads the image ref from its registry.
func pull(t *testing.T, ref string, auth authn.Authenticator) v1.Image {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(r, remote.WithAuth(auth))
	if err != nil {
		t.Fatalf("pulling %s: %v", ref, err)
	}
	return img
}

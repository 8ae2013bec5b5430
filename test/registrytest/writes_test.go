package registrytest_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/fnops/func-operator/test/registrytest"
)

// TestAddReader: a reader's credentials pull and are refused every write (403
// DENIED); the registry's own credentials push.
func TestAddReader(t *testing.T) {
	reg := registrytest.StartPrivate(t, "writer", "w-pass")
	reg.AddReader("reader", "r-pass")
	ref := reg.Push(t, "app", "v1")
	reader := remote.WithAuth(&authn.Basic{Username: "reader", Password: "r-pass"})
	d, err := name.NewDigest(ref)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := remote.Image(d, reader); err != nil {
		t.Fatalf("the reader cannot pull: %v", err)
	}
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	err = remote.Write(d.Context().Tag("other"), img, reader)
	var te *transport.Error
	if !errors.As(err, &te) || te.StatusCode != http.StatusForbidden || len(te.Errors) == 0 || te.Errors[0].Code != "DENIED" {
		t.Fatalf("the reader's push: %v, want 403 DENIED", err)
	}
	if err := remote.Write(d.Context().Tag("other"), img, remote.WithAuth(&authn.Basic{Username: "writer", Password: "w-pass"})); err != nil {
		t.Fatalf("control: the writer's push: %v", err)
	}
}

// TestScopeBlobs: a blob pushed to one repository is unknown to another until
// mounted there; the log shows the mount. Without ScopeBlobs (the control), the
// blob is known everywhere.
func TestScopeBlobs(t *testing.T) {
	for _, scoped := range []bool{true, false} {
		reg := registrytest.Start(t)
		if scoped {
			reg.ScopeBlobs()
		}
		layer, err := random.Layer(512, types.DockerLayer)
		if err != nil {
			t.Fatal(err)
		}
		one, err := name.NewRepository(reg.Host + "/one")
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.WriteLayer(one, layer); err != nil {
			t.Fatal(err)
		}
		h, _ := layer.Digest()
		blob := func(repo string) int {
			res, err := http.Head("http://" + reg.Host + "/v2/" + repo + "/blobs/" + h.String())
			if err != nil {
				t.Fatal(err)
			}
			_ = res.Body.Close()
			return res.StatusCode
		}
		want := http.StatusOK
		if scoped {
			want = http.StatusNotFound
		}
		if got := blob("two"); blob("one") != http.StatusOK || got != want {
			t.Fatalf("scoped %v: HEAD in one: %d, in two: %d; want 200 and %d", scoped, blob("one"), got, want)
		}
		if !scoped {
			continue
		}
		res, err := http.Post("http://"+reg.Host+"/v2/two/blobs/uploads/?mount="+h.String()+"&from=one", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		_ = res.Body.Close()
		if res.StatusCode != http.StatusCreated || blob("two") != http.StatusOK {
			t.Fatalf("mount: %d, then HEAD in two: %d; want 201 and 200", res.StatusCode, blob("two"))
		}
		mounts := 0
		for _, l := range reg.Log() {
			if l.Method == http.MethodPost && strings.HasPrefix(l.Path, "/v2/two/") && l.Query.Get("mount") != "" && l.Status == http.StatusCreated {
				mounts++
			}
		}
		if mounts != 1 {
			t.Errorf("the log shows %d mounts, want 1", mounts)
		}
	}
}

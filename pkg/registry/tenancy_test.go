package registry

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// tenantAImage is tenant A's function image: its binary was built with
// olderFuncGoVersion, and after it in the same layer comes a megabyte of data
// that does not compress, so that a forged layer carrying only a binary is
// shorter than the layer it stands in for.
func tenantAImage(t *testing.T) (img v1.Image, fnLayer v1.Layer) {
	t.Helper()
	goBinaries(t)
	pad := make([]byte, 1<<20)
	if _, err := rand.Read(pad); err != nil {
		t.Fatal(err)
	}
	fnLayer = layer(t,
		tarFile{name: "workspace/bin/function", mode: 0o755, body: olderBinary},
		tarFile{name: "workspace/data.bin", body: pad},
	)
	return image(t, "amd64", nil, baseLayer(t), fnLayer), fnLayer
}

// serveForged answers GETs of the blob with digest with the compressed bytes
// of forged instead: what a registry that copied another tenant's manifest and
// config, and put a layer of its own under that manifest, serves.
func serveForged(t *testing.T, digest v1.Hash, forged v1.Layer) func(w http.ResponseWriter, r *http.Request) bool {
	t.Helper()
	rc, err := forged.Compressed()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/blobs/"+digest.String()) {
			return false
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", fmt.Sprint(len(data)))
		_, _ = w.Write(data)
		return true
	}
}

// TestAttack_ForgedLayerUnderAnotherTenantsDigest: tenant B's registry serves
// tenant A's manifest and config, with a forged function layer whose binary
// claims testFuncGoVersion. B's image is inspected first; A's, by the same
// digest in A's private registry, must still read A's own binary
// (olderFuncGoVersion), and B's must fail as content that is not its digest.
func TestAttack_ForgedLayerUnderAnotherTenantsDigest(t *testing.T) {
	fn, _ := goBinaries(t)
	regA, regB := newTestRegistry(t), newTestRegistry(t)
	img, fnLayer := tenantAImage(t)
	d := regA.push(t, "a/private/fn:v1", img)
	regB.push(t, "b/x:v1", img)
	regB.setOverride(serveForged(t, layerDigest(t, fnLayer), functionLayer(t, fn)))

	kcA, err := Keychain(dockerConfig(regA.host, testUser, testPassword))
	if err != nil {
		t.Fatal(err)
	}
	i := NewInspector(10)

	// B's Function: its Service names B's registry with A's digest.
	refB := regB.host + "/b/x@" + d.String()
	m, err := i.Inspect(testCtx(t), refB, nil)
	var ie *InspectError
	if !errors.As(err, &ie) || ie.Reason != ReasonDigestMismatch {
		t.Errorf("Inspect(B's forged image) = %+v, %v; want *InspectError %s", m, err, ReasonDigestMismatch)
	}
	t.Logf("B's inspection: %v", err)

	// A's Function, after B's: A's own binary.
	refA := regA.host + "/a/private/fn@" + d.String()
	want := Middleware{Digest: d.String(), Version: olderFuncGoVersion, Source: SourceBuildInfo}
	if diff := cmp.Diff(want, mustInspect(t, i, refA, kcA)); diff != "" {
		t.Errorf("A's middleware after B's forged image was read (-want +got):\n%s", diff)
	}

	// Positive control: A's image on its own, through a fresh Inspector, reads
	// the same, from its binary (the scan ran: one inspection, no cache).
	fresh := NewInspector(10)
	if diff := cmp.Diff(want, mustInspect(t, fresh, refA, kcA)); diff != "" {
		t.Errorf("A's middleware alone (-want +got):\n%s", diff)
	}
	if ins, hits := fresh.stats(); ins != 1 || hits != 0 {
		t.Errorf("stats() = %d inspections, %d hits; want 1, 0", ins, hits)
	}
}

// TestAttack_CachedVerdictNeedsTheCallersAccess: a verdict cached for one
// caller's credentials is served to another only once that caller's own access
// to the image has been shown; a caller without credentials for A's private
// repository who knows its digest does not learn its middleware.
func TestAttack_CachedVerdictNeedsTheCallersAccess(t *testing.T) {
	reg := newTestRegistry(t)
	img, _ := tenantAImage(t)
	d := reg.push(t, "a/private/fn:v1", img)
	reg.push(t, "a/public/fn:v1", img)
	kcA, err := Keychain(dockerConfig(reg.host, testUser, testPassword))
	if err != nil {
		t.Fatal(err)
	}
	want := Middleware{Digest: d.String(), Version: olderFuncGoVersion, Source: SourceBuildInfo}
	private := reg.host + "/a/private/fn@" + d.String()

	i := NewInspector(10)
	if diff := cmp.Diff(want, mustInspect(t, i, private, kcA)); diff != "" {
		t.Fatalf("A's inspection (-want +got):\n%s", diff)
	}

	// The attack: no credentials, A's digest.
	blobs := reg.blobGets.Load()
	ins, hits := i.stats()
	m, err := i.Inspect(testCtx(t), private, nil)
	var ae *AuthError
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusUnauthorized {
		t.Errorf("Inspect(A's digest, no credentials) = %+v, %v; want *AuthError 401", m, err)
	}
	if n := reg.blobGets.Load() - blobs; n != 0 {
		t.Errorf("the refused caller read %d blobs", n)
	}
	if ins2, hits2 := i.stats(); ins2 != ins || hits2 != hits {
		t.Errorf("stats() = %d inspections, %d hits; want %d, %d (nothing served)", ins2, hits2, ins, hits)
	}
	if n := i.accessChecks.Load(); n != 1 {
		t.Errorf("%d access checks, want 1 (the refused caller's)", n)
	}

	// Positive controls. With A's credentials (another keychain, the same
	// credentials): from the cache, no request at all.
	kcA2, err := Keychain(dockerConfig(reg.host, testUser, testPassword))
	if err != nil {
		t.Fatal(err)
	}
	mark := reg.mark()
	if diff := cmp.Diff(want, mustInspect(t, i, private, kcA2)); diff != "" {
		t.Errorf("A's credentials again (-want +got):\n%s", diff)
	}
	if reqs := reg.since(mark); len(reqs) != 0 {
		t.Errorf("A's credentials again made requests: %v", reqs)
	}

	// Another caller whose access is shown (anonymous, on a public repository
	// holding the same image) gets the verdict from the cache after one manifest
	// HEAD, without its layers being read again.
	public := reg.host + "/a/public/fn@" + d.String()
	if diff := cmp.Diff(want, mustInspect(t, i, public, kcA)); diff != "" {
		t.Errorf("A's credentials on the public repository (-want +got):\n%s", diff)
	}
	ins, hits = i.stats()
	mark, blobs = reg.mark(), reg.blobGets.Load()
	if diff := cmp.Diff(want, mustInspect(t, i, public, nil)); diff != "" {
		t.Errorf("anonymous on the public repository (-want +got):\n%s", diff)
	}
	// The anonymous caller's first request to the repository: its transport pings /v2/.
	if diff := cmp.Diff([]string{"GET /v2/", "HEAD /v2/a/public/fn/manifests/" + d.String()}, reg.since(mark)); diff != "" {
		t.Errorf("requests of an anonymous caller on the public repository (-want +got):\n%s", diff)
	}
	if n := reg.blobGets.Load() - blobs; n != 0 {
		t.Errorf("the anonymous caller read %d blobs", n)
	}
	if ins2, hits2 := i.stats(); ins2 != ins || hits2 != hits+1 {
		t.Errorf("stats() = %d inspections, %d hits; want %d, %d (from the cache)", ins2, hits2, ins, hits+1)
	}
	// And again: the access shown is kept, no request.
	mark = reg.mark()
	mustInspect(t, i, public, nil)
	if reqs := reg.since(mark); len(reqs) != 0 {
		t.Errorf("a second anonymous Inspect made requests: %v", reqs)
	}
	if n := i.accessChecks.Load(); n != 2 {
		t.Errorf("%d access checks, want 2 (the refused caller's, the anonymous caller's first)", n)
	}
}

// TestInspect_LayerVerifiedToItsEnd: whatever a registry serves under a layer's
// digest is checked against it, also when the scan found the build information
// before the end; a blob that is its digest but no tar fails as a read, not as a
// mismatch.
func TestInspect_LayerVerifiedToItsEnd(t *testing.T) {
	fn, _ := goBinaries(t)
	reg := newTestRegistry(t)
	fnLayer := functionLayer(t, fn)
	d := reg.push(t, "fn/verify:v1", image(t, "amd64", nil, baseLayer(t), fnLayer))
	notTar := layer1FromBytes(t, []byte(strings.Repeat("not a tar archive\n", 64)))
	dNotTar := reg.push(t, "fn/verify:not-tar", image(t, "amd64", nil, notTar))

	rc, err := fnLayer.Compressed()
	if err != nil {
		t.Fatal(err)
	}
	real, err := io.ReadAll(rc)
	_ = rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	flipped := append([]byte(nil), real...)
	flipped[len(flipped)-10] ^= 0xff // in the gzip trailer: after the build information
	tests := []struct {
		name   string
		ref    string
		served []byte // served for the function layer, nil: the registry's own
		want   InspectReason
		got    bool // the mismatch names the digest of what was served
	}{
		{name: "the blob itself", ref: "fn/verify@" + d.String()},
		{name: "one byte changed near the end", ref: "fn/verify@" + d.String(), served: flipped, want: ReasonDigestMismatch, got: true},
		{name: "cut short after the binary", ref: "fn/verify@" + d.String(), served: real[:len(real)-8], want: ReasonDigestMismatch},
		// Only the size the manifest declares is read, and it is the blob.
		{name: "the blob, and more after it", ref: "fn/verify@" + d.String(), served: append(append([]byte(nil), real...), "more"...)},
		{name: "its digest, but no tar", ref: "fn/verify@" + dNotTar.String(), want: ReasonLayerRead},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reg.setOverride(nil)
			if tc.served != nil {
				reg.setOverride(func(w http.ResponseWriter, r *http.Request) bool {
					if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/blobs/"+layerDigest(t, fnLayer).String()) {
						return false
					}
					w.Header().Set("Content-Length", fmt.Sprint(len(tc.served)))
					_, _ = w.Write(tc.served)
					return true
				})
			}
			defer reg.setOverride(nil)
			m, err := NewInspector(10).Inspect(testCtx(t), reg.host+"/"+tc.ref, nil)
			if tc.want == "" {
				if err != nil || m.Version != testFuncGoVersion {
					t.Fatalf("Inspect = %+v, %v; want %s", m, err, testFuncGoVersion)
				}
				return
			}
			var ie *InspectError
			if !errors.As(err, &ie) || ie.Reason != tc.want {
				t.Fatalf("Inspect = %+v, %v; want *InspectError %s", m, err, tc.want)
			}
			var dm *DigestMismatchError
			if tc.want == ReasonDigestMismatch && (!errors.As(err, &dm) || (dm.Got != "") != tc.got) {
				t.Errorf("mismatch %+v: want Got set %v", dm, tc.got)
			}
			t.Logf("%v", err)
		})
	}
}

// layer1FromBytes is a layer whose uncompressed stream is b.
func layer1FromBytes(t *testing.T, b []byte) v1.Layer {
	t.Helper()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

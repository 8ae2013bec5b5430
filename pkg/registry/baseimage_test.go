package registry

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/fnops/func-operator/test/registrytest"
)

func mustBase(t *testing.T, i *Inspector, ref string, kc authn.Keychain) BaseImage {
	t.Helper()
	b, err := i.Base(testCtx(t), ref, kc)
	if err != nil {
		t.Fatalf("Base(%s): %v", ref, err)
	}
	return b
}

func wantBase(t *testing.T, ref string, img v1.Image) BaseImage {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	return BaseImage{Ref: ref, Digest: d.String(), TopLayer: topDiffID(t, img), DiffIDs: diffIDs(t, img), Platform: platformOf(cf)}
}

// TestBase_TTL: what a tag points to is kept for BaseTTL, then resolved again.
func TestBase_TTL(t *testing.T) {
	tests := []struct {
		name string
		ttl  func() time.Duration
		want time.Duration
	}{
		{name: "BaseTTL", ttl: func() time.Duration { return time.Minute }, want: time.Minute},
		{name: "default", want: DefaultBaseTTL},
		{name: "zero: default", ttl: func() time.Duration { return 0 }, want: DefaultBaseTTL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newTestRegistry(t)
			r1, r2 := runImage(t, "amd64", "r1"), runImage(t, "amd64", "r2")
			tr.push(t, "paketo/run:latest", r1)
			ref := tr.ref("paketo/run:latest")

			clk := clocktesting.NewFakePassiveClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
			i := NewInspector(10)
			i.clock, i.BaseTTL = clk, tt.ttl

			if diff := cmp.Diff(wantBase(t, ref, r1), mustBase(t, i, ref, nil)); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
			tr.push(t, "paketo/run:latest", r2) // the run image is updated

			clk.SetTime(clk.Now().Add(tt.want - time.Second))
			mark := tr.mark()
			if diff := cmp.Diff(wantBase(t, ref, r1), mustBase(t, i, ref, nil)); diff != "" {
				t.Errorf("within the TTL (-want +got):\n%s", diff)
			}
			if reqs := tr.since(mark); len(reqs) != 0 {
				t.Errorf("within the TTL: requests %v, want none", reqs)
			}

			clk.SetTime(clk.Now().Add(time.Second))
			mark = tr.mark()
			now := mustBase(t, i, ref, nil)
			if diff := cmp.Diff(wantBase(t, ref, r2), now); diff != "" {
				t.Errorf("after the TTL (-want +got):\n%s", diff)
			}
			t.Logf("after the TTL: %v", tr.since(mark))
			if reqs := tr.since(mark); len(reqs) == 0 || !strings.HasPrefix(reqs[0], "HEAD /v2/paketo/run/manifests/latest") {
				t.Errorf("after the TTL: requests %v, want a HEAD of the tag first", reqs)
			}
			// The app built on r1 sees it moved.
			app := Base{Kind: BaseRunImage, TopLayer: topDiffID(t, r1), DiffIDs: diffIDs(t, r1)}
			if moved, ok := app.Moved(now); !moved || !ok {
				t.Errorf("Moved = %v, %v; want true, true", moved, ok)
			}
			if moved, ok := app.Moved(wantBase(t, ref, r1)); moved || !ok {
				t.Errorf("Moved to r1 = %v, %v; want false, true", moved, ok)
			}
		})
	}
}

// TestBase_Fleet: many Functions on one run image cost one HEAD per TTL, however
// many call at once; the config of a digest already read is not read again.
func TestBase_Fleet(t *testing.T) {
	tr := newTestRegistry(t)
	r1 := runImage(t, "amd64", "r1")
	tr.push(t, "paketo/run:latest", r1)
	tr.push(t, "paketo/run:other-tag", r1)
	ref := tr.ref("paketo/run:latest")
	i := NewInspector(10)

	mark := tr.mark()
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for k := range errs {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			_, errs[k] = i.Base(testCtx(t), ref, nil)
		}(k)
	}
	wg.Wait()
	for k, err := range errs {
		if err != nil {
			t.Errorf("call %d: %v", k, err)
		}
	}
	heads := 0
	for _, r := range tr.since(mark) {
		if r == "HEAD /v2/paketo/run/manifests/latest" {
			heads++
		}
	}
	if heads != 1 {
		t.Errorf("%d HEADs of the tag for 16 calls, want 1: %v", heads, tr.since(mark))
	}

	// Another tag of the same image: one HEAD, its config is known.
	mark = tr.mark()
	if diff := cmp.Diff(wantBase(t, tr.ref("paketo/run:other-tag"), r1), mustBase(t, i, tr.ref("paketo/run:other-tag"), nil)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if reqs := tr.since(mark); len(reqs) != 1 || reqs[0] != "HEAD /v2/paketo/run/manifests/other-tag" {
		t.Errorf("another tag: requests %v, want [HEAD /v2/paketo/run/manifests/other-tag]", reqs)
	}
	if reads := i.baseReads.Load(); reads != 1 {
		t.Errorf("%d base configs read, want 1", reads)
	}
}

// TestBase_PerCredentials: what a tag points to, and a config, are served only to
// the credentials that resolved it or were shown to reach it.
func TestBase_PerCredentials(t *testing.T) {
	t.Run("anonymous then credentials", func(t *testing.T) {
		tr := newTestRegistry(t)
		r1 := runImage(t, "amd64", "r1")
		d := tr.push(t, "paketo/run:latest", r1)
		ref := tr.ref("paketo/run:latest")
		kc, err := Keychain(dockerConfig(tr.host, testUser, testPassword))
		if err != nil {
			t.Fatal(err)
		}
		i := NewInspector(10)
		mustBase(t, i, ref, nil)

		// By digest, with other credentials: shown by a HEAD of the digest.
		byDigest := tr.host + "/paketo/run@" + d.String()
		mark := tr.mark()
		blobs := tr.blobGets.Load()
		if diff := cmp.Diff(wantBase(t, byDigest, r1), mustBase(t, i, byDigest, kc)); diff != "" {
			t.Errorf("by digest (-want +got):\n%s", diff)
		}
		t.Logf("by digest: %v", tr.since(mark))
		for _, r := range tr.since(mark) {
			if strings.HasPrefix(r, "GET /v2/paketo/") {
				t.Errorf("by digest, other credentials: %s; want a HEAD of the digest only", r)
			}
		}
		if reqs := tr.since(mark); !containsString(reqs, "HEAD /v2/paketo/run/manifests/"+d.String()) {
			t.Errorf("by digest, other credentials: requests %v, want a HEAD of the digest", reqs)
		}
		mark = tr.mark()
		mustBase(t, i, byDigest, kc)
		if reqs := tr.since(mark); len(reqs) != 0 {
			t.Errorf("by digest again: requests %v, want none", reqs)
		}

		// The tag, with those credentials: their own HEAD; the config is known.
		mark = tr.mark()
		if diff := cmp.Diff(wantBase(t, ref, r1), mustBase(t, i, ref, kc)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		if reqs := tr.since(mark); len(reqs) != 1 || reqs[0] != "HEAD /v2/paketo/run/manifests/latest" {
			t.Errorf("other credentials: requests %v, want their own HEAD of the tag", reqs)
		}
		if n := tr.blobGets.Load() - blobs; n != 0 {
			t.Errorf("other credentials read %d blobs: the config is known", n)
		}
	})

	t.Run("private registry", func(t *testing.T) {
		const user, password = "fleet", "s3cr3t-Fleet-Passw0rd"
		reg := registrytest.StartPrivate(t, user, password)
		r1 := runImage(t, "amd64", "r1")
		ref := reg.Host + "/paketo/run:latest"
		pushAs(t, ref, r1, &authn.Basic{Username: user, Password: password})

		right, err := Keychain(reg.DockerConfigJSON())
		if err != nil {
			t.Fatal(err)
		}
		wrong, err := Keychain(dockerConfig(reg.Host, user, "wr0ng-Passw0rd"))
		if err != nil {
			t.Fatal(err)
		}
		i := NewInspector(10)
		if diff := cmp.Diff(wantBase(t, ref, r1), mustBase(t, i, ref, right)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		before := reg.Requests()
		mustBase(t, i, ref, right)
		if n := reg.Requests() - before; n != 0 {
			t.Errorf("the same credentials again: %d requests, want none", n)
		}

		d, err := r1.Digest()
		if err != nil {
			t.Fatal(err)
		}
		byDigest := reg.Host + "/paketo/run@" + d.String()
		for name, kc := range map[string]authn.Keychain{"wrong password": wrong, "anonymous": nil} {
			for _, ref := range []string{ref, byDigest} {
				before = reg.Requests()
				_, err := i.Base(testCtx(t), ref, kc)
				var ae *AuthError
				if !errors.As(err, &ae) {
					t.Errorf("%s, %s: got %v, want an *AuthError", name, ref, err)
				}
				if reg.Requests() == before {
					t.Errorf("%s, %s: answered without asking the registry", name, ref)
				}
				if err != nil && strings.Contains(err.Error(), "wr0ng-Passw0rd") {
					t.Errorf("%s: the error quotes the password: %v", name, err)
				}
			}
		}
		// The positive control: the right credentials, by digest, from the cache.
		before = reg.Requests()
		if got := mustBase(t, i, byDigest, right); got.Digest != d.String() {
			t.Errorf("by digest: %+v", got)
		}
		if n := reg.Requests() - before; n != 0 {
			t.Errorf("the right credentials, by digest: %d requests, want none (cached)", n)
		}
	})
}

// pushAs writes img to ref with auth.
func pushAs(t *testing.T, ref string, img v1.Image, auth authn.Authenticator) {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img, remote.WithAuth(auth)); err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
}

func TestBase_Index(t *testing.T) {
	tr := newTestRegistry(t)
	arm, amd := runImage(t, "arm64", "r1-arm"), runImage(t, "amd64", "r1")
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: arm, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}},
		mutate.IndexAddendum{Add: amd, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
	)
	idxDigest := tr.pushIndex(t, "paketo/run:multi", idx)
	ref := tr.ref("paketo/run:multi")

	want := wantBase(t, ref, amd)
	want.Index = idxDigest.String()
	if diff := cmp.Diff(want, mustBase(t, NewInspector(10), ref, nil)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if topDiffID(t, arm) == want.TopLayer {
		t.Fatal("the test's images share their top layer: it tells nothing")
	}
}

func TestBase_Errors(t *testing.T) {
	tr := newTestRegistry(t)
	tr.push(t, "paketo/run:latest", runImage(t, "amd64", "r1"))
	tr.push(t, "paketo/empty:latest", image(t, "amd64", nil))
	tests := []struct {
		name     string
		ref      string
		check    func(error) bool
		contains string
	}{
		{"unknown tag", tr.ref("paketo/run:nope"), isReason(ReasonNotFound), "not found"},
		{"unknown repository", tr.ref("paketo/nope:latest"), isReason(ReasonNotFound), "not found"},
		{"unknown digest", tr.host + "/paketo/run@sha256:" + strings.Repeat("0", 64), isReason(ReasonNotFound), "not found"},
		{"no layers", tr.ref("paketo/empty:latest"), isReason(ReasonBadManifest), "has no layers"},
		{"garbage reference", "NOT a reference!!", isReason(ReasonInvalidReference), "not a valid image reference"},
		{"connection refused", "127.0.0.1:1/paketo/run:latest", isUnreachable, "127.0.0.1:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			b, err := NewInspector(10).Base(ctx, tt.ref, nil)
			if err == nil {
				t.Fatalf("no error, got %+v", b)
			}
			if !tt.check(err) || !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("got %T %v, want one mentioning %q", err, err, tt.contains)
			}
		})
	}
	// The positive control: the same registry answers for the tag that exists.
	if b := mustBase(t, NewInspector(10), tr.ref("paketo/run:latest"), nil); b.TopLayer == "" {
		t.Errorf("got %+v", b)
	}

	// Errors are not kept: the tag pushed later resolves.
	i := NewInspector(10)
	if _, err := i.Base(testCtx(t), tr.ref("paketo/later:latest"), nil); err == nil {
		t.Fatal("no error before the push")
	}
	tr.push(t, "paketo/later:latest", runImage(t, "amd64", "r1"))
	mustBase(t, i, tr.ref("paketo/later:latest"), nil)
}

func TestBase_TooManyLayers(t *testing.T) {
	tr := newTestRegistry(t)
	l := layer(t, tarFile{name: "x", body: []byte("x")})
	layers := make([]v1.Layer, maxDiffIDs+1)
	for k := range layers {
		layers[k] = l
	}
	tr.push(t, "paketo/tall:latest", image(t, "amd64", nil, layers...))
	tr.push(t, "paketo/fits:latest", image(t, "amd64", nil, layers[:maxDiffIDs]...))
	i := NewInspector(10)
	if _, err := i.Base(testCtx(t), tr.ref("paketo/tall:latest"), nil); !isReason(ReasonTooLarge)(err) {
		t.Errorf("got %v, want TooLarge", err)
	}
	if b := mustBase(t, i, tr.ref("paketo/fits:latest"), nil); len(b.DiffIDs) != maxDiffIDs {
		t.Errorf("%d diffIDs, want %d", len(b.DiffIDs), maxDiffIDs)
	}
}

func TestFlights(t *testing.T) {
	var f flights[int]
	// waitFor returns once n callers wait for the call of key.
	waitFor := func(key string, n int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); f.waiting(key) < n; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d callers wait for %s, want %d", f.waiting(key), key, n)
			}
		}
	}
	release := make(chan struct{})
	type outcome struct {
		v      int
		err    error
		shared bool
	}
	leader, waiter := make(chan outcome, 1), make(chan outcome, 1)
	go func() {
		v, err, shared := f.do(context.Background(), "k", func() (int, error) { <-release; return 42, nil })
		leader <- outcome{v, err, shared}
	}()
	for !f.running("k") {
		time.Sleep(time.Millisecond)
	}
	go func() {
		v, err, shared := f.do(context.Background(), "k", func() (int, error) { return -1, nil })
		waiter <- outcome{v, err, shared}
	}()
	waitFor("k", 1)

	// A caller that gives up gets its own context's error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err, shared := f.do(ctx, "k", func() (int, error) { t.Error("ran while another call for k runs"); return 0, nil }); !shared || !errors.Is(err, context.Canceled) {
		t.Errorf("caller that gave up: %v, shared %v", err, shared)
	}
	// Another key runs at once.
	if v, err, shared := f.do(context.Background(), "other", func() (int, error) { return 7, nil }); v != 7 || err != nil || shared {
		t.Errorf("other key: %v %v %v", v, err, shared)
	}

	close(release)
	if diff := cmp.Diff(outcome{v: 42}, <-leader, cmp.AllowUnexported(outcome{})); diff != "" {
		t.Errorf("leader (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(outcome{v: 42, shared: true}, <-waiter, cmp.AllowUnexported(outcome{})); diff != "" {
		t.Errorf("waiter (-want +got):\n%s", diff)
	}

	// A panicking call leaves its waiters an error, not a zero value.
	release = make(chan struct{})
	go func() {
		defer func() { _ = recover() }()
		_, _, _ = f.do(context.Background(), "p", func() (int, error) { <-release; panic("boom") })
	}()
	for !f.running("p") {
		time.Sleep(time.Millisecond)
	}
	go func() {
		v, err, shared := f.do(context.Background(), "p", func() (int, error) { return 1, nil })
		waiter <- outcome{v, err, shared}
	}()
	waitFor("p", 1)
	close(release)
	if got := <-waiter; got.err == nil || !got.shared {
		t.Errorf("the waiter of a panicking call: %+v, want a shared error", got)
	}
}

package rebase

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/buildpacks/lifecycle/platform"
	"github.com/buildpacks/lifecycle/platform/files"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/fnops/func-operator/test/registrytest"
)

// newSceneRegistry starts a registry that keeps blobs per repository.
func newSceneRegistry(t *testing.T) *registrytest.Registry {
	t.Helper()
	reg := registrytest.Start(t)
	reg.ScopeBlobs()
	return reg
}

// checkError fails unless err is an *Error of reason want.
func checkError(t *testing.T, err error, want Reason) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Rebase: %v (%T), want an *Error of reason %s", err, err, want)
	}
	if e.Reason != want {
		t.Fatalf("Rebase: reason %s (%v), want %s", e.Reason, e, want)
	}
	return e
}

// pushIndex pushes an index of imgs (their platforms from their configs) to ref
// and returns it by digest.
func pushIndex(t *testing.T, ref string, imgs ...v1.Image) string {
	t.Helper()
	adds := make([]mutate.IndexAddendum, 0, len(imgs))
	for _, img := range imgs {
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			Platform: &v1.Platform{OS: cf.OS, Architecture: cf.Architecture},
		}})
	}
	idx := mutate.AppendManifests(empty.Index, adds...)
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(r, idx); err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return r.Context().Name() + "@" + d.String()
}

// TestRebaseRefuses: each failure has its reason, and nothing is pushed to the
// target; each case's control, the same scene bar the fault, rebases.
func TestRebaseRefuses(t *testing.T) {
	strp := func(s string) *string { return &s }
	missing := "sha256:" + strings.Repeat("0", 64)
	for _, tc := range []struct {
		name string
		// spec builds the scene; broken is the fault, applied to spec or to the
		// request. The control runs with spec alone.
		spec   sceneSpec
		broken func(*sceneSpec)
		req    func(*scene, *Request)
		want   Reason
		// status and code, when set, are the registry's answer the Error carries.
		status int
		code   string
	}{
		{
			name: "run image not there", want: RunImageNotFound, status: http.StatusNotFound, code: "MANIFEST_UNKNOWN",
			req: func(s *scene, r *Request) { r.RunImage = s.reg.Host + "/run@" + missing },
		},
		{
			name: "run image repository not there", want: RunImageNotFound, status: http.StatusNotFound,
			req: func(s *scene, r *Request) { r.RunImage = s.reg.Host + "/nothing-here@" + missing },
		},
		{
			name: "app image not there", want: AppImageNotFound, status: http.StatusNotFound, code: "MANIFEST_UNKNOWN",
			req: func(s *scene, r *Request) { r.App = s.reg.Host + "/app@" + missing },
		},
		{
			name: "metadata label missing", want: MetadataInvalid,
			broken: func(s *sceneSpec) { s.app.rawLabel = strp("") },
		},
		{
			name: "metadata label unparsable", want: MetadataInvalid,
			broken: func(s *sceneSpec) { s.app.rawLabel = strp(`{"runImage":`) },
		},
		{
			name: "metadata label lies: top layer not in the image", want: MetadataInvalid,
			broken: func(s *sceneSpec) {
				s.app.metadata = func(md *files.LayersMetadataCompat) { md.RunImage.TopLayer = "sha256:" + strings.Repeat("1", 64) }
			},
		},
		{
			name: "metadata label without top layer", want: MetadataInvalid,
			broken: func(s *sceneSpec) {
				s.app.metadata = func(md *files.LayersMetadataCompat) { md.RunImage.TopLayer = "" }
			},
		},
		{
			name: "platform API no version (lifecycle would panic)", want: MetadataInvalid,
			broken: func(s *sceneSpec) { s.app.platformAPI = "zero.twelve" },
		},
		{
			name: "app not rebasable", want: NotRebasable,
			broken: func(s *sceneSpec) { s.app.labels = map[string]string{platform.RebasableLabel: "false"} },
		},
		{
			name: "new run image of another architecture", want: NotRebasable,
			broken: func(s *sceneSpec) { s.newRun = runSpec{layers: []int64{512, 256}, arch: "arm64"} },
		},
		{
			name: "new run image of another distro version", want: NotRebasable,
			broken: func(s *sceneSpec) {
				s.newRun = runSpec{layers: []int64{512, 256}, labels: map[string]string{platform.OSDistroVersionLabel: "24.04"}}
			},
		},
		{
			name: "platform API 0.9: another stack", want: NotRebasable,
			spec: sceneSpec{app: appSpec{platformAPI: "0.9"}},
			broken: func(s *sceneSpec) {
				s.newRun = runSpec{layers: []int64{512, 256}, labels: map[string]string{platform.StackIDLabel: "io.buildpacks.stacks.noble"}}
			},
		},
		{
			name: "platform API 0.9: a mixin missing", want: NotRebasable,
			spec: sceneSpec{app: appSpec{platformAPI: "0.9"}},
			broken: func(s *sceneSpec) {
				s.newRun = runSpec{layers: []int64{512, 256}, labels: map[string]string{platform.MixinsLabel: `["ca-certificates"]`}}
			},
		},
		{
			name: "app by tag", want: InvalidRequest,
			req: func(s *scene, r *Request) { r.App = s.reg.Host + "/app:latest" },
		},
		{
			name: "target with a tag", want: InvalidRequest,
			req: func(s *scene, r *Request) { r.Target = s.reg.Host + "/app:rebased" },
		},
		{
			name: "registry in an outage", want: Unreachable, status: http.StatusServiceUnavailable,
			req: func(s *scene, _ *Request) { s.reg.FailWith(http.StatusServiceUnavailable) },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, control := range []bool{true, false} {
				spec := tc.spec
				if !control && tc.broken != nil {
					tc.broken(&spec)
				}
				s := newScene(t, spec)
				m0, b0, tags0 := pushed(t, s.reg, "app", nil)
				req := s.request()
				if !control && tc.req != nil {
					tc.req(s, &req)
				}

				res, err := rebaser().Rebase(context.Background(), req)
				s.reg.FailWith(0)
				if control {
					if err != nil {
						t.Fatalf("control: Rebase: %v", err)
					}
					checkRebased(t, s, pull(t, res.Image))
					continue
				}
				e := checkError(t, err, tc.want)
				if tc.status != 0 && e.StatusCode != tc.status {
					t.Errorf("status %d, want %d", e.StatusCode, tc.status)
				}
				if tc.code != "" && !slices.Contains(e.Codes, tc.code) {
					t.Errorf("codes %q, want %s", e.Codes, tc.code)
				}
				if tc.code != "" && !strings.Contains(e.Error(), tc.code) {
					t.Errorf("the message does not quote the registry's code %s: %v", tc.code, e)
				}
				m1, b1, tags1 := pushed(t, s.reg, "app", nil)
				if m1 != m0 || b1 != b0 || !cmp.Equal(tags0, tags1) {
					t.Errorf("pushed to the target: %d manifests, %d blobs (before: %d, %d); tags %q (before %q)", m1, b1, m0, b0, tags1, tags0)
				}
				t.Logf("%s: %v", e.Reason, e)
			}
		})
	}
}

// TestRebaseCredentials: a private registry. Credentials that may read but not
// push are refused the push (PushRefused), nothing is written, and the message
// holds neither the credentials nor the registry's error text; without
// credentials the run image is not found, and never rebased onto an empty
// image. The control pushes with credentials that may write.
func TestRebaseCredentials(t *testing.T) {
	const user, password = "writer", "w-secret-4711"
	const reader, readerPassword = "reader", "r-secret-0815"
	reg := registrytest.StartPrivate(t, user, password)
	reg.ScopeBlobs()
	reg.AddReader(reader, readerPassword)
	writer := &authn.Basic{Username: user, Password: password}
	s := newSceneIn(t, reg, sceneSpec{}, writer)

	for _, tc := range []struct {
		name string
		kc   authn.Keychain
		app  string // Request.App; "" the scene's
		want Reason // "": success
	}{
		{name: "writer", kc: keychain{reg.Host: writer}},
		{name: "reader", kc: keychain{reg.Host: &authn.Basic{Username: reader, Password: readerPassword}}, want: PushRefused},
		{name: "anonymous", kc: nil, want: AppImageNotFound},
		{name: "anonymous, app elsewhere", kc: nil, want: RunImageNotFound, app: "public"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := s.request()
			req.Keychain = tc.kc
			target, targetRepo, auth := reg, "rebased-"+tc.name[:4], authn.Authenticator(writer)
			if tc.app == "public" {
				// The app in a public registry, the run image in the private one.
				target, targetRepo, auth = newSceneRegistry(t), "app", nil
				req.App = push(t, target.Host+"/app:latest", s.app.img).ref
			}
			req.Target = target.Host + "/" + targetRepo
			m0, b0, tags0 := pushed(t, target, targetRepo, auth)
			res, err := rebaser().Rebase(context.Background(), req)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Rebase: %v", err)
				}
				checkRebased(t, s, pull(t, res.Image, remote.WithAuth(writer)))
				return
			}
			e := checkError(t, err, tc.want)
			t.Logf("%s: %v", e.Reason, e)
			for _, secret := range []string{password, readerPassword, registrytest.DeniedMessage} {
				if strings.Contains(e.Error(), secret) {
					t.Errorf("the message quotes %q: %v", secret, e)
				}
			}
			if tc.want == PushRefused && (e.StatusCode != http.StatusForbidden || !slices.Contains(e.Codes, "DENIED")) {
				t.Errorf("status %d, codes %q; want 403 and DENIED", e.StatusCode, e.Codes)
			}
			if tc.want == RunImageNotFound && e.StatusCode != http.StatusUnauthorized {
				t.Errorf("status %d, want 401", e.StatusCode)
			}
			if m, b, tags := pushed(t, target, targetRepo, auth); m != m0 || b != b0 || !cmp.Equal(tags, tags0) {
				t.Errorf("pushed to %s: %d manifests, %d blobs, tags %q (before: %d, %d, %q)", req.Target, m, b, tags, m0, b0, tags0)
			}
		})
	}
}

// TestRebaseNoRunImageLayers refuses a run image without layers (what imgutil's
// remote image gives for a missing one); the control is any run image.
func TestRebaseNoRunImageLayers(t *testing.T) {
	s := newScene(t, sceneSpec{})
	cfg, _ := empty.Image.ConfigFile()
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", "amd64"
	emptyRun, err := mutate.ConfigFile(empty.Image, cfg)
	if err != nil {
		t.Fatal(err)
	}
	req := s.request()
	req.RunImage = push(t, s.reg.Host+"/run:empty", emptyRun).ref
	_ = checkError(t, func() error { _, err := rebaser().Rebase(context.Background(), req); return err }(), NotRebasable)

	if _, err := rebaser().Rebase(context.Background(), s.request()); err != nil {
		t.Fatalf("control: Rebase: %v", err)
	}
}

// TestClassify: the reason of a registry's answer depends on what was being done
// and to which registry; messages quote codes, never bodies nor credentials.
func TestClassify(t *testing.T) {
	const target = "registry.test:5000"
	req := func(method, rawURL string) *http.Request {
		r, err := http.NewRequest(method, rawURL, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	answer := func(status int, r *http.Request, code string) error {
		return &transport.Error{StatusCode: status, Request: r,
			Errors: []transport.Diagnostic{{Code: transport.ErrorCode(code), Message: "body text s3cret-pass"}}}
	}
	for _, tc := range []struct {
		name string
		err  error
		o    op
		want Reason
	}{
		{name: "read 404", err: answer(404, req("GET", "http://"+target+"/v2/run/manifests/x"), "MANIFEST_UNKNOWN"), o: opRead, want: RunImageNotFound},
		{name: "read 401", err: answer(401, req("GET", "http://"+target+"/v2/run/manifests/x"), "UNAUTHORIZED"), o: opRead, want: RunImageNotFound},
		{name: "read 400", err: answer(400, req("GET", "http://"+target+"/v2/run/manifests/x"), "MANIFEST_INVALID"), o: opRead, want: Failed},
		{name: "read 503", err: answer(503, req("GET", "http://"+target+"/v2/run/manifests/x"), "UNAVAILABLE"), o: opRead, want: Unreachable},
		{name: "push 403", err: answer(403, req("POST", "http://"+target+"/v2/app/blobs/uploads/"), "DENIED"), o: opWrite, want: PushRefused},
		{name: "push 405", err: answer(405, req("PUT", "http://"+target+"/v2/app/manifests/sha256:x"), "UNSUPPORTED"), o: opWrite, want: PushRefused},
		{name: "push, target blob HEAD 401", err: answer(401, req("HEAD", "http://"+target+"/v2/app/blobs/sha256:x"), "UNAUTHORIZED"), o: opWrite, want: PushRefused},
		{name: "push, source layer 404", err: answer(404, req("GET", "http://other.test/v2/run/blobs/sha256:x"), "BLOB_UNKNOWN"), o: opWrite, want: Failed},
		{name: "push, source layer 502", err: answer(502, req("GET", "http://other.test/v2/run/blobs/sha256:x"), "UNAVAILABLE"), o: opWrite, want: Unreachable},
		{name: "push 429", err: answer(429, req("PUT", "http://"+target+"/v2/app/manifests/sha256:x"), "TOOMANYREQUESTS"), o: opWrite, want: Unreachable},
		{name: "deadline", err: fmt.Errorf("wrapped: %w", context.DeadlineExceeded), o: opWrite, want: Unreachable},
		{name: "other error quoting a credential", err: errors.New("strange failure with s3cret-pass inside"), o: opRead, want: Failed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ec := &errContext{target: target}
			ec.addCredentials(&authn.AuthConfig{Username: "u", Password: "s3cret-pass"})
			e := ec.classify(tc.err, tc.o, "image", RunImageNotFound, "doing it")
			if e.Reason != tc.want {
				t.Errorf("reason %s (%v), want %s", e.Reason, e, tc.want)
			}
			if strings.Contains(e.Error(), "s3cret-pass") || strings.Contains(e.Error(), "body text") {
				t.Errorf("the message quotes a body or a credential: %v", e)
			}
			var te *transport.Error
			if errors.As(tc.err, &te) && !strings.Contains(e.Error(), string(te.Errors[0].Code)) {
				t.Errorf("the message does not quote the code %s: %v", te.Errors[0].Code, e)
			}
			if !errors.Is(e, tc.err) {
				t.Errorf("the Error does not wrap the cause")
			}
		})
	}
}

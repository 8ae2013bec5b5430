package imagedeploy

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/tenancy"
)

// TestEdit writes the new image where func's deployers keep it, with BUILT, and
// nothing else; an object that runs the image already is left as it is.
func TestEdit(t *testing.T) {
	built := deployTime.UTC().Format(builtLayout)
	sidecar := func() map[string]any { return map[string]any{"name": "sidecar", "image": "127.0.0.1:5000/side:1"} }
	fn := func(name, img, builtValue string) map[string]any {
		c := map[string]any{"image": img, "env": []any{
			map[string]any{"name": "BUILT", "value": builtValue}, map[string]any{"name": "ADDRESS", "value": "0.0.0.0"}}}
		if name != "" {
			c["name"] = name
		}
		return c
	}
	object := func(templateName string, containers ...any) *unstructured.Unstructured {
		meta := map[string]any{"labels": map[string]any{"function.knative.dev/name": "hello"}}
		if templateName != "" {
			meta["name"] = templateName
		}
		return &unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{"name": "hello", "annotations": map[string]any{"a": "b"}},
			"spec":     map[string]any{"replicas": int64(0), "template": map[string]any{"metadata": meta, "spec": map[string]any{"containers": containers}}},
		}}
	}
	for _, tt := range []struct {
		name     string
		deployer string
		in       *unstructured.Unstructured
		want     *unstructured.Unstructured // nil: unchanged
		wantErr  string
	}{{
		name:     "knative: the first container, BUILT, the template's name removed",
		deployer: funclib.DeployerKnative,
		in:       object("hello-first", fn("", oldImage, oldBuilt), sidecar()),
		want:     object("", fn("", newImage, built), sidecar()),
	}, {
		name:     "raw: user-container, wherever it is; replicas kept",
		deployer: funclib.DeployerRaw,
		in:       object("", sidecar(), fn("user-container", oldImage, oldBuilt)),
		want:     object("", sidecar(), fn("user-container", newImage, built)),
	}, {
		name:     "keda: a template name is the pod template's, kept",
		deployer: funclib.DeployerKeda,
		in:       object("kept", fn("user-container", oldImage, oldBuilt)),
		want:     object("kept", fn("user-container", newImage, built)),
	}, {
		name:     "no BUILT: none added",
		deployer: funclib.DeployerRaw,
		in:       object("", map[string]any{"name": "user-container", "image": oldImage}),
		want:     object("", map[string]any{"name": "user-container", "image": newImage}),
	}, {
		name:     "the image already: unchanged",
		deployer: funclib.DeployerKnative,
		in:       object("hello-first", fn("", newImage, oldBuilt)),
	}, {
		name:     "raw without user-container",
		deployer: funclib.DeployerRaw,
		in:       object("", sidecar()),
		wantErr:  "no container user-container",
	}, {
		name:     "no containers",
		deployer: funclib.DeployerKnative,
		in:       object(""),
		wantErr:  "no containers",
	}} {
		t.Run(tt.name, func(t *testing.T) {
			obj := tt.in.DeepCopy()
			changed, err := edit(tt.deployer, obj, newImage, "", deployTime)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("edit: %v, want an error saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := tt.want
			if want == nil {
				want = tt.in
			}
			if changed != (tt.want != nil) {
				t.Errorf("changed %t, want %t", changed, tt.want != nil)
			}
			if diff := cmp.Diff(want.Object, obj.Object); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestCheck refuses what Deploy cannot write before any request; a digest of a known
// deployer (the positive control) passes.
func TestCheck(t *testing.T) {
	ok := Target{Deployer: funclib.DeployerRaw, Namespace: "ns", Name: "hello"}
	for _, tt := range []struct {
		name    string
		target  Target
		sa, img string
		wantErr string
	}{
		{"a digest", ok, builder, newImage, ""},
		{"a tag", ok, builder, "127.0.0.1:5000/fns/hello:latest", "not a digest reference"},
		{"a tag and a digest", ok, builder, "127.0.0.1:5000/fns/hello:latest@sha256:" + strings.Repeat("b", 64), ""},
		{"no image", ok, builder, "", "not a digest reference"},
		{"an unknown deployer", Target{Deployer: "helm", Namespace: "ns", Name: "hello"}, builder, newImage, `deployer "helm"`},
		{"no deployer", Target{Namespace: "ns", Name: "hello"}, builder, newImage, `deployer ""`},
		{"no namespace", Target{Deployer: funclib.DeployerKnative, Name: "hello"}, builder, newImage, "none may be empty"},
		{"no ServiceAccount", ok, "", newImage, "none may be empty"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := check(tt.target, tt.sa, tt.img)
			if tt.wantErr == "" {
				if err != nil {
					t.Errorf("check: %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("check: %v, want an error saying %q", err, tt.wantErr)
			}
		})
	}
}

// TestRefused tells the API server's refusals apart as it words them: the
// impersonation filter's names the ServiceAccount, RBAC's the user, verb and resource
// asked for. Any other error, an admission policy's 403 included, stays as it was.
func TestRefused(t *testing.T) {
	svc := schema.GroupVersionResource{Group: "serving.knative.dev", Version: "v1", Resource: "services"}
	sa := schema.GroupResource{Resource: "serviceaccounts"}
	for _, tt := range []struct {
		name string
		err  error
		want *ForbiddenError // nil: err unchanged
	}{{
		name: "the impersonation",
		err:  apierrors.NewForbidden(sa, builder, errors.New(`User "system:serviceaccount:func-operator:func-operator" cannot impersonate resource "serviceaccounts"`)),
		want: &ForbiddenError{Namespace: "ns", ServiceAccount: builder, Impersonation: true, Grant: tenancy.ImpersonateGrant(builder)},
	}, {
		name: "the build ServiceAccount's update",
		err:  apierrors.NewForbidden(svc.GroupResource(), "hello", errors.New(`User "system:serviceaccount:ns:func-operator-builder" cannot update resource "services"`)),
		want: &ForbiddenError{Namespace: "ns", ServiceAccount: builder, Grant: tenancy.Grant{Group: "serving.knative.dev", Resource: "services", Verb: "update"}},
	}, {
		name: "an admission policy's refusal of the update",
		err:  apierrors.NewForbidden(svc.GroupResource(), "hello", errors.New("ValidatingAdmissionPolicy 'p' with binding 'b' denied request: no")),
	}, {
		name: "RBAC's refusal of another verb",
		err:  apierrors.NewForbidden(svc.GroupResource(), "hello", errors.New(`User "system:serviceaccount:ns:func-operator-builder" cannot get resource "services"`)),
	}, {
		name: "another ServiceAccount's impersonation is not this one's",
		err:  apierrors.NewForbidden(sa, "default", errors.New(`User "x" cannot impersonate resource "serviceaccounts"`)),
	}, {
		name: "a refusal of another resource",
		err:  apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "x", errors.New("no")),
	}, {
		name: "not found",
		err:  apierrors.NewNotFound(svc.GroupResource(), "hello"),
	}, {
		name: "not the API server's",
		err:  errors.New("connection refused"),
	}} {
		t.Run(tt.name, func(t *testing.T) {
			got := refused(tt.err, "ns", builder, svc, "update")
			if tt.want == nil {
				if got != tt.err {
					t.Errorf("refused: %v, want %v unchanged", got, tt.err)
				}
				return
			}
			var f *ForbiddenError
			if !errors.As(got, &f) {
				t.Fatalf("refused: %v, want a ForbiddenError", got)
			}
			if f.Err != tt.err {
				t.Errorf("Err %v, want the API server's %v", f.Err, tt.err)
			}
			gotF := *f
			gotF.Err = nil
			if diff := cmp.Diff(*tt.want, gotF); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if !tenancy.IsNotOnboarded(got) || !apierrors.IsForbidden(got) {
				t.Errorf("%v: tenancy.IsNotOnboarded %t, apierrors.IsForbidden %t, want both", got, tenancy.IsNotOnboarded(got), apierrors.IsForbidden(got))
			}
		})
	}
}

// TestEdit_NeverOverwritesANewerDeploy: a deploy that replaces an image the function
// no longer runs (func deploy wrote another since) writes nothing; one that replaces
// the image it runs, named by its digest as a Revision resolves it, is written.
func TestEdit_NeverOverwritesANewerDeploy(t *testing.T) {
	const (
		running = "127.0.0.1:5000/fns/hello@sha256:1111"
		newer   = "127.0.0.1:5000/fns/hello@sha256:2222"
		rebased = "127.0.0.1:5000/fns/hello@sha256:3333"
	)
	object := func(img string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"image": img}}}}}}}
	}
	obj := object(newer)
	changed, err := edit(funclib.DeployerKnative, obj, rebased, running, deployTime)
	var superseded *SupersededError
	if !errors.As(err, &superseded) || changed {
		t.Fatalf("edit over a newer deploy = %t, %v; want a *SupersededError, nothing changed", changed, err)
	}
	if diff := cmp.Diff(object(newer), obj); diff != "" {
		t.Errorf("the object changed (-want +got):\n%s", diff)
	}
	// Positive control: the image it replaces, by digest under another repository name.
	obj = object("index.docker.io/fns/hello@sha256:1111")
	if changed, err := edit(funclib.DeployerKnative, obj, rebased, running, deployTime); err != nil || !changed {
		t.Fatalf("edit of the image it replaces = %t, %v; want written", changed, err)
	}
}

package resources

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/funclib"
)

func testFunction() *v1alpha1.Function {
	return &v1alpha1.Function{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "hello", UID: "uid-1"},
		Spec: v1alpha1.FunctionSpec{Repository: v1alpha1.Repository{
			URL: "https://git.example/org/fns.git", Branch: "main", Path: "/fns/hello/",
		}},
		Status: v1alpha1.FunctionStatus{Git: &v1alpha1.GitStatus{ResolvedBranch: "main", ObservedCommit: "0123456789abcdef0123456789abcdef01234567"}},
	}
}

func TestBuildRequest(t *testing.T) {
	m := funclib.Metadata{Name: "hello", Runtime: "go", Builder: "pack", Registry: "registry.example/fns"}
	tests := []struct {
		name          string
		m             funclib.Metadata
		builderImages map[string]string
		wantBuilder   string
	}{
		{name: "pinned builder image of the runtime", m: m, builderImages: map[string]string{"pack/go": "b:pinned", "s2i/go": "s2i:x"}, wantBuilder: "b:pinned"},
		{name: "no pin: func's default", m: m, builderImages: map[string]string{"pack/node": "n:1"}, wantBuilder: ""},
		{name: "empty builder means pack", m: funclib.Metadata{Name: "hello", Runtime: "go"}, builderImages: map[string]string{"pack/go": "b:pinned"}, wantBuilder: "b:pinned"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := BuildRequest(testFunction(), "b1", testFunction().Status.Git.ObservedCommit, tt.m, tt.builderImages)
			want := funclib.BuildRequest{
				Namespace:    "team-a",
				Function:     tt.m,
				GitURL:       "https://git.example/org/fns.git",
				Revision:     "0123456789abcdef0123456789abcdef01234567",
				ContextDir:   "fns/hello",
				Labels:       map[string]string{LabelFunction: "hello", LabelBuildID: "b1", LabelManagedBy: ManagedBy},
				BuilderImage: tt.wantBuilder,
				ID:           "b1",
				Owner: metav1.OwnerReference{APIVersion: "functions.dev/v1alpha1", Kind: "Function", Name: "hello",
					UID: testFunction().UID, Controller: ptr.To(true)},
			}
			if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b func() error) bool { return true })); diff != "" {
				t.Errorf("BuildRequest (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBuildRequest_ContextDir: a rebuild builds the function's directory whichever
// name spec.repository gives it, path or upstream's newer dir.
func TestBuildRequest_ContextDir(t *testing.T) {
	m := funclib.Metadata{Name: "hello", Runtime: "go"}
	for _, repo := range []v1alpha1.Repository{
		{URL: "https://git.example/org/fns.git", Branch: "main", Path: "/fns/hello/"},
		{URL: "https://git.example/org/fns.git", Revision: "main", Dir: "/fns/hello/"},
	} {
		fn := testFunction()
		fn.Spec.Repository = repo
		if got := BuildRequest(fn, "b1", fn.Status.Git.ObservedCommit, m, nil).ContextDir; got != "fns/hello" {
			t.Errorf("ContextDir of %+v = %q, want fns/hello", repo, got)
		}
	}
}

package operator

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fnops/func-operator/api/v1alpha1"
)

// TestFunctionCRD_Validation applies Functions to the API server with the generated
// CRD and checks what it refuses.
func TestFunctionCRD_Validation(t *testing.T) {
	ns := newNamespace(t)
	tests := []struct {
		name    string
		repo    v1alpha1.Repository
		refused string // a substring of the API server's refusal; "" means accepted
	}{
		{name: "https", repo: v1alpha1.Repository{URL: "https://github.com/org/repo.git"}},
		{name: "http with path and branch", repo: v1alpha1.Repository{URL: "http://git.example:8080/r", Branch: "release/1.2", Path: "fns/hello"}},
		{name: "ssh url", repo: v1alpha1.Repository{URL: "ssh://git@github.com:22/org/repo.git"}},
		{name: "scp-like", repo: v1alpha1.Repository{URL: "git@github.com:org/repo.git"}},
		{name: "dots inside a name are fine", repo: v1alpha1.Repository{URL: "https://h/r", Path: "fns/v1..2"}},
		{name: "dot path", repo: v1alpha1.Repository{URL: "https://h/r", Path: "./fns"}},
		{name: "empty url", repo: v1alpha1.Repository{URL: ""}, refused: "spec.repository.url"},
		{name: "no scheme", repo: v1alpha1.Repository{URL: "github.com/org/repo"}, refused: "url must be an http://"},
		{name: "unsupported scheme", repo: v1alpha1.Repository{URL: "ftp://h/r"}, refused: "url must be an http://"},
		{name: "credentials in url", repo: v1alpha1.Repository{URL: "https://user:tok@h/r"}, refused: "must not embed credentials"},
		{name: "token as url user", repo: v1alpha1.Repository{URL: "https://ghp_abc@github.com/org/r"}, refused: "must not embed credentials"},
		{name: "a password after a user holding @", repo: v1alpha1.Repository{URL: "ssh://a@b:pw@127.0.0.1/r"}, refused: "must not embed credentials"},
		{name: "ssh user and port: no credentials", repo: v1alpha1.Repository{URL: "ssh://git@127.0.0.1:2222/r"}},
		{name: "a carriage return in url", repo: v1alpha1.Repository{URL: "git@127.0.0.1:org/r\r"}, refused: "must not hold control characters"},
		{name: "a tab in url", repo: v1alpha1.Repository{URL: "https://127.0.0.1/r\tx"}, refused: "must not hold control characters"},
		{name: "absolute path", repo: v1alpha1.Repository{URL: "https://h/r", Path: "/etc"}, refused: "not absolute"},
		{name: "dot-dot path", repo: v1alpha1.Repository{URL: "https://h/r", Path: "fns/../../etc"}, refused: "'..'"},
		{name: "dot-dot alone", repo: v1alpha1.Repository{URL: "https://h/r", Path: ".."}, refused: "'..'"},
		{name: "branch as option", repo: v1alpha1.Repository{URL: "https://h/r", Branch: "--upload-pack=x"}, refused: "plain branch name"},
		{name: "branch as full ref", repo: v1alpha1.Repository{URL: "https://h/r", Branch: "refs/heads/main"}, refused: "plain branch name"},
		{name: "tag", repo: v1alpha1.Repository{URL: "https://h/r", Ref: &v1alpha1.GitRef{Tag: "v1.2.3"}}},
		{name: "semver range", repo: v1alpha1.Repository{URL: "https://h/r", Ref: &v1alpha1.GitRef{SemVer: ">=1.2.0 <2.0.0"}}},
		{name: "semver tilde", repo: v1alpha1.Repository{URL: "https://h/r", Ref: &v1alpha1.GitRef{SemVer: "~1.4"}}},
		{name: "sha-1 commit", repo: v1alpha1.Repository{URL: "https://h/r", Ref: &v1alpha1.GitRef{Commit: strings.Repeat("a1", 20)}}},
		{name: "sha-256 commit", repo: v1alpha1.Repository{URL: "https://h/r", Ref: &v1alpha1.GitRef{Commit: strings.Repeat("b2", 32)}}, refused: "full commit id"},
		{name: "branch and ref", repo: v1alpha1.Repository{URL: "https://h/r", Branch: "main", Ref: &v1alpha1.GitRef{Tag: "v1"}}, refused: "set branch or ref, not both"},
		// Upstream's newer names, revision and dir, beside the older branch and path.
		{name: "revision and dir", repo: v1alpha1.Repository{URL: "https://h/r", Revision: "release/1.2", Dir: "fns/hello"}},
		{name: "revision as a full branch ref", repo: v1alpha1.Repository{URL: "https://h/r", Revision: "refs/heads/main"}},
		{name: "revision as a full tag ref", repo: v1alpha1.Repository{URL: "https://h/r", Revision: "refs/tags/v1.2.3"}},
		{name: "revision with path", repo: v1alpha1.Repository{URL: "https://h/r", Revision: "v1", Path: "fns"}},
		{name: "branch with dir", repo: v1alpha1.Repository{URL: "https://h/r", Branch: "main", Dir: "fns"}},
		{name: "branch and revision", repo: v1alpha1.Repository{URL: "https://h/r", Branch: "main", Revision: "main"}, refused: "set branch or revision, not both"},
		{name: "path and dir", repo: v1alpha1.Repository{URL: "https://h/r", Path: "fns", Dir: "fns"}, refused: "set path or dir, not both"},
		{name: "revision and ref", repo: v1alpha1.Repository{URL: "https://h/r", Revision: "v1", Ref: &v1alpha1.GitRef{Tag: "v1"}}, refused: "set revision or ref, not both"},
		{name: "revision as option", repo: v1alpha1.Repository{URL: "https://h/r", Revision: "--upload-pack=x"}, refused: "revision must be a branch or tag name"},
		{name: "revision with a space", repo: v1alpha1.Repository{URL: "https://h/r", Revision: "a b"}, refused: "revision must be a branch or tag name"},
		{name: "revision with dot-dot", repo: v1alpha1.Repository{URL: "https://h/r", Revision: "a..b"}, refused: "revision must be a branch or tag name"},
		{name: "revision as another ref", repo: v1alpha1.Repository{URL: "https://h/r", Revision: "refs/pull/1/head"}, refused: "revision must be a branch or tag name"},
		{name: "revision as an empty full ref", repo: v1alpha1.Repository{URL: "https://h/r", Revision: "refs/tags/"}, refused: "revision must be a branch or tag name"},
		{name: "absolute dir", repo: v1alpha1.Repository{URL: "https://h/r", Dir: "/etc"}, refused: "dir must be relative"},
		{name: "dot-dot dir", repo: v1alpha1.Repository{URL: "https://h/r", Dir: "fns/../../etc"}, refused: "dir must not contain '..'"},
		{name: "empty ref", repo: v1alpha1.Repository{URL: "https://h/r", Ref: &v1alpha1.GitRef{}}, refused: "exactly one of tag, semver and commit"},
		{name: "tag and commit", repo: v1alpha1.Repository{URL: "https://h/r", Ref: &v1alpha1.GitRef{Tag: "v1", Commit: strings.Repeat("a1", 20)}}, refused: "exactly one of tag, semver and commit"},
		{name: "tag as option", repo: v1alpha1.Repository{URL: "https://h/r", Ref: &v1alpha1.GitRef{Tag: "--upload-pack=x"}}, refused: "plain tag name"},
		{name: "tag as full ref", repo: v1alpha1.Repository{URL: "https://h/r", Ref: &v1alpha1.GitRef{Tag: "refs/tags/v1"}}, refused: "plain tag name"},
		{name: "semver with a shell", repo: v1alpha1.Repository{URL: "https://h/r", Ref: &v1alpha1.GitRef{SemVer: "$(id)"}}, refused: "semver must be a semver range"},
		{name: "short commit", repo: v1alpha1.Repository{URL: "https://h/r", Ref: &v1alpha1.GitRef{Commit: "abc123"}}, refused: "full commit id"},
		{name: "uppercase commit", repo: v1alpha1.Repository{URL: "https://h/r", Ref: &v1alpha1.GitRef{Commit: strings.Repeat("A1", 20)}}, refused: "full commit id"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fn := &v1alpha1.Function{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "v-"},
				Spec:       v1alpha1.FunctionSpec{Repository: tc.repo},
			}
			err := k8sClient.Create(context.Background(), fn)
			switch {
			case tc.refused == "" && err != nil:
				t.Errorf("case %d refused: %v", i, err)
			case tc.refused != "" && err == nil:
				t.Errorf("case %d accepted, want refused with %q", i, tc.refused)
			case tc.refused != "" && !strings.Contains(err.Error(), tc.refused):
				t.Errorf("refusal %q does not contain %q", err, tc.refused)
			}
		})
	}
}

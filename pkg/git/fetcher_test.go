package git

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/funclib/funcyaml"
	"github.com/fnops/func-operator/test/gitserver"
	"github.com/fnops/func-operator/test/testfs"
)

const (
	gitTimeout = time.Minute
	// The credentials of the private repositories; long and distinctive so that any
	// leak into a message is found.
	rightToken    = "right-T0ken-0123456789abcdef"
	wrongToken    = "wrong-T0ken-fedcba9876543210"
	rightPassword = "right-Pa55word-13579"
	wrongPassword = "wrong-Pa55word-24680"
)

// ignoreSourceMiddleware leaves out what TestFetcher_SourceMiddleware checks.
var ignoreSourceMiddleware = cmpopts.IgnoreFields(Result{}, "SourceMiddleware")

// ignoreLayout leaves out what TestFetcher_Tree checks.
var ignoreLayout = cmpopts.IgnoreFields(Result{}, "Tree", "PipelinesAsCode")

func funcYAML(name, runtime string) string {
	return "specVersion: 0.36.0\nname: " + name + "\nruntime: " + runtime + "\n"
}

func md(name, runtime string) funcyaml.Metadata {
	return funcyaml.Metadata{Name: name, Runtime: runtime, SpecVersion: "0.36.0"}
}

func short(commit string) string { return commit[:12] }

// httpGit is a git HTTP server with repositories for the tests.
type httpGit struct {
	root string
	srv  *gitserver.HTTPServer
}

func newHTTPGit(t *testing.T) *httpGit {
	t.Helper()
	root := gitserver.NewRepoRoot(t)
	return &httpGit{root: root, srv: gitserver.StartHTTP(t, root)}
}

// repo creates repository name with files committed on main, and returns it with
// that commit.
func (g *httpGit) repo(t *testing.T, name string, files map[string]string) (*gitserver.Repo, string) {
	t.Helper()
	r := gitserver.CreateRepo(t, g.root, name)
	return r, r.Commit(t, "main", files, "init")
}

// counts returns the ref advertisements and upload-packs the server served for name.
func (g *httpGit) counts(name string) [2]int {
	return [2]int{g.srv.RefAdvertisements(name), g.srv.UploadPacks(name)}
}

func anonymous(t *testing.T, url string) *Auth {
	t.Helper()
	a, err := AuthFromSecret(url, nil)
	if err != nil {
		t.Fatalf("AuthFromSecret(%s, nil): %v", url, err)
	}
	return a
}

func authFrom(t *testing.T, url string, data map[string]string) *Auth {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "repo-creds"}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	a, err := AuthFromSecret(url, s)
	if err != nil {
		t.Fatalf("AuthFromSecret(%s): %v", url, err)
	}
	return a
}

// wantError says what error a call must give: its reason, whether it stalls, and
// substrings of its message.
type wantError struct {
	reason   string
	stalling bool
	msgHas   []string
	// msg is the whole message when set.
	msg string
}

// checkError compares err with want (nil: no error) and checks that no credential
// shows in its message.
func checkError(t *testing.T, want *wantError, err error) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("no error, want %s", want.reason)
	}
	e, ok := asClassified(err)
	if !ok {
		t.Fatalf("error %v is not a classified error", err)
	}
	type kind struct {
		Reason   string
		Stalling bool
	}
	if diff := cmp.Diff(kind{want.reason, want.stalling}, kind{e.Reason, e.Stalling}); diff != "" {
		t.Errorf("error kind (-want +got):\n%s\nmessage: %s", diff, e.Message)
	}
	if want.msg != "" {
		if diff := cmp.Diff(want.msg, e.Message); diff != "" {
			t.Errorf("message (-want +got):\n%s", diff)
		}
	}
	for _, s := range want.msgHas {
		if !strings.Contains(e.Message, s) {
			t.Errorf("message %q does not contain %q", e.Message, s)
		}
	}
	for _, secret := range []string{rightToken, wrongToken, rightPassword, wrongPassword, sshPassphrase} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("message reveals a credential: %q", err)
		}
	}
}

func TestFetcher_Head(t *testing.T) {
	g := newHTTPGit(t)
	branches, mainCommit := g.repo(t, "branches", map[string]string{"func.yaml": funcYAML("branches", "go")})
	featureCommit := branches.Commit(t, "feature", map[string]string{"func.yaml": funcYAML("feature", "go")}, "feature")
	gitserver.CreateRepo(t, g.root, "empty")
	noHEAD := gitserver.CreateRepo(t, g.root, "nohead")
	trunkCommit := noHEAD.Commit(t, "trunk", map[string]string{"func.yaml": funcYAML("trunk", "go")}, "init")
	_, privCommit := g.repo(t, "private", map[string]string{"func.yaml": funcYAML("private", "go")})
	g.srv.RequireToken("private", rightToken)
	_, basicCommit := g.repo(t, "basic", map[string]string{"func.yaml": funcYAML("basic", "go")})
	g.srv.RequireBasicAuth("basic", "alice", rightPassword)

	tests := []struct {
		name    string
		repo    string
		url     string // instead of repo
		branch  string
		auth    func(url string) *Auth
		timeout time.Duration
		want    Head
		wantErr *wantError
	}{{
		name: "default branch",
		repo: "branches",
		want: Head{Branch: "main", Ref: "refs/heads/main", Commit: mainCommit},
	}, {
		name:   "named branch",
		repo:   "branches",
		branch: "feature",
		want:   Head{Branch: "feature", Ref: "refs/heads/feature", Commit: featureCommit},
	}, {
		name:   "missing branch",
		repo:   "branches",
		branch: "nope",
		wantErr: &wantError{reason: v1alpha1.ReasonBranchNotFound, stalling: true,
			msg: `branch "nope" not found in repository ` + g.srv.URL("branches") + ` (branches: feature, main)`},
	}, {
		name: "empty repository",
		repo: "empty",
		wantErr: &wantError{reason: v1alpha1.ReasonBranchNotFound, stalling: true,
			msg: "repository " + g.srv.URL("empty") + " is empty: it has no branches"},
	}, {
		name:   "empty repository, named branch",
		repo:   "empty",
		branch: "main",
		wantErr: &wantError{reason: v1alpha1.ReasonBranchNotFound, stalling: true,
			msg: "repository " + g.srv.URL("empty") + " is empty: it has no branches"},
	}, {
		name: "HEAD names a branch that does not exist",
		repo: "nohead",
		wantErr: &wantError{reason: v1alpha1.ReasonBranchNotFound, stalling: true,
			msg: "repository " + g.srv.URL("nohead") + " does not advertise a default branch: set spec.repository.branch"},
	}, {
		name:   "HEAD names a branch that does not exist, named branch",
		repo:   "nohead",
		branch: "trunk",
		want:   Head{Branch: "trunk", Ref: "refs/heads/trunk", Commit: trunkCommit},
	}, {
		name: "repository that does not exist",
		repo: "missing",
		wantErr: &wantError{reason: v1alpha1.ReasonBranchListFailed, stalling: true,
			msgHas: []string{"listing the branches of " + g.srv.URL("missing"), "repository not found"}},
	}, {
		name: "unreachable server",
		url:  "http://127.0.0.1:1/x.git",
		wantErr: &wantError{reason: v1alpha1.ReasonBranchListFailed, stalling: false,
			msgHas: []string{"listing the branches of http://127.0.0.1:1/x.git", "connection refused"}},
	}, {
		name:    "timeout",
		repo:    "branches",
		timeout: time.Nanosecond,
		wantErr: &wantError{reason: v1alpha1.ReasonGitTimedOut, stalling: false,
			msgHas: []string{"listing the branches of " + g.srv.URL("branches") + " timed out", "context deadline exceeded"}},
	}, {
		name: "private repository without credentials",
		repo: "private",
		wantErr: &wantError{reason: v1alpha1.ReasonBranchListFailed, stalling: true,
			msgHas: []string{"authentication required", "the repository is private, set spec.repository.authSecretRef"}},
	}, {
		name: "private repository with the wrong token",
		repo: "private",
		auth: func(url string) *Auth { return authFrom(t, url, map[string]string{KeyToken: wrongToken}) },
		wantErr: &wantError{reason: v1alpha1.ReasonBranchListFailed, stalling: true,
			msgHas: []string{"authentication required", "the credentials in spec.repository.authSecretRef were refused"}},
	}, {
		name: "private repository with the token",
		repo: "private",
		auth: func(url string) *Auth { return authFrom(t, url, map[string]string{KeyToken: rightToken}) },
		want: Head{Branch: "main", Ref: "refs/heads/main", Commit: privCommit},
	}, {
		name: "private repository with the token and a username",
		repo: "private",
		auth: func(url string) *Auth {
			return authFrom(t, url, map[string]string{KeyToken: rightToken, KeyUsername: "bob"})
		},
		want: Head{Branch: "main", Ref: "refs/heads/main", Commit: privCommit},
	}, {
		name: "basic auth",
		repo: "basic",
		auth: func(url string) *Auth {
			return authFrom(t, url, map[string]string{KeyUsername: "alice", KeyPassword: rightPassword})
		},
		want: Head{Branch: "main", Ref: "refs/heads/main", Commit: basicCommit},
	}, {
		name: "basic auth with the wrong password",
		repo: "basic",
		auth: func(url string) *Auth {
			return authFrom(t, url, map[string]string{KeyUsername: "alice", KeyPassword: wrongPassword})
		},
		wantErr: &wantError{reason: v1alpha1.ReasonBranchListFailed, stalling: true,
			msgHas: []string{"the credentials in spec.repository.authSecretRef were refused"}},
	}, {
		name: "basic auth repository with a token",
		repo: "basic",
		auth: func(url string) *Auth { return authFrom(t, url, map[string]string{KeyToken: rightPassword}) },
		wantErr: &wantError{reason: v1alpha1.ReasonBranchListFailed, stalling: true,
			msgHas: []string{"the credentials in spec.repository.authSecretRef were refused"}},
	}, {
		name: "credentials in the URL never show",
		url:  strings.Replace(g.srv.URL("private"), "http://", "http://alice:"+wrongToken+"@", 1),
		wantErr: &wantError{reason: v1alpha1.ReasonBranchListFailed, stalling: true,
			msgHas: []string{"listing the branches of http://[redacted]@127.0.0.1:"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := tt.url
			if url == "" {
				url = g.srv.URL(tt.repo)
			}
			auth := anonymous(t, url)
			if tt.auth != nil {
				auth = tt.auth(url)
			}
			timeout := tt.timeout
			if timeout == 0 {
				timeout = gitTimeout
			}
			tmp := t.TempDir()
			f := NewFetcher(tmp, 0, manifests)
			before := g.counts(tt.repo)

			got, err := f.Head(context.Background(), url, tt.branch, auth, timeout)
			checkError(t, tt.wantErr, err)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Head (-want +got):\n%s", diff)
			}
			// Listing the branches is one ref advertisement, and never a clone.
			if tt.wantErr == nil {
				after := g.counts(tt.repo)
				if diff := cmp.Diff([2]int{before[0] + 1, before[1]}, after); diff != "" {
					t.Errorf("[ref advertisements, upload-packs] (-want +got):\n%s", diff)
				}
			}
			if diff := cmp.Diff(int64(0), f.clones.Load()); diff != "" {
				t.Errorf("Clones() (-want +got):\n%s", diff)
			}
			testfs.AssertEmptyDir(t, tmp)
		})
	}
}

func TestFetcher_Head_DefaultBranchMoves(t *testing.T) {
	g := newHTTPGit(t)
	r, mainCommit := g.repo(t, "moving", map[string]string{"func.yaml": funcYAML("moving", "go")})
	trunkCommit := r.Commit(t, "trunk", map[string]string{"func.yaml": funcYAML("moving", "node")}, "trunk")
	url := g.srv.URL("moving")
	f := NewFetcher(t.TempDir(), 0, manifests)
	auth := anonymous(t, url)

	got, err := f.Head(context.Background(), url, "", auth, gitTimeout)
	if err != nil {
		t.Fatalf("Head: %v", err)
	}
	if diff := cmp.Diff(Head{Branch: "main", Ref: "refs/heads/main", Commit: mainCommit}, got); diff != "" {
		t.Errorf("Head before SetHEAD (-want +got):\n%s", diff)
	}

	r.SetHEAD(t, "trunk")
	got, err = f.Head(context.Background(), url, "", auth, gitTimeout)
	if err != nil {
		t.Fatalf("Head: %v", err)
	}
	if diff := cmp.Diff(Head{Branch: "trunk", Ref: "refs/heads/trunk", Commit: trunkCommit}, got); diff != "" {
		t.Errorf("Head after SetHEAD (-want +got):\n%s", diff)
	}

	// A new commit on the followed branch is seen at once.
	next := r.Commit(t, "trunk", map[string]string{"README.md": "hello\n"}, "next")
	got, err = f.Head(context.Background(), url, "", auth, gitTimeout)
	if err != nil {
		t.Fatalf("Head: %v", err)
	}
	if diff := cmp.Diff(Head{Branch: "trunk", Ref: "refs/heads/trunk", Commit: next}, got); diff != "" {
		t.Errorf("Head after a new commit (-want +got):\n%s", diff)
	}
}

func TestFetcher_Read(t *testing.T) {
	g := newHTTPGit(t)
	files := map[string]string{
		"func.yaml":                   funcYAML("root-fn", "go"),
		"fns/hello/func.yaml":         funcYAML("hello", "node"),
		"fns/hello/index.js":          "module.exports = () => 'hi'\n",
		"fns/echo/func.yaml":          "specVersion: 0.36.0\nname: echo\nruntime: python\ninvoke: cloudevent\nbuild:\n  builder: s2i\n",
		"fns/nofunc/README.md":        "not a function\n",
		"fns/file":                    "a file, not a directory\n",
		"fns/invalid/func.yaml":       "specVersion: 0.36.0\nruntime: go\n",
		"fns/broken/func.yaml":        "name: [unclosed\n",
		"fns/unsafe/func.yaml":        funcYAML("unsafe", "go") + "run:\n  envs:\n  - name: TOKEN\n    value: '{{ env:GITHUB_TOKEN }}'\n",
		"fns/dirfunc/func.yaml/x.txt": "func.yaml is a directory here\n",
		"fns/big/func.yaml":           funcYAML("big", "go") + "# " + strings.Repeat("x", 1<<20) + "\n",
	}
	_, commit := g.repo(t, "mono", files)
	url := g.srv.URL("mono")
	head := Head{Branch: "main", Ref: "refs/heads/main", Commit: commit}
	s := short(commit)

	tests := []struct {
		name    string
		fnPath  string
		want    funcyaml.Metadata
		wantErr *wantError
	}{{
		name:   "root",
		fnPath: "",
		want:   md("root-fn", "go"),
	}, {
		name:   "function in a monorepo",
		fnPath: "fns/hello",
		want:   md("hello", "node"),
	}, {
		name:   "every field the operator uses",
		fnPath: "fns/echo",
		want:   funcyaml.Metadata{Name: "echo", Runtime: "python", Invoke: "cloudevent", Builder: "s2i", SpecVersion: "0.36.0"},
	}, {
		name:   "missing directory",
		fnPath: "fns/missing",
		wantErr: &wantError{reason: v1alpha1.ReasonPathNotFound, stalling: true,
			msg: `path "fns/missing" does not exist at commit ` + s},
	}, {
		name:   "path below a file",
		fnPath: "fns/file/deeper",
		wantErr: &wantError{reason: v1alpha1.ReasonPathNotFound, stalling: true,
			msg: `path "fns/file/deeper" does not exist at commit ` + s},
	}, {
		name:   "path that is a file",
		fnPath: "fns/file",
		wantErr: &wantError{reason: v1alpha1.ReasonPathNotFound, stalling: true,
			msg: `path "fns/file" is not a directory at commit ` + s},
	}, {
		name:   "directory without func.yaml",
		fnPath: "fns/nofunc",
		wantErr: &wantError{reason: v1alpha1.ReasonFuncYamlNotFound, stalling: true,
			msg: "fns/nofunc/func.yaml does not exist at commit " + s + ": the directory is not a function"},
	}, {
		name:   "func.yaml that is a directory",
		fnPath: "fns/dirfunc",
		wantErr: &wantError{reason: v1alpha1.ReasonFuncYamlNotFound, stalling: true,
			msg: "fns/dirfunc/func.yaml is not a file at commit " + s},
	}, {
		name:   "invalid func.yaml",
		fnPath: "fns/invalid",
		wantErr: &wantError{reason: v1alpha1.ReasonFuncYamlInvalid, stalling: true,
			msg: "func.yaml has no name"},
	}, {
		name:   "func.yaml that is not YAML",
		fnPath: "fns/broken",
		wantErr: &wantError{reason: v1alpha1.ReasonFuncYamlInvalid, stalling: true,
			msgHas: []string{"func.yaml is not valid YAML"}},
	}, {
		name:   "unsafe func.yaml",
		fnPath: "fns/unsafe",
		wantErr: &wantError{reason: v1alpha1.ReasonUnsafeFuncYaml, stalling: true,
			msgHas: []string{"{{ env:... }} templates at run.envs[0].value"}},
	}, {
		name:   "func.yaml over 1 MiB",
		fnPath: "fns/big",
		wantErr: &wantError{reason: v1alpha1.ReasonFuncYamlInvalid, stalling: true,
			msgHas: []string{"fns/big/func.yaml is 1048621 bytes at commit " + s + ": more than the 1048576 a func.yaml may have"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			f := NewFetcher(tmp, 0, manifests)
			before := g.counts("mono")

			got, err := f.Read(context.Background(), url, head, tt.fnPath, anonymous(t, url), gitTimeout)
			checkError(t, tt.wantErr, err)
			// Errors about what the commit holds still say which commit it was.
			want := Result{Head: head, Metadata: tt.want, Cloned: true}
			if diff := cmp.Diff(want, got, ignoreSourceMiddleware, ignoreLayout); diff != "" {
				t.Errorf("Result (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([2]int{before[0] + 1, before[1] + 1}, g.counts("mono")); diff != "" {
				t.Errorf("[ref advertisements, upload-packs] (-want +got):\n%s", diff)
			}
			testfs.AssertEmptyDir(t, tmp)

			// The second Read of the same commit and path comes from the cache, with
			// the same outcome and no request to the server.
			again, err2 := f.Read(context.Background(), url, head, tt.fnPath, anonymous(t, url), gitTimeout)
			want.Cloned = false
			if diff := cmp.Diff(want, again, ignoreSourceMiddleware, ignoreLayout); diff != "" {
				t.Errorf("second Result (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(errString(err), errString(err2)); diff != "" {
				t.Errorf("second error (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([2]int{before[0] + 1, before[1] + 1}, g.counts("mono")); diff != "" {
				t.Errorf("[ref advertisements, upload-packs] after the second Read (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(int64(1), f.clones.Load()); diff != "" {
				t.Errorf("Clones() (-want +got):\n%s", diff)
			}
			testfs.AssertEmptyDir(t, tmp)
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestFetcher_ReadCache(t *testing.T) {
	g := newHTTPGit(t)
	r, c1 := g.repo(t, "cached", map[string]string{
		"func.yaml":           funcYAML("root-fn", "go"),
		"fns/hello/func.yaml": funcYAML("hello", "node"),
	})
	url := g.srv.URL("cached")
	tmp := t.TempDir()
	f := NewFetcher(tmp, 0, manifests)
	auth := anonymous(t, url)
	ctx := context.Background()

	type step struct {
		name       string
		head       func() Head
		fnPath     string
		want       func() Result
		wantErr    *wantError
		wantUpload int // upload-packs since the start
	}
	var c2 string
	steps := []step{{
		name: "first read clones",
		head: func() Head { return Head{Branch: "main", Ref: "refs/heads/main", Commit: c1} },
		want: func() Result {
			return Result{Head: Head{Branch: "main", Ref: "refs/heads/main", Commit: c1}, Metadata: md("root-fn", "go"), Cloned: true}
		},
		wantUpload: 1,
	}, {
		name: "same commit and path is cached",
		head: func() Head { return Head{Branch: "main", Ref: "refs/heads/main", Commit: c1} },
		want: func() Result {
			return Result{Head: Head{Branch: "main", Ref: "refs/heads/main", Commit: c1}, Metadata: md("root-fn", "go")}
		},
		wantUpload: 1,
	}, {
		name:   "another path of the same commit is read from the fetched commit",
		head:   func() Head { return Head{Branch: "main", Ref: "refs/heads/main", Commit: c1} },
		fnPath: "fns/hello",
		want: func() Result {
			return Result{Head: Head{Branch: "main", Ref: "refs/heads/main", Commit: c1}, Metadata: md("hello", "node")}
		},
		wantUpload: 1,
	}, {
		name: "a new commit clones",
		head: func() Head {
			c2 = r.Commit(t, "main", map[string]string{"func.yaml": "specVersion: 0.36.0\nruntime: go\n"}, "break it")
			return Head{Branch: "main", Ref: "refs/heads/main", Commit: c2}
		},
		want: func() Result {
			return Result{Head: Head{Branch: "main", Ref: "refs/heads/main", Commit: c2}, Cloned: true}
		},
		wantErr:    &wantError{reason: v1alpha1.ReasonFuncYamlInvalid, stalling: true, msg: "func.yaml has no name"},
		wantUpload: 2,
	}, {
		name:       "an invalid func.yaml is cached too",
		head:       func() Head { return Head{Branch: "main", Ref: "refs/heads/main", Commit: c2} },
		want:       func() Result { return Result{Head: Head{Branch: "main", Ref: "refs/heads/main", Commit: c2}} },
		wantErr:    &wantError{reason: v1alpha1.ReasonFuncYamlInvalid, stalling: true, msg: "func.yaml has no name"},
		wantUpload: 2,
	}, {
		name: "the older commit is still cached",
		head: func() Head { return Head{Branch: "main", Ref: "refs/heads/main", Commit: c1} },
		want: func() Result {
			return Result{Head: Head{Branch: "main", Ref: "refs/heads/main", Commit: c1}, Metadata: md("root-fn", "go")}
		},
		wantUpload: 2,
	}}
	for _, s := range steps {
		got, err := f.Read(ctx, url, s.head(), s.fnPath, auth, gitTimeout)
		t.Run(s.name, func(t *testing.T) {
			checkError(t, s.wantErr, err)
			if diff := cmp.Diff(s.want(), got, ignoreSourceMiddleware, ignoreLayout); diff != "" {
				t.Errorf("Result (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(s.wantUpload, g.srv.UploadPacks("cached")); diff != "" {
				t.Errorf("upload-packs (-want +got):\n%s", diff)
			}
			testfs.AssertEmptyDir(t, tmp)
		})
	}
	if diff := cmp.Diff(int64(2), f.clones.Load()); diff != "" {
		t.Errorf("Clones() (-want +got):\n%s", diff)
	}
}

// TestFetcher_ReadFailuresNotCached checks that failures that are not about what a
// commit holds are retried: the cache is shared by every caller of the Fetcher.
func TestFetcher_ReadFailuresNotCached(t *testing.T) {
	g := newHTTPGit(t)
	_, commit := g.repo(t, "private", map[string]string{"func.yaml": funcYAML("private", "python")})
	g.srv.RequireToken("private", rightToken)
	url := g.srv.URL("private")
	head := Head{Branch: "main", Ref: "refs/heads/main", Commit: commit}
	good := Result{Head: head, Metadata: md("private", "python"), Cloned: true}
	ctx := context.Background()

	tests := []struct {
		name    string
		auth    *Auth
		timeout time.Duration
		wantErr *wantError
	}{{
		name: "without credentials",
		auth: anonymous(t, url),
		wantErr: &wantError{reason: v1alpha1.ReasonGitCloneFailed, stalling: true,
			msgHas: []string{"cloning " + url, "authentication required", "the repository is private, set spec.repository.authSecretRef"}},
	}, {
		name: "with the wrong token",
		auth: authFrom(t, url, map[string]string{KeyToken: wrongToken}),
		wantErr: &wantError{reason: v1alpha1.ReasonGitCloneFailed, stalling: true,
			msgHas: []string{"cloning " + url, "the credentials in spec.repository.authSecretRef were refused"}},
	}, {
		name:    "timed out",
		auth:    authFrom(t, url, map[string]string{KeyToken: rightToken}),
		timeout: time.Nanosecond,
		wantErr: &wantError{reason: v1alpha1.ReasonGitTimedOut, stalling: false,
			msgHas: []string{"cloning " + url + " timed out"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			f := NewFetcher(tmp, 0, manifests)
			timeout := tt.timeout
			if timeout == 0 {
				timeout = gitTimeout
			}
			_, err := f.Read(ctx, url, head, "", tt.auth, timeout)
			checkError(t, tt.wantErr, err)
			testfs.AssertEmptyDir(t, tmp)

			// With the right credentials, the same commit is read.
			got, err := f.Read(ctx, url, head, "", authFrom(t, url, map[string]string{KeyToken: rightToken}), gitTimeout)
			if err != nil {
				t.Fatalf("Read with the right token: %v", err)
			}
			if diff := cmp.Diff(good, got, ignoreSourceMiddleware, ignoreLayout); diff != "" {
				t.Errorf("Result with the right token (-want +got):\n%s", diff)
			}
			testfs.AssertEmptyDir(t, tmp)
		})
	}
}

func TestFetcher_ReadErrors(t *testing.T) {
	g := newHTTPGit(t)
	_, commit := g.repo(t, "repo", map[string]string{"func.yaml": funcYAML("hello", "go")})
	url := g.srv.URL("repo")

	tests := []struct {
		name    string
		url     string
		head    Head
		timeout time.Duration
		want    Result
		wantErr *wantError
	}{{
		name: "repository that does not exist",
		url:  g.srv.URL("missing"),
		head: Head{Branch: "main", Ref: "refs/heads/main", Commit: commit},
		want: Result{Head: Head{Branch: "main", Ref: "refs/heads/main", Commit: commit}},
		wantErr: &wantError{reason: v1alpha1.ReasonGitCloneFailed, stalling: true,
			msgHas: []string{"cloning " + g.srv.URL("missing"), "repository not found"}},
	}, {
		name: "unreachable server",
		url:  "http://127.0.0.1:1/x.git",
		head: Head{Branch: "main", Ref: "refs/heads/main", Commit: commit},
		wantErr: &wantError{reason: v1alpha1.ReasonGitCloneFailed, stalling: false,
			msgHas: []string{"cloning http://127.0.0.1:1/x.git", "connection refused"}},
	}, {
		name:    "timeout",
		url:     url,
		head:    Head{Branch: "main", Ref: "refs/heads/main", Commit: commit},
		timeout: time.Nanosecond,
		wantErr: &wantError{reason: v1alpha1.ReasonGitTimedOut, stalling: false,
			msgHas: []string{"cloning " + url + " timed out"}},
	}, {
		name: "branch deleted since Head",
		url:  url,
		head: Head{Branch: "gone", Ref: "refs/heads/gone", Commit: commit},
		wantErr: &wantError{reason: v1alpha1.ReasonBranchNotFound, stalling: true,
			msg: `branch "gone" not found in repository ` + url},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			f := NewFetcher(tmp, 0, manifests)
			timeout := tt.timeout
			if timeout == 0 {
				timeout = gitTimeout
			}
			got, err := f.Read(context.Background(), tt.url, tt.head, "", anonymous(t, tt.url), timeout)
			checkError(t, tt.wantErr, err)
			if diff := cmp.Diff(Result{}, got); diff != "" {
				t.Errorf("Result (-want +got):\n%s", diff)
			}
			testfs.AssertEmptyDir(t, tmp)
		})
	}

	t.Run("temporary directory that does not exist", func(t *testing.T) {
		f := NewFetcher(filepath.Join(t.TempDir(), "missing"), 0, manifests)
		_, err := f.Read(context.Background(), url, Head{Branch: "main", Ref: "refs/heads/main", Commit: commit}, "", anonymous(t, url), gitTimeout)
		if err == nil || !strings.Contains(err.Error(), "creating a temporary directory for the clone") {
			t.Fatalf("error = %v, want one about the temporary directory", err)
		}
		if _, ok := asClassified(err); ok {
			t.Errorf("error %v is a classified error: it is no fault of the Function", err)
		}
	})
}

// TestFetcher_ReadBranchMoved reads a head whose branch moved on since Head: the
// clone gets the newer commit, and the result says so.
func TestFetcher_ReadBranchMoved(t *testing.T) {
	g := newHTTPGit(t)
	r, c1 := g.repo(t, "moving", map[string]string{"func.yaml": funcYAML("old", "go")})
	c2 := r.Commit(t, "main", map[string]string{"func.yaml": funcYAML("new", "go")}, "rename")
	url := g.srv.URL("moving")
	f := NewFetcher(t.TempDir(), 0, manifests)
	auth := anonymous(t, url)

	got, err := f.Read(context.Background(), url, Head{Branch: "main", Ref: "refs/heads/main", Commit: c1}, "", auth, gitTimeout)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if diff := cmp.Diff(Result{Head: Head{Branch: "main", Ref: "refs/heads/main", Commit: c2}, Metadata: md("new", "go"), Cloned: true}, got, ignoreLayout); diff != "" {
		t.Errorf("Result (-want +got):\n%s", diff)
	}
	// What was read is cached under the commit it was read at.
	got, err = f.Read(context.Background(), url, Head{Branch: "main", Ref: "refs/heads/main", Commit: c2}, "", auth, gitTimeout)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if diff := cmp.Diff(Result{Head: Head{Branch: "main", Ref: "refs/heads/main", Commit: c2}, Metadata: md("new", "go")}, got, ignoreLayout); diff != "" {
		t.Errorf("Result at the new commit (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(1, g.srv.UploadPacks("moving")); diff != "" {
		t.Errorf("upload-packs (-want +got):\n%s", diff)
	}
}

// TestFetcher_ReadConcurrent checks that concurrent Reads of one commit clone once.
func TestFetcher_ReadConcurrent(t *testing.T) {
	g := newHTTPGit(t)
	_, commit := g.repo(t, "busy", map[string]string{"func.yaml": funcYAML("busy", "go")})
	url := g.srv.URL("busy")
	tmp := t.TempDir()
	f := NewFetcher(tmp, 0, manifests)
	auth := anonymous(t, url)
	head := Head{Branch: "main", Ref: "refs/heads/main", Commit: commit}

	const n = 8
	results := make([]Result, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i], errs[i] = f.Read(context.Background(), url, head, "", auth, gitTimeout)
		}(i)
	}
	wg.Wait()
	for i := 0; i < n; i++ {
		if errs[i] != nil {
			t.Fatalf("Read %d: %v", i, errs[i])
		}
		results[i].Cloned = false // which callers saw the clone depends on timing
		if diff := cmp.Diff(Result{Head: head, Metadata: md("busy", "go")}, results[i], ignoreLayout); diff != "" {
			t.Errorf("Result %d (-want +got):\n%s", i, diff)
		}
	}
	if diff := cmp.Diff(1, g.srv.UploadPacks("busy")); diff != "" {
		t.Errorf("upload-packs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(int64(1), f.clones.Load()); diff != "" {
		t.Errorf("Clones() (-want +got):\n%s", diff)
	}
	testfs.AssertEmptyDir(t, tmp)
}

func TestFetcher_CacheSize(t *testing.T) {
	g := newHTTPGit(t)
	_, commit := g.repo(t, "small", map[string]string{
		"a/func.yaml": funcYAML("a", "go"),
		"b/func.yaml": funcYAML("b", "go"),
	})
	url := g.srv.URL("small")
	f := NewFetcher(t.TempDir(), 1, manifests)
	f.CommitStoreBytes = func() int64 { return 1 } // no commit is kept: this checks the path cache alone
	auth := anonymous(t, url)
	head := Head{Branch: "main", Ref: "refs/heads/main", Commit: commit}

	paths := []string{"a", "a", "b", "b", "a"}
	cloned := make([]bool, 0, len(paths))
	for _, p := range paths {
		got, err := f.Read(context.Background(), url, head, p, auth, gitTimeout)
		if err != nil {
			t.Fatalf("Read %s: %v", p, err)
		}
		cloned = append(cloned, got.Cloned)
	}
	// One entry: reading b evicts a.
	if diff := cmp.Diff([]bool{true, false, true, false, true}, cloned); diff != "" {
		t.Errorf("Cloned of each Read (-want +got):\n%s", diff)
	}
}

// manifests stands in for funclib.SourceManifests, which the operator gives its
// Fetcher: func's rules are funclib's to test (TestSourceManifests_Fetcher reads them
// through a Fetcher); here, node pins in package.json and quarkus in pom.xml, whose
// whole content is the version, and go in no file.
var manifests Manifests = fakeManifests{}

type fakeManifests struct{}

func (fakeManifests) Files(runtime string) []string {
	switch runtime {
	case "node":
		return []string{"package.json"}
	case "quarkus":
		return []string{"pom.xml"}
	}
	return nil
}

func (fakeManifests) All() []string { return []string{"package.json", "pom.xml"} }

func (m fakeManifests) Version(runtime, invoke string, files map[string][]byte) (string, error) {
	name := m.Files(runtime)[0]
	data, ok := files[name]
	if !ok {
		return "", fmt.Errorf("the function has no %s (%s, %s)", name, runtime, invoke)
	}
	return strings.TrimSpace(string(data)), nil
}

// TestFetcher_SourceMiddleware reads the middleware version the function's own source
// pins, in the same clone as func.yaml, with the Fetcher's Manifests: only the files
// they name, only regular files of the function's own directory.
func TestFetcher_SourceMiddleware(t *testing.T) {
	g := newHTTPGit(t)
	_, commit := g.repo(t, "sources", map[string]string{
		"node/func.yaml":           funcYAML("node", "node"),
		"node/package.json":        "^2.3.0\n",
		"node/pom.xml":             "not read for node",
		"bare/func.yaml":           funcYAML("bare", "node"),
		"package.json":             "not the function's",
		"quarkus/func.yaml":        funcYAML("q", "quarkus"),
		"quarkus/pom.xml":          "3.10.0",
		"go/func.yaml":             funcYAML("g", "go"),
		"go/package.json":          "not read for go",
		"linked/func.yaml":         funcYAML("linked", "node"),
		"linked/package.json/x.md": "a directory named package.json is no manifest",
	})
	url := g.srv.URL("sources")
	head := Head{Branch: "main", Ref: "refs/heads/main", Commit: commit}
	f := NewFetcher(t.TempDir(), 0, manifests)
	tests := map[string]SourceMiddleware{
		"node":    {Version: "^2.3.0"},
		"quarkus": {Version: "3.10.0"},
		"go":      {},
		"bare":    {Problem: "the function has no package.json (node, )"},
		"linked":  {Problem: "the function has no package.json (node, )"},
	}
	for dir, want := range tests {
		got, err := f.Read(context.Background(), url, head, dir, &Auth{}, time.Minute)
		if err != nil {
			t.Fatalf("Read %s: %v", dir, err)
		}
		if diff := cmp.Diff(want, got.SourceMiddleware); diff != "" {
			t.Errorf("%s: SourceMiddleware (-want +got):\n%s", dir, diff)
		}
	}
	// All of them came from one transfer: the snapshot kept each directory's manifest.
	if got := f.clones.Load(); got != 1 {
		t.Errorf("clones = %d, want 1", got)
	}

	// Without Manifests, a Fetcher reads func.yaml alone.
	none := NewFetcher(t.TempDir(), 0, nil)
	got, err := none.Read(context.Background(), url, head, "node", &Auth{}, time.Minute)
	if err != nil {
		t.Fatalf("Read node without Manifests: %v", err)
	}
	if diff := cmp.Diff(Result{Head: head, Metadata: md("node", "node"), Cloned: true}, got, ignoreLayout); diff != "" {
		t.Errorf("Read node without Manifests (-want +got):\n%s", diff)
	}
}

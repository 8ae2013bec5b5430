package function

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/git"
)

// artifact is what the source step tests compare of obs.source.
type artifact struct {
	Head                  git.Head
	Name, Runtime, Invoke string
	HasMetadata           bool // func.yaml was read in this step
	HasAuth               bool
}

func artifactOf(a sourceArtifact) artifact {
	return artifact{Head: a.head, Name: a.name, Runtime: a.runtime, Invoke: a.invoke, HasMetadata: a.metadata != nil, HasAuth: a.auth != nil}
}

func TestReconciler_reconcileSource(t *testing.T) {
	onFakeClient(t)
	g := newGitFixture(t)
	head := git.Head{Branch: "main", Ref: "refs/heads/main", Commit: g.public.Head(t, "main")}
	tests := []struct {
		name string
		repo v1alpha1.Repository
		// before is status the Function shows before the step; nil for a new Function.
		before       func(fs *v1alpha1.FunctionStatus)
		secret       map[string]string // the repository Secret "git", when set
		want         outcome
		wantArtifact artifact
		wantClones   int // upload-pack requests to the repository: clones
		// wantGit is status.git after the step (lastChecked aside), when set.
		wantGit *v1alpha1.GitStatus
	}{{
		name:         "new Function: func.yaml read at the branch head",
		repo:         v1alpha1.Repository{URL: g.http.URL("public")},
		want:         outcome{Condition: "True/FuncYamlRead/"},
		wantArtifact: artifact{Head: head, Name: "hello", Runtime: "go", Invoke: "http", HasMetadata: true, HasAuth: true},
		wantClones:   1,
	}, {
		name: "status already at the head: no clone, func.yaml's fields from the status",
		repo: v1alpha1.Repository{URL: g.http.URL("public")},
		before: func(fs *v1alpha1.FunctionStatus) {
			fs.Git = &v1alpha1.GitStatus{ResolvedBranch: "main", ObservedCommit: head.Commit}
			fs.Name = "from-status"
			fs.Deployment = &v1alpha1.DeploymentStatus{Runtime: "python", Invoke: "cloudevent"}
			fs.MarkSourceReady("main", head.Commit)
		},
		want:         outcome{Condition: "True/FuncYamlRead/"},
		wantArtifact: artifact{Head: head, Name: "from-status", Runtime: "python", Invoke: "cloudevent", HasAuth: true},
		// An older operator's status gains the names it did not write, without a clone.
		wantGit: &v1alpha1.GitStatus{ResolvedBranch: "main", ResolvedRevision: "main", ResolvedRef: "refs/heads/main", ObservedCommit: head.Commit},
	}, {
		name: "revision and dir, upstream's newer names",
		repo: v1alpha1.Repository{URL: g.http.URL("revs"), Revision: "main", Dir: "fns/dir"},
		want: outcome{Condition: "True/FuncYamlRead/"},
		wantArtifact: artifact{Head: git.Head{Branch: "main", Ref: "refs/heads/main", Commit: g.revs.Head(t, "main")},
			Name: "in-dir", Runtime: "node", Invoke: "http", HasMetadata: true, HasAuth: true},
		wantClones: 1,
		wantGit:    &v1alpha1.GitStatus{ResolvedBranch: "main", ResolvedRevision: "main", ResolvedRef: "refs/heads/main", ObservedCommit: g.revs.Head(t, "main")},
	}, {
		name: "revision naming a tag and a branch: the tag",
		repo: v1alpha1.Repository{URL: g.http.URL("revs"), Revision: "both"},
		want: outcome{Condition: "True/FuncYamlRead/"},
		wantArtifact: artifact{Head: git.Head{Ref: "refs/tags/both", Commit: g.revs.Head(t, "tagsrc")},
			Name: "tagged", Runtime: "rust", Invoke: "http", HasMetadata: true, HasAuth: true},
		wantClones: 1,
		wantGit:    &v1alpha1.GitStatus{ResolvedRevision: "refs/tags/both", ResolvedRef: "refs/tags/both", ObservedCommit: g.revs.Head(t, "tagsrc")},
	}, {
		name: "branch and path, the older names: a branch also a tag's name is the branch",
		repo: v1alpha1.Repository{URL: g.http.URL("revs"), Branch: "both", Path: "."},
		want: outcome{Condition: "True/FuncYamlRead/"},
		wantArtifact: artifact{Head: git.Head{Branch: "both", Ref: "refs/heads/both", Commit: g.revs.Head(t, "both")},
			Name: "branch-both", Runtime: "python", Invoke: "http", HasMetadata: true, HasAuth: true},
		wantClones: 1,
		wantGit:    &v1alpha1.GitStatus{ResolvedBranch: "both", ResolvedRevision: "both", ResolvedRef: "refs/heads/both", ObservedCommit: g.revs.Head(t, "both")},
	}, {
		name: "revision that is neither a tag nor a branch: stalls",
		repo: v1alpha1.Repository{URL: g.http.URL("revs"), Revision: "nope"},
		want: outcome{Kind: "stalling", Reason: v1alpha1.ReasonRevisionNotFound, Condition: "False/RevisionNotFound/"},
	}, {
		name:         "tag: func.yaml read at the commit it points at",
		repo:         v1alpha1.Repository{URL: g.http.URL("public"), Ref: &v1alpha1.GitRef{Tag: "v1.0.0"}},
		want:         outcome{Condition: "True/FuncYamlRead/"},
		wantArtifact: artifact{Head: git.Head{Ref: "refs/tags/v1.0.0", Commit: head.Commit}, Name: "hello", Runtime: "go", Invoke: "http", HasMetadata: true, HasAuth: true},
		wantClones:   1,
	}, {
		name:         "semver range: its highest tag",
		repo:         v1alpha1.Repository{URL: g.http.URL("public"), Ref: &v1alpha1.GitRef{SemVer: ">=1.0.0"}},
		want:         outcome{Condition: "True/FuncYamlRead/"},
		wantArtifact: artifact{Head: git.Head{Ref: "refs/tags/v1.0.0", Commit: head.Commit}, Name: "hello", Runtime: "go", Invoke: "http", HasMetadata: true, HasAuth: true},
		wantClones:   1,
	}, {
		name: "semver range that is not one: stalls",
		repo: v1alpha1.Repository{URL: g.http.URL("public"), Ref: &v1alpha1.GitRef{SemVer: "not-a-range"}},
		want: outcome{Kind: "stalling", Reason: "SemVerInvalid", Condition: "False/SemVerInvalid/"},
	}, {
		name: "tag not in the repository: stalls",
		repo: v1alpha1.Repository{URL: g.http.URL("public"), Ref: &v1alpha1.GitRef{Tag: "v9.9.9"}},
		want: outcome{Kind: "stalling", Reason: "TagNotFound", Condition: "False/TagNotFound/"},
	}, {
		name:         "fixed commit",
		repo:         v1alpha1.Repository{URL: g.http.URL("public"), Ref: &v1alpha1.GitRef{Commit: head.Commit}},
		want:         outcome{Condition: "True/FuncYamlRead/"},
		wantArtifact: artifact{Head: git.Head{Commit: head.Commit, Tip: "refs/heads/main"}, Name: "hello", Runtime: "go", Invoke: "http", HasMetadata: true, HasAuth: true},
		wantClones:   1,
	}, {
		name:   "private repository with its token",
		repo:   v1alpha1.Repository{URL: g.http.URL("private"), AuthSecretRef: secretRef("git")},
		secret: map[string]string{"token": testToken},
		want:   outcome{Condition: "True/FuncYamlRead/"},
		wantArtifact: artifact{Head: git.Head{Branch: "main", Ref: "refs/heads/main", Commit: g.private.Head(t, "main")},
			Name: "private", Runtime: "python", Invoke: "http", HasMetadata: true, HasAuth: true},
		wantClones: 1,
	}, {
		name: "Secret missing: stalls until it exists",
		repo: v1alpha1.Repository{URL: g.http.URL("private"), AuthSecretRef: secretRef("git")},
		want: outcome{Kind: "stalling", Reason: v1alpha1.ReasonAuthSecretNotFound, Condition: "False/AuthSecretNotFound/"},
	}, {
		name:   "Secret refused: stalls until it changes",
		repo:   v1alpha1.Repository{URL: g.http.URL("private"), AuthSecretRef: secretRef("git")},
		secret: map[string]string{"token": "wrong"},
		want:   outcome{Kind: "stalling", Reason: v1alpha1.ReasonBranchListFailed, Condition: "False/BranchListFailed/"},
	}, {
		name: "path not in the repository: stalls until a new commit",
		repo: v1alpha1.Repository{URL: g.http.URL("public"), Path: "missing"},
		want: outcome{Kind: "stalling", Reason: v1alpha1.ReasonPathNotFound, Condition: "False/PathNotFound/"},
		// The head is known, the read failed.
		wantArtifact: artifact{Head: head, HasAuth: true},
		wantClones:   1,
	}, {
		name:         "invalid func.yaml: stalls",
		repo:         v1alpha1.Repository{URL: g.http.URL("public"), Path: "fns/bad"},
		want:         outcome{Kind: "stalling", Reason: v1alpha1.ReasonFuncYamlInvalid, Condition: "False/FuncYamlInvalid/"},
		wantArtifact: artifact{Head: head, HasAuth: true},
		wantClones:   1,
	}, {
		name: "branch that does not exist: stalls",
		repo: v1alpha1.Repository{URL: g.http.URL("public"), Branch: "nope"},
		want: outcome{Kind: "stalling", Reason: v1alpha1.ReasonBranchNotFound, Condition: "False/BranchNotFound/"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := newNamespace(t)
			if tt.secret != nil {
				s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "git"}, StringData: tt.secret}
				mustCreate(t, s)
			}
			r, _ := newTestReconciler(t, 10)
			fn := newFunction(ns, "fn", tt.repo)
			fn.Status.InitializeConditions()
			if tt.before != nil {
				tt.before(&fn.Status)
			}
			obs := &observation{}
			repo := strings.TrimSuffix(tt.repo.URL[strings.LastIndex(tt.repo.URL, "/")+1:], ".git")
			clonesBefore := g.http.UploadPacks(repo)

			res, err := r.reconcileSource(context.Background(), fn, obs)

			if diff := cmp.Diff(tt.want, outcomeOf(err, fn, v1alpha1.FunctionConditionSourceReady)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s\nerror: %v", diff, err)
			}
			if diff := cmp.Diff(tt.wantArtifact, artifactOf(obs.source)); diff != "" {
				t.Errorf("obs.source (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantClones, g.http.UploadPacks(repo)-clonesBefore); diff != "" {
				t.Errorf("clones (-want +got):\n%s", diff)
			}
			if res.RequeueAfter != 0 || res.AfterPatch != nil {
				t.Errorf("Result = %+v, want none", res)
			}
			if tt.wantGit != nil {
				checkGit(t, *tt.wantGit, fn.Status.Git)
			}
		})
	}
}

// checkGit compares status.git with want, lastChecked aside.
func checkGit(t *testing.T, want v1alpha1.GitStatus, got *v1alpha1.GitStatus) {
	t.Helper()
	if got == nil {
		t.Fatalf("status.git = nil, want %+v", want)
	}
	g := *got
	g.LastChecked = nil
	if diff := cmp.Diff(want, g); diff != "" {
		t.Errorf("status.git (-want +got):\n%s", diff)
	}
}

// TestReconciler_reconcileSourceFollowsAMovedTag: a tag named by revision is followed
// as ref.tag is: when it moves, the next listing resolves it to its new commit.
func TestReconciler_reconcileSourceFollowsAMovedTag(t *testing.T) {
	onFakeClient(t)
	g := newGitFixture(t)
	r, _ := newTestReconciler(t, 10)
	fn := newFunction(newNamespace(t), "fn", v1alpha1.Repository{URL: g.http.URL("revs"), Revision: "only-tag"})
	fn.Status.InitializeConditions()

	tagged, onMain := g.revs.Head(t, "tagsrc"), g.revs.Head(t, "main")
	for i, step := range []struct {
		moveTo, wantName, wantRuntime, wantCommit string
	}{
		{wantName: "tagged", wantRuntime: "rust", wantCommit: tagged},
		{moveTo: onMain, wantName: "rev-main", wantRuntime: "go", wantCommit: onMain},
	} {
		if step.moveTo != "" {
			g.revs.Tag(t, "only-tag", step.moveTo, false)
			// A check asked for now lists the repository again.
			fn.Annotations = map[string]string{v1alpha1.AnnotationRequestedAt: fmt.Sprint(i)}
		}
		obs := &observation{}
		if _, err := r.reconcileSource(context.Background(), fn, obs); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		want := artifact{Head: git.Head{Ref: "refs/tags/only-tag", Commit: step.wantCommit}, Name: step.wantName, Runtime: step.wantRuntime,
			Invoke: "http", HasMetadata: true, HasAuth: true}
		if diff := cmp.Diff(want, artifactOf(obs.source)); diff != "" {
			t.Errorf("step %d: obs.source (-want +got):\n%s", i, diff)
		}
		checkGit(t, v1alpha1.GitStatus{ResolvedRevision: "refs/tags/only-tag", ResolvedRef: "refs/tags/only-tag", ObservedCommit: step.wantCommit}, fn.Status.Git)
	}
}

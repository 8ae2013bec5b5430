package oncommit

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/git"
	"github.com/fnops/func-operator/pkg/reconciler/function/build"
	"github.com/fnops/func-operator/pkg/rerror"
)

// fakeSources answers ReadAt with at (or err), and counts the reads.
type fakeSources struct {
	at    git.Result
	err   error
	reads int
}

func (f *fakeSources) Read(context.Context, string, git.Head, string, *git.Auth, time.Duration) (git.Result, error) {
	f.reads++
	return git.Result{}, errors.New("Read: not in this test")
}

func (f *fakeSources) ReadAt(_ context.Context, _ string, _ git.Head, want, _, _ string, _ *git.Auth, _ time.Duration) (git.Result, error) {
	f.reads++
	if f.err != nil {
		return git.Result{}, f.err
	}
	r := f.at
	if r.Commit == "" {
		r.Commit = want
	}
	return r, nil
}

const (
	followed = "ffffffffffffffffffffffffffffffffffffffff"
	deployed = "dddddddddddddddddddddddddddddddddddddddd"
	treeF    = "1111111111111111111111111111111111111111"
	treeD    = "2222222222222222222222222222222222222222"
)

// TestChecker_Check: the source policy's check against what the steps before it
// observed, on a fake repository: whether a build is due, what the status and
// SourceDeployed say, and when the deployed commit is read (once per image).
func TestChecker_Check(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	on := map[string]string{v1alpha1.AnnotationDeployOnCommit: "true"}
	deployedFn := func(change func(*v1alpha1.Function)) *v1alpha1.Function {
		fn := &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1alpha1.AnnotationDeployOnCommit: "true"}}}
		fn.Status.Deployment = &v1alpha1.DeploymentStatus{Image: "img@sha256:1", FollowedAtDeploy: deployed}
		if change != nil {
			change(fn)
		}
		return fn
	}
	for _, tt := range []struct {
		name      string
		fn        *v1alpha1.Function
		running   string
		sources   fakeSources
		want      build.OnCommit
		wantCond  string // status/reason of SourceDeployed; "" for none
		wantReads int
	}{{
		name:     "policy off: no status, no condition",
		fn:       &v1alpha1.Function{Status: v1alpha1.FunctionStatus{DeployOnCommit: &v1alpha1.DeployOnCommitStatus{Enabled: true}}},
		wantCond: "",
	}, {
		name:     "nothing seen deployed yet: unknown, no read, no panic",
		fn:       &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Annotations: on}},
		want:     build.OnCommit{Enabled: true},
		wantCond: "Unknown/" + v1alpha1.ReasonDeployedCommitUnknown,
	}, {
		name:     "the followed commit runs: nothing to build, no read",
		fn:       deployedFn(nil),
		running:  followed,
		want:     build.OnCommit{Enabled: true, Deployed: followed},
		wantCond: "True/" + v1alpha1.ReasonCommitDeployed,
	}, {
		name:    "an older commit, same directory: read once, nothing to build",
		fn:      deployedFn(nil),
		running: deployed[:7], sources: fakeSources{at: git.Result{Head: git.Head{Commit: deployed}, Tree: treeF}},
		want:     build.OnCommit{Enabled: true, Deployed: deployed},
		wantCond: "True/" + v1alpha1.ReasonCommitDeployed, wantReads: 1,
	}, {
		name:    "an older commit, another directory: a build is due",
		fn:      deployedFn(nil),
		running: deployed[:7], sources: fakeSources{at: git.Result{Head: git.Head{Commit: deployed}, Tree: treeD}},
		want:     build.OnCommit{Enabled: true, Changed: true, Deployed: deployed},
		wantCond: "False/" + v1alpha1.ReasonNewCommit, wantReads: 1,
	}, {
		name: "the deployed tree kept: no read",
		fn: deployedFn(func(fn *v1alpha1.Function) {
			fn.Status.DeployOnCommit = &v1alpha1.DeployOnCommitStatus{DeployedCommit: deployed, DeployedTree: treeD}
		}),
		running:  deployed[:7],
		want:     build.OnCommit{Enabled: true, Changed: true, Deployed: deployed},
		wantCond: "False/" + v1alpha1.ReasonNewCommit,
	}, {
		name: "the last build for a new commit a minute ago: its interval runs",
		fn: deployedFn(func(fn *v1alpha1.Function) {
			fn.Status.DeployOnCommit = &v1alpha1.DeployOnCommitStatus{DeployedCommit: deployed, DeployedTree: treeD,
				LastBuildTime: &metav1.Time{Time: now.Add(-time.Minute)}, LastBuildTree: treeF}
		}),
		running:  deployed,
		want:     build.OnCommit{Enabled: true, Changed: true, Deployed: deployed, Tried: true, NotBefore: now.Add(time.Minute)},
		wantCond: "False/" + v1alpha1.ReasonBuildIntervalNotOver,
	}, {
		name: "an invalid settings annotation holds it",
		fn: deployedFn(func(fn *v1alpha1.Function) {
			fn.Annotations[v1alpha1.AnnotationSuspend] = "yes"
			fn.Status.DeployOnCommit = &v1alpha1.DeployOnCommitStatus{DeployedCommit: deployed, DeployedTree: treeD}
		}),
		running:  deployed,
		want:     build.OnCommit{Enabled: true, Deployed: deployed},
		wantCond: "False/" + v1alpha1.ReasonRebuildsHeld,
	}, {
		name:    "the directory is not at the deployed commit: changed",
		fn:      deployedFn(nil),
		running: deployed, sources: fakeSources{err: rerror.NewStalling(v1alpha1.ReasonPathNotFound, "at the deployed commit")},
		want:     build.OnCommit{Enabled: true, Changed: true, Deployed: deployed},
		wantCond: "False/" + v1alpha1.ReasonNewCommit, wantReads: 1,
	}, {
		name:    "the deployed commit cannot be read: unknown, kept for this image",
		fn:      deployedFn(nil),
		running: deployed, sources: fakeSources{err: rerror.NewStalling(v1alpha1.ReasonCommitNotFound, "at the deployed commit")},
		want:     build.OnCommit{Enabled: true},
		wantCond: "Unknown/" + v1alpha1.ReasonDeployedCommitUnknown, wantReads: 1,
	}, {
		name: "... and not read again while the same image runs",
		fn: deployedFn(func(fn *v1alpha1.Function) {
			fn.Status.DeployOnCommit = &v1alpha1.DeployOnCommitStatus{UnknownFor: "img@sha256:1@" + deployed}
		}),
		running:  deployed,
		want:     build.OnCommit{Enabled: true},
		wantCond: "Unknown/" + v1alpha1.ReasonDeployedCommitUnknown,
	}} {
		t.Run(tt.name, func(t *testing.T) {
			store := config.NewStore()
			c := New(Deps{Sources: &tt.sources, Config: store, Clock: clocktesting.NewFakePassiveClock(now)})
			got, err := c.Check(context.Background(), tt.fn, Input{Head: git.Head{Branch: "main", Commit: followed}, Tree: treeF,
				Running: tt.running, Anchor: deployed})
			if err != nil {
				t.Fatal(err)
			}
			want := tt.want
			if want.Enabled {
				want.Tree = treeF // the followed commit's, as the source step read it
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Check (-want +got):\n%s", diff)
			}
			cond := ""
			if c := tt.fn.Status.GetCondition(v1alpha1.FunctionConditionSourceDeployed); c != nil {
				cond = string(c.Status) + "/" + c.Reason
			}
			if cond != tt.wantCond {
				t.Errorf("SourceDeployed = %s, want %s", cond, tt.wantCond)
			}
			if tt.sources.reads != tt.wantReads {
				t.Errorf("%d reads of the repository, want %d", tt.sources.reads, tt.wantReads)
			}
			st := tt.fn.Status.DeployOnCommit
			if (st != nil) != (tt.wantCond != "") {
				t.Fatalf("status.deployOnCommit = %+v with SourceDeployed %q", st, tt.wantCond)
			}
			if st != nil && strings.HasPrefix(tt.wantCond, "Unknown/"+v1alpha1.ReasonDeployedCommitUnknown) && tt.wantReads == 1 &&
				st.UnknownFor != "img@sha256:1@"+deployed {
				t.Errorf("status.deployOnCommit.unknownFor = %q, want the image and commit kept", st.UnknownFor)
			}
		})
	}
}

package function

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/git"
	"github.com/fnops/func-operator/pkg/registry"
	"github.com/fnops/func-operator/test/gitserver"
)

// TestReconciler_reconcileMiddleware_rebuildFrom checks that the middleware step
// shows, before any rebuild, the commit the running image was built from and the
// commit a rebuild builds, in the status and in MiddlewareUpToDate's message.
func TestReconciler_reconcileMiddleware_rebuildFrom(t *testing.T) {
	onFakeClient(t)
	const image = "registry.invalid/fns/hello@sha256:0123"
	off := false
	tests := []struct {
		name         string
		autoUpdate   *bool
		label        string
		wantRevision string
		wantFrom     *v1alpha1.RebuildFromStatus
		wantMessage  string // in MiddlewareUpToDate's message
	}{{
		name:         "outdated, built from an older commit: that commit",
		label:        deployedCommit[:7],
		wantRevision: deployedCommit[:7],
		wantFrom:     &v1alpha1.RebuildFromStatus{Commit: deployedCommit[:7], Source: "Deployed", Policy: "Deployed", PolicySource: "OperatorConfig"},
		wantMessage:  "a rebuild is pending; a rebuild builds commit aaaaaaa, the one the running image was built from",
	}, {
		name:        "outdated, no label: the followed commit, said before",
		wantFrom:    &v1alpha1.RebuildFromStatus{Commit: followedCommit, Source: "Followed", Policy: "Deployed", PolicySource: "OperatorConfig"},
		wantMessage: "a rebuild is pending; a rebuild builds commit bbbbbbb22222, the followed reference's: the running image names no commit it was built from",
	}, {
		name:         "auto-update off: what a rebuild would build",
		autoUpdate:   &off,
		label:        deployedCommit,
		wantRevision: deployedCommit,
		wantFrom:     &v1alpha1.RebuildFromStatus{Commit: deployedCommit, Source: "Deployed", Policy: "Deployed", PolicySource: "OperatorConfig"},
		wantMessage:  "no rebuild; a rebuild would build commit aaaaaaa11111, the one the running image was built from",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := newTestReconciler(t, 10)
			r.Inspector = &fakeInspector{got: registry.Middleware{Version: "v0.1.0", Source: registry.SourceLabel, Revision: tt.label}}
			r.wire()
			fn := &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "fn"}}
			fn.Spec.AutoUpdateMiddleware = tt.autoUpdate
			fn.Status.InitializeConditions()
			fn.Status.Deployment = &v1alpha1.DeploymentStatus{Runtime: "go", Image: image}
			obs := &observation{
				source:     sourceArtifact{name: "hello", runtime: "go", invoke: "http", head: git.Head{Branch: "main", Ref: "refs/heads/main", Commit: followedCommit}},
				deployment: deployment{image: image},
			}
			if _, err := r.reconcileMiddleware(context.Background(), fn, obs); err != nil {
				t.Fatal(err)
			}
			if got := fn.Status.Deployment.Revision; got != tt.wantRevision {
				t.Errorf("status.deployment.revision = %q, want %q", got, tt.wantRevision)
			}
			if diff := cmp.Diff(tt.wantFrom, fn.Status.Middleware.RebuildFrom); diff != "" {
				t.Errorf("status.middleware.rebuildFrom (-want +got):\n%s", diff)
			}
			if c := fn.Status.GetCondition(v1alpha1.FunctionConditionMiddlewareUpToDate); !strings.Contains(c.Message, tt.wantMessage) {
				t.Errorf("MiddlewareUpToDate message %q does not say %q", c.Message, tt.wantMessage)
			}
		})
	}
}

// TestReconciler_reconcileRebuild_buildSource runs the rebuild step for a function
// deployed at commit A of a real git server, with B pushed since: a rebuild builds
// A, with A's func.yaml, unless the policy or the image says otherwise.
func TestReconciler_reconcileRebuild_buildSource(t *testing.T) {
	onFakeClient(t)
	const image = "registry.invalid/fns/hello@sha256:0123"
	root := gitserver.NewRepoRoot(t)
	srv := gitserver.StartHTTP(t, root)
	repo := gitserver.CreateRepo(t, root, "fn")
	yaml := func(env string) string {
		return "specVersion: 0.36.0\nname: hello\nruntime: go\nregistry: registry.invalid/fns\nbuild:\n  builder: pack\n  buildEnvs:\n  - name: AT\n    value: " + env + "\n"
	}
	a := repo.Commit(t, "main", map[string]string{"fns/hello/func.yaml": yaml("A")}, "A")
	b := repo.Commit(t, "main", map[string]string{"fns/hello/func.yaml": yaml("B")}, "B")
	other := repo.Commit(t, "feature", map[string]string{"fns/hello/func.yaml": yaml("other")}, "not on main")
	due := func(label string) middlewareVerdict {
		fn := &v1alpha1.Function{}
		return middlewareVerdict{current: "v0.1.0", available: "v0.21.3", rebuildDue: true,
			from: decideRebuildFrom(fn, config.Defaults(), label, b)}
	}

	tests := []struct {
		name       string
		middleware middlewareVerdict
		want       outcome
		wantCommit string // built, with its func.yaml
		wantEnv    string
		wantMsg    string // in MiddlewareUpToDate's message
	}{{
		name:       "deployed at A (func's 7 digits), B pushed since: A is built, with A's func.yaml",
		middleware: due(a[:7]),
		want:       outcome{Condition: "False/Rebuilding/"},
		wantCommit: a, wantEnv: "AT=A",
		wantMsg: "rebuilding commit " + a[:12],
	}, {
		name:       "the control: no label, the followed commit B",
		middleware: due(""),
		want:       outcome{Condition: "False/Rebuilding/"},
		wantCommit: b, wantEnv: "AT=B",
	}, {
		name:       "deployed from a commit the followed branch does not hold: no rebuild, and how to have one",
		middleware: due(other[:7]),
		want:       outcome{Kind: "stalling", Reason: v1alpha1.ReasonRebuildNotPossible, Condition: "False/RebuildNotPossible/"},
		wantMsg: "commit " + other[:7] + ", the one the running image was built from, cannot be rebuilt: commit " + other[:7] +
			" is not among commit " + a[:12] + ", which branch \"main\" pointed at when the image was first seen, and its ancestors",
	}, {
		name:       "B pushed since the deploy is never taken for the deployed commit, though its digits match",
		middleware: due(b[:7]),
		want:       outcome{Kind: "stalling", Reason: v1alpha1.ReasonRebuildNotPossible, Condition: "False/RebuildNotPossible/"},
		wantMsg:    "commit " + b[:7] + " is not among commit " + a[:12] + ", which branch \"main\" pointed at when the image was first seen",
	}, {
		name:       "uncommitted changes: no rebuild",
		middleware: due(a[:7] + "-dirty"),
		want:       outcome{Kind: "stalling", Reason: v1alpha1.ReasonRebuildNotPossible, Condition: "False/RebuildNotPossible/"},
		wantMsg:    "set annotation functions.dev/rebuild-commit: Followed to rebuild the followed reference's commit " + b[:12],
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := newNamespace(t)
			r, rec := newBuildReconciler(t)
			fn := &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fn", UID: "uid-1"}}
			fn.Spec.Repository = v1alpha1.Repository{URL: srv.URL("fn"), Branch: "main", Path: "fns/hello"}
			fn.Status.InitializeConditions()
			fn.Status.Middleware = &v1alpha1.MiddlewareStatus{RebuildFrom: tt.middleware.from.status()}
			fn.Status.Deployment = &v1alpha1.DeploymentStatus{Image: image, FollowedAtDeploy: a} // deployed while main pointed at A
			head := git.Head{Branch: "main", Ref: "refs/heads/main", Commit: b}
			read, err := r.Fetcher.Read(context.Background(), fn.Spec.Repository.URL, head, "fns/hello", nil, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			obs := &observation{
				source:     sourceArtifact{head: head, name: "hello", runtime: "go", metadata: &read.Metadata},
				deployment: deployment{image: image, found: testTarget(funclib.DeployerKnative)},
				middleware: tt.middleware,
			}

			res, err := r.build.Rebuild(context.Background(), fn, obs.forBuild())

			if diff := cmp.Diff(tt.want, outcomeOf(err, fn, v1alpha1.FunctionConditionMiddlewareUpToDate)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s\nerror: %v", diff, err)
			}
			if c := fn.Status.GetCondition(v1alpha1.FunctionConditionMiddlewareUpToDate); !strings.Contains(c.Message, tt.wantMsg) {
				t.Errorf("MiddlewareUpToDate message %q does not say %q", c.Message, tt.wantMsg)
			}
			if tt.wantCommit == "" {
				if res.AfterPatch != nil || fn.Status.Build != nil {
					t.Errorf("a build was started: %+v", fn.Status.Build)
				}
				return
			}
			if res.AfterPatch == nil {
				t.Fatal("no build launched")
			}
			if got := fn.Status.Build.Commit; got != tt.wantCommit {
				t.Errorf("status.build.commit = %s, want %s", got, tt.wantCommit)
			}
			if tt.middleware.from.source == v1alpha1.RebuildFromDeployed {
				if got := fn.Status.Middleware.RebuildFrom.Commit; got != tt.wantCommit {
					t.Errorf("status.middleware.rebuildFrom.commit = %s, want it looked up in full, %s", got, tt.wantCommit)
				}
			}
			res.AfterPatch(true)
			r.Builds.Launcher.Wait()
			reqs := rec.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d builds launched, want 1", len(reqs))
			}
			if reqs[0].Revision != tt.wantCommit || !slices.Contains(reqs[0].Function.BuildEnvs, tt.wantEnv) {
				t.Errorf("launched revision %s with build envs %v, want %s with %s (func.yaml at the commit built)",
					reqs[0].Revision, reqs[0].Function.BuildEnvs, tt.wantCommit, tt.wantEnv)
			}
		})
	}
}

package function

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
)

const (
	deployedCommit = "aaaaaaa1111111111111111111111111111111a1"
	followedCommit = "bbbbbbb2222222222222222222222222222222b2"
)

func TestDecideRebuildFrom(t *testing.T) {
	deployed := func(commit string) rebuildFrom {
		return rebuildFrom{commit: commit, source: v1alpha1.RebuildFromDeployed, policy: "Deployed", policySource: "OperatorConfig"}
	}
	tests := []struct {
		name        string
		annotation  string // functions.dev/rebuild-commit, when set
		policy      string // the ConfigMap's
		label       string // the image's revision label
		resolved    string // status.middleware.rebuildFrom.commit of an earlier reconcile
		anchor      string // status.deployment.followedAtDeploy
		want        rebuildFrom
		wantWhy     string
		wantProblem string
	}{{
		name:  "func's short label: the deployed commit, abbreviated until looked up",
		label: deployedCommit[:7],
		want:  deployed(deployedCommit[:7]),
	}, {
		name:  "the operator's full label",
		label: deployedCommit,
		want:  deployed(deployedCommit),
	}, {
		name:  "upper case and spaces: still a commit",
		label: " " + strings.ToUpper(deployedCommit[:7]) + " ",
		want:  deployed(deployedCommit[:7]),
	}, {
		name:   "the deployed commit is the followed one, not moved since the deploy: in full at once",
		label:  followedCommit[:7],
		anchor: followedCommit,
		want:   deployed(followedCommit),
	}, {
		name:   "a followed commit pushed since the deploy that begins with the label's digits is not taken for it",
		label:  followedCommit[:7],
		anchor: deployedCommit,
		want:   deployed(followedCommit[:7]),
	}, {
		name:  "the followed commit in full: it",
		label: followedCommit,
		want:  deployed(followedCommit),
	}, {
		name:     "looked up before: kept in full",
		label:    deployedCommit[:7],
		resolved: deployedCommit,
		want:     deployed(deployedCommit),
	}, {
		name:     "looked up before, for another image: not kept",
		label:    deployedCommit[:7],
		resolved: followedCommit,
		want:     deployed(deployedCommit[:7]),
	}, {
		name:    "no label: the followed commit, saying why",
		want:    rebuildFrom{commit: followedCommit, source: v1alpha1.RebuildFromFollowed, policy: "Deployed", policySource: "OperatorConfig"},
		wantWhy: "the running image names no commit it was built from (no org.opencontainers.image.revision label: func writes one from v0.49)",
	}, {
		name:    "a label that is no commit id counts as none",
		label:   "v1.2.3",
		want:    rebuildFrom{commit: followedCommit, source: v1alpha1.RebuildFromFollowed, policy: "Deployed", policySource: "OperatorConfig"},
		wantWhy: `the running image names no commit it was built from (its label org.opencontainers.image.revision="v1.2.3" is not a commit id)`,
	}, {
		name:        "no label, DeployedOnly: no commit",
		policy:      v1alpha1.RebuildCommitDeployedOnly,
		want:        rebuildFrom{policy: "DeployedOnly", policySource: "OperatorConfig"},
		wantProblem: "the running image names no commit it was built from (no org.opencontainers.image.revision label: func writes one from v0.49), and the rebuild-commit policy is DeployedOnly (set by ConfigMap func-operator-config, key rebuildCommit)",
	}, {
		name:        "uncommitted changes: no commit holds what runs",
		label:       deployedCommit[:7] + "-dirty",
		want:        rebuildFrom{policy: "Deployed", policySource: "OperatorConfig"},
		wantProblem: `the running image was built from uncommitted changes on commit aaaaaaa (label org.opencontainers.image.revision="aaaaaaa-dirty"): no commit holds what runs`,
	}, {
		name:    "Followed by the ConfigMap: the followed commit whatever the label",
		policy:  v1alpha1.RebuildCommitFollowed,
		label:   deployedCommit[:7],
		want:    rebuildFrom{commit: followedCommit, source: v1alpha1.RebuildFromFollowed, policy: "Followed", policySource: "OperatorConfig"},
		wantWhy: "the rebuild-commit policy is Followed (set by ConfigMap func-operator-config, key rebuildCommit)",
	}, {
		name:       "the annotation overrides the ConfigMap",
		annotation: v1alpha1.RebuildCommitFollowed,
		label:      deployedCommit[:7] + "-dirty",
		want:       rebuildFrom{commit: followedCommit, source: v1alpha1.RebuildFromFollowed, policy: "Followed", policySource: "Annotation"},
		wantWhy:    "the rebuild-commit policy is Followed (set by annotation functions.dev/rebuild-commit)",
	}, {
		name:       "the annotation's Deployed over the ConfigMap's Followed",
		annotation: v1alpha1.RebuildCommitDeployed,
		policy:     v1alpha1.RebuildCommitFollowed,
		label:      deployedCommit[:7],
		want:       rebuildFrom{commit: deployedCommit[:7], source: v1alpha1.RebuildFromDeployed, policy: "Deployed", policySource: "Annotation"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fn := &v1alpha1.Function{}
			if tt.annotation != "" {
				fn.Annotations = map[string]string{v1alpha1.AnnotationRebuildCommit: tt.annotation}
			}
			fn.Status.Deployment = &v1alpha1.DeploymentStatus{FollowedAtDeploy: tt.anchor}
			if tt.resolved != "" {
				fn.Status.Middleware = &v1alpha1.MiddlewareStatus{RebuildFrom: &v1alpha1.RebuildFromStatus{
					Commit: tt.resolved, Source: v1alpha1.RebuildFromDeployed, Policy: "Deployed"}}
			}
			cfg := config.Defaults()
			if tt.policy != "" {
				cfg.RebuildCommit = tt.policy
			}
			got := decideRebuildFrom(fn, cfg, tt.label, followedCommit)
			want := tt.want
			want.why, want.problem = tt.wantWhy, tt.wantProblem
			if diff := cmp.Diff(want, got, cmp.AllowUnexported(rebuildFrom{})); diff != "" {
				t.Errorf("decideRebuildFrom (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNewImage: a Function's image is stamped with the followed commit when it is
// new, and keeps that stamp while it runs, whatever is pushed since.
func TestNewImage(t *testing.T) {
	fn := &v1alpha1.Function{}
	fn.Status.Deployment = &v1alpha1.DeploymentStatus{}
	fn.Status.Middleware = &v1alpha1.MiddlewareStatus{}

	newImage(fn, "img@sha256:1", deployedCommit)
	fn.Status.Deployment.Revision = deployedCommit[:7]
	fn.Status.Middleware.RebuildFrom = &v1alpha1.RebuildFromStatus{Commit: deployedCommit, Source: "Deployed", Policy: "Deployed"}
	newImage(fn, "img@sha256:1", followedCommit) // the same image, the branch moved on
	want := v1alpha1.DeploymentStatus{Image: "img@sha256:1", Revision: deployedCommit[:7], FollowedAtDeploy: deployedCommit}
	if diff := cmp.Diff(want, *fn.Status.Deployment); diff != "" || fn.Status.Middleware.RebuildFrom == nil {
		t.Errorf("the same image (-want +got):\n%s\nrebuildFrom %+v kept", diff, fn.Status.Middleware.RebuildFrom)
	}

	newImage(fn, "img@sha256:2", followedCommit) // a deploy
	want = v1alpha1.DeploymentStatus{Image: "img@sha256:2", FollowedAtDeploy: followedCommit}
	if diff := cmp.Diff(want, *fn.Status.Deployment); diff != "" || fn.Status.Middleware.RebuildFrom != nil {
		t.Errorf("a new image (-want +got):\n%s\nrebuildFrom %+v, want none: it was the old image's", diff, fn.Status.Middleware.RebuildFrom)
	}
}

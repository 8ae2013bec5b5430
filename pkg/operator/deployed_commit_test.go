package operator

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"k8s.io/utils/ptr"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/test/registrytest"
	"github.com/fnops/func-operator/test/tekton"
)

// TestOperator_RebuildBuildsTheDeployedCommit: functions deployed at commit A, with
// B pushed to the followed branch since (B also changes func.yaml's build envs), on
// the real Tekton controller.
//
//   - deployed: its image says it was built from A (func's 7 hex digits): the status
//     says a rebuild builds A before it does; the PipelineRun builds A with A's
//     func.yaml; the new image's revision label is A, in full; status.deployment.revision
//     follows it.
//   - unlabelled (the control that B is what the branch holds): its image names no
//     commit: the status says, with auto-update off, that a rebuild would build B, and
//     once auto-update is on, B is built with B's func.yaml.
//   - followed: labelled A, but annotation functions.dev/rebuild-commit: Followed: B.
func TestOperator_RebuildBuildsTheDeployedCommit(t *testing.T) {
	names := []string{"deployed", "unlabelled", "followed"}
	ns := newNamespace(t)
	f := newRebuildFixture(t, ns, names...)
	ctx := context.Background()
	a := f.commit
	files := map[string]string{}
	for _, n := range names {
		files["fns/"+n+"/func.yaml"] = funcYAML(n, "go") + "registry: " + f.reg.Host + "/fns\nbuild:\n  builder: pack\n  buildEnvs:\n  - name: PUSHED\n    value: after-the-deploy\n"
	}
	b := f.repo.Commit(t, "main", files, "B: pushed after the deploy, not reviewed")
	for _, n := range []string{"deployed", "followed"} {
		img, err := f.reg.PushImage(f.reg.Host+"/fns/"+n+":deployed", map[string]string{
			funclib.MiddlewareVersionLabel: oldMiddleware, registrytest.RevisionLabel: a[:7]})
		if err != nil {
			t.Fatal(err)
		}
		f.oldImage[n] = img
		setServiceImage(t, ns, n, img)
		// Served (the real Knative Serving controller rolled it out) before the
		// operator looks.
		eventually(t, 60*time.Second, knativeServes(t, ns, n))
	}

	tekton.StartKubelet(t, restConfig, tekton.Options{Namespaces: []string{ns}, Registry: f.reg, Decide: succeed(t)})
	startOperatorWith(t, rebuildConfig(2), ns)
	off := false
	f.createFunction(t, "deployed", &off)
	f.createFunction(t, "unlabelled", &off)
	f.createFunctionSpec(t, "followed", func(fn *v1alpha1.Function) {
		fn.Annotations = map[string]string{v1alpha1.AnnotationRebuildCommit: v1alpha1.RebuildCommitFollowed}
	})

	// Before any rebuild, the status says which commit one builds.
	wantFrom := map[string]v1alpha1.RebuildFromStatus{
		"deployed":   {Commit: a[:7], Source: "Deployed", Policy: "Deployed", PolicySource: "OperatorConfig"},
		"unlabelled": {Commit: b, Source: "Followed", Policy: "Deployed", PolicySource: "OperatorConfig"},
	}
	for n, want := range wantFrom {
		eventually(t, 60*time.Second, func() string {
			fn := getFunction(t, ns, n)
			c := fn.Status.GetCondition(v1alpha1.FunctionConditionMiddlewareUpToDate)
			var got *v1alpha1.RebuildFromStatus
			if fn.Status.Middleware != nil {
				got = fn.Status.Middleware.RebuildFrom
			}
			if c == nil || c.Reason != v1alpha1.ReasonAutoUpdateDisabled || got == nil || *got != want {
				return fmt.Sprintf("%s: MiddlewareUpToDate = %+v, rebuildFrom = %+v; want AutoUpdateDisabled and %+v", n, c, got, want)
			}
			return ""
		})
	}
	if fn := getFunction(t, ns, "deployed"); fn.Status.Deployment.Revision != a[:7] || fn.Status.Git.ObservedCommit != b {
		t.Errorf("deployed: status.deployment.revision = %q, status.git.observedCommit = %q; want %s and %s",
			fn.Status.Deployment.Revision, fn.Status.Git.ObservedCommit, a[:7], b)
	}
	if n := len(pipelineRuns(t, ns)) - 1; n > 0 { // followed may have started
		t.Errorf("%d PipelineRuns of functions with auto-update off", n)
	}
	for _, n := range []string{"deployed", "unlabelled"} {
		fn := getFunction(t, ns, n)
		fn.Spec.AutoUpdateMiddleware = ptr.To(true)
		if err := k8sClient.Update(ctx, fn); err != nil {
			t.Fatal(err)
		}
	}

	wantBuilt := map[string]string{"deployed": a, "unlabelled": b, "followed": b}
	for _, n := range names {
		eventually(t, 120*time.Second, rebuilt(t, ns, n))
	}
	runs := map[string]*pipelinev1.PipelineRun{}
	for _, pr := range pipelineRuns(t, ns) {
		runs[pr.Labels["function.knative.dev/name"]] = &pr
	}
	for _, n := range names {
		want := wantBuilt[n]
		fn := getFunction(t, ns, n)
		pr := runs[n]
		if pr == nil {
			t.Fatalf("%s: no PipelineRun", n)
		}
		// func's pipeline clones gitRevision and labels the image with commit.
		if param(pr, "gitRevision") != want || param(pr, "commit") != want || fn.Status.Build.Commit != want {
			t.Errorf("%s: PipelineRun gitRevision %s, commit %s, status.build.commit %s; want %s",
				n, param(pr, "gitRevision"), param(pr, "commit"), fn.Status.Build.Commit, want)
		}
		// func.yaml at the commit built: only B's sets PUSHED.
		if got, wantEnv := slices.Contains(arrayParam(pr, "buildEnvs"), "PUSHED=after-the-deploy"), want == b; got != wantEnv {
			t.Errorf("%s: PipelineRun buildEnvs %v: PUSHED set = %t, want %t (func.yaml at the commit built)", n, arrayParam(pr, "buildEnvs"), got, wantEnv)
		}
		// The new image says which commit it was built from, and so does the status.
		if got := imageLabel(t, fn.Status.Deployment.Image, funclib.RevisionLabel); got != want {
			t.Errorf("%s: the rebuilt image %s has revision label %q, want %s", n, fn.Status.Deployment.Image, got, want)
		}
		if got := fn.Status.Deployment.Revision; got != want {
			t.Errorf("%s: status.deployment.revision = %q after the rebuild, want %s", n, got, want)
		}
	}
	// kubectl get functions -o wide shows both.
	revisions, rebuilds := printedColumn(t, restConfig, ns, "Revision"), printedColumn(t, restConfig, ns, "Rebuilds")
	if revisions["deployed"] != a || rebuilds["deployed"] != "Deployed" || rebuilds["followed"] != "Followed" {
		t.Errorf("columns Revision %v, Rebuilds %v; want deployed at %s rebuilding the deployed commit, followed the followed one", revisions, rebuilds, a)
	}
	if fn := getFunction(t, ns, "deployed"); fn.Status.Middleware.RebuildFrom == nil || fn.Status.Middleware.RebuildFrom.Commit != a {
		t.Errorf("deployed: status.middleware.rebuildFrom = %+v, want commit %s in full, the deployed one", fn.Status.Middleware.RebuildFrom, a)
	}
}

// arrayParam returns the values of a PipelineRun's array parameter.
func arrayParam(pr *pipelinev1.PipelineRun, paramName string) []string {
	for _, p := range pr.Spec.Params {
		if p.Name == paramName {
			return p.Value.ArrayVal
		}
	}
	return nil
}

// imageLabel reads a config label of image from the test registry.
func imageLabel(t *testing.T, image, label string) string {
	t.Helper()
	ref, err := name.ParseReference(image)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(ref)
	if err != nil {
		t.Fatalf("reading %s: %v", ref, err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Config.Labels[label]
}

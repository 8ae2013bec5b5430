package funclib

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/test/envtest"
)

// TestRunPipeline_BuildObjects runs func's pipelines provider, through the proxy,
// against a real API server, for a private repository over HTTPS, and reads what it
// created: every object owned by the Function, the Tekton Hub reference replaced by
// the embedded git-clone task, the credentials in a Secret of the build bound to the
// clone task only, and owned by the Function like the others.
func TestRunPipeline_BuildObjects(t *testing.T) {
	ctx := context.Background()
	c := startBuildCluster(t)
	const ns = "builds"

	owner := metav1.OwnerReference{APIVersion: "functions.dev/v1alpha1", Kind: "Function", Name: "hello-fn", UID: "uid-1", Controller: ptrTo(true)}
	const token = "s3cr3t-t0ken"
	req := BuildRequest{
		Namespace: ns, Function: Metadata{Name: "hello", Runtime: "go", Registry: "127.0.0.1:5000/fns"},
		GitURL: "https://127.0.0.1:8443/org/private.git", Revision: strings.Repeat("a", 40), WorkDir: t.TempDir(),
		Labels: map[string]string{"functions.dev/function": "hello-fn"}, ID: "b1", Owner: owner,
		GitCredentials: &GitCredentials{Username: "git", Password: token, CABundle: []byte("-----BEGIN CERTIFICATE-----\n")},
	}
	// The operator's deployerImage reaches every func-utils step: func v0.50 has one
	// package variable per step.
	const utils = "127.0.0.1:5000/func-utils@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	defer SetDeployerImage(DeployerImage())
	SetDeployerImage(utils)
	// Every other pin too, by digest: the applied Pipeline runs no image by tag.
	defer SetGitCloneImage("")
	SetGitCloneImage(digestOf(GitCloneImage()))
	req.BuilderImage = digestOf("ghcr.io/knative/builder-jammy-tiny:v2")
	req.StepImages = StepImages{Bash: digestOf(FuncBashImage), Buildah: digestOf(FuncBuildahImage)}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- RunPipeline(runCtx, req) }()

	var runs pipelinev1.PipelineRunList
	deadline := time.Now().Add(30 * time.Second)
	for len(runs.Items) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("func created no PipelineRun within 30s")
		}
		select {
		case err := <-done:
			t.Fatalf("RunPipeline returned before its PipelineRun existed: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
		if err := c.List(ctx, &runs, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
	}
	run := runs.Items[0]
	secretName := GitSecretName("hello-fn", "b1")

	// Every object func created is the Function's.
	var pipelines pipelinev1.PipelineList
	var pvcs corev1.PersistentVolumeClaimList
	var secrets corev1.SecretList
	for _, l := range []client.ObjectList{&pipelines, &pvcs, &secrets} {
		if err := c.List(ctx, l, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
	}
	objs := make([]client.Object, 0, 1+len(pipelines.Items)+len(pvcs.Items)+len(secrets.Items))
	objs = append(objs, &run)
	for i := range pipelines.Items {
		objs = append(objs, &pipelines.Items[i])
	}
	for i := range pvcs.Items {
		objs = append(objs, &pvcs.Items[i])
	}
	secretNames := make([]string, 0, len(secrets.Items))
	for i := range secrets.Items {
		objs = append(objs, &secrets.Items[i])
		secretNames = append(secretNames, secrets.Items[i].Name)
	}
	if len(pipelines.Items) != 1 || len(pvcs.Items) != 1 || len(secrets.Items) != 2 {
		t.Fatalf("func created %d Pipelines, %d PVCs and Secrets %v; want 1, 1, and its registry Secret and %s",
			len(pipelines.Items), len(pvcs.Items), secretNames, secretName)
	}
	for _, o := range objs {
		if diff := cmp.Diff([]metav1.OwnerReference{owner}, o.GetOwnerReferences()); diff != "" {
			t.Errorf("%T %s: owner references (-want +got):\n%s", o, o.GetName(), diff)
		}
		if o.GetLabels()[LabelBuildID] != "b1" {
			t.Errorf("%T %s: labels %v, want %s=b1", o, o.GetName(), o.GetLabels(), LabelBuildID)
		}
	}

	// The Pipeline clones with the embedded task, its workspaces bound to the
	// optional credential workspaces, and resolves nothing remotely.
	p := pipelines.Items[0]
	var clone *pipelinev1.PipelineTask
	for i := range p.Spec.Tasks {
		task := &p.Spec.Tasks[i]
		if task.TaskRef != nil {
			t.Errorf("pipeline task %s refers to a task (%+v), want every task inline", task.Name, task.TaskRef)
		}
		if task.Name == cloneTaskName {
			clone = task
		}
	}
	if clone == nil || clone.TaskSpec == nil || len(clone.TaskSpec.Steps) != 1 || clone.TaskSpec.Steps[0].Name != "clone" {
		t.Fatalf("fetch-sources = %+v, want the embedded git-clone task", clone)
	}
	bound := make([]string, 0, len(clone.Workspaces))
	for _, w := range clone.Workspaces {
		bound = append(bound, w.Name+"="+w.Workspace)
	}
	wantBound := []string{"output=source-workspace", "colocate-cache=cache-workspace", "basic-auth=git-basic-auth", "ssh-directory=git-ssh-directory", "ssl-ca-directory=git-ssl-ca-directory"}
	if diff := cmp.Diff(wantBound, bound); diff != "" {
		t.Errorf("fetch-sources workspaces (-want +got):\n%s", diff)
	}
	utilsSteps := 0
	for _, task := range p.Spec.Tasks {
		for _, w := range task.Workspaces {
			if task.Name != cloneTaskName && strings.HasPrefix(w.Workspace, "git-") {
				t.Errorf("task %s binds %s: only the clone task may see the git credentials", task.Name, w.Workspace)
			}
		}
		if task.Name == cloneTaskName {
			continue
		}
		// func v0.50's build task cloned in its first step, through the bundles
		// resolver: that step is gone, and the task runs after the clone task.
		if !slices.Contains(task.RunAfter, cloneTaskName) {
			t.Errorf("task %s runs after %v, want after %s", task.Name, task.RunAfter, cloneTaskName)
		}
		for _, step := range task.TaskSpec.Steps {
			if step.Name == "func-scaffold" || step.Name == "func-deploy" {
				utilsSteps++
			}
			if (step.Name == "func-scaffold" || step.Name == "func-deploy") && step.Image != utils {
				t.Errorf("task %s: step %s runs %s, want the operator's deployerImage", task.Name, step.Name, step.Image)
			}
			if step.Ref != nil || step.Name == "fetch-src" {
				t.Errorf("task %s: step %s refers to %+v, want no StepAction (the clone moved to %s)", task.Name, step.Name, step.Ref, cloneTaskName)
			}
		}
	}
	if utilsSteps != 2 {
		t.Errorf("%d func-scaffold and func-deploy steps seen, want 2", utilsSteps)
	}
	images, err := pipelineImages(&p, &run)
	if err != nil {
		t.Fatal(err)
	}
	wantImages := []string{digestOf(FuncBashImage), req.BuilderImage, utils, digestOf("ghcr.io/tektoncd-catalog/git-clone:v1.1.0")}
	slices.Sort(wantImages)
	if diff := cmp.Diff(wantImages, images); diff != "" {
		t.Errorf("the images of the applied Pipeline and run, every one pinned (-want +got):\n%s", diff)
	}
	if names := taskNames(p.Spec.Tasks); !slices.Equal(names, []string{cloneTaskName, "build"}) {
		t.Errorf("pipeline tasks = %v, want [%s build]", names, cloneTaskName)
	}
	// The build labels the image with the commit the operator builds: func would
	// read it from the function root, which is an empty scratch directory.
	if got := paramOf(run.Spec.Params, "commit"); got != req.Revision {
		t.Errorf("the run's commit parameter = %q, want the build's revision %q", got, req.Revision)
	}

	// The run binds the credentials Secret (only the files each workspace needs), runs
	// as the build ServiceAccount, and carries no credential in its spec.
	if got := run.Spec.TaskRunTemplate.ServiceAccountName; got != "func-operator-builder" {
		t.Errorf("the run's ServiceAccount = %q, want func-operator-builder", got)
	}
	gotBindings := map[string][]string{}
	for _, w := range run.Spec.Workspaces {
		if w.Secret != nil && w.Secret.SecretName == secretName {
			for _, it := range w.Secret.Items {
				gotBindings[w.Name] = append(gotBindings[w.Name], it.Key)
			}
		}
	}
	wantBindings := map[string][]string{"git-basic-auth": {".git-credentials", ".gitconfig"}, "git-ssl-ca-directory": {"ca-bundle.crt"}}
	if diff := cmp.Diff(wantBindings, gotBindings); diff != "" {
		t.Errorf("bindings of Secret %s (-want +got):\n%s", secretName, diff)
	}
	for _, o := range []any{run.Spec, p.Spec} {
		if s := mustJSON(t, o); strings.Contains(s, token) {
			t.Errorf("the token is in a spec: %s", s)
		}
	}
	var creds corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: secretName}, &creds); err != nil {
		t.Fatal(err)
	}
	if got, want := string(creds.Data[".git-credentials"]), "https://git:"+token+"@127.0.0.1:8443\n"; got != want {
		t.Errorf(".git-credentials = %q, want %q", got, want)
	}
	if creds.Immutable == nil || !*creds.Immutable || creds.Labels[LabelGitCredentials] != "true" {
		t.Errorf("credentials Secret: immutable %v, labels %v; want immutable, labelled", creds.Immutable, creds.Labels)
	}

	// Cancelled (its Function deleted): func deletes the run, the operator its Secret.
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Error("RunPipeline of a cancelled build returned no error")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("RunPipeline did not return within 30s of its cancellation")
	}
	// The Secret is the caller's to delete (the operator does, once it records the
	// end of the build): func may return before its run ends. It is the Function's.
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: secretName}, &creds); err != nil {
		t.Errorf("the credentials Secret after RunPipeline returned: %v", err)
	} else if diff := cmp.Diff([]metav1.OwnerReference{owner}, creds.OwnerReferences); diff != "" {
		t.Errorf("the credentials Secret's owners (-want +got):\n%s", diff)
	}
	// Nothing is registered any more: func could not write for the build now.
	if _, err := registered(ns, map[string]string{LabelBuildID: "b1"}); err == nil {
		t.Error("build b1 is still registered after RunPipeline returned")
	}
}

// TestRunPipeline_SecondBuildUpdatesThePipeline runs two builds of one Function:
// func's second apply updates (PUT) the Pipeline it created first, which the proxy
// rewrites the same way; a build with no credentials binds no Secret.
func TestRunPipeline_SecondBuildUpdatesThePipeline(t *testing.T) {
	ctx := context.Background()
	c := startBuildCluster(t)
	const ns = "builds"
	owner := metav1.OwnerReference{APIVersion: "functions.dev/v1alpha1", Kind: "Function", Name: "hello-fn", UID: "uid-1"}
	for _, id := range []string{"b1", "b2"} {
		req := BuildRequest{
			Namespace: ns, Function: Metadata{Name: "hello", Runtime: "go", Registry: "127.0.0.1:5000/fns"},
			GitURL: "http://127.0.0.1:1/org/public.git", Revision: strings.Repeat("b", 40), WorkDir: t.TempDir(),
			Labels: map[string]string{"functions.dev/function": "hello-fn"}, ID: id, Owner: owner,
		}
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- RunPipeline(runCtx, req) }()
		var run *pipelinev1.PipelineRun
		for deadline := time.Now().Add(30 * time.Second); run == nil; {
			if time.Now().After(deadline) {
				cancel()
				t.Fatalf("build %s: no PipelineRun within 30s", id)
			}
			select {
			case err := <-done:
				cancel()
				t.Fatalf("build %s: RunPipeline returned before its PipelineRun existed: %v", id, err)
			case <-time.After(200 * time.Millisecond):
			}
			var runs pipelinev1.PipelineRunList
			if err := c.List(ctx, &runs, client.InNamespace(ns), client.MatchingLabels{LabelBuildID: id}); err != nil {
				t.Fatal(err)
			}
			if len(runs.Items) > 0 {
				run = &runs.Items[0]
			}
		}
		for _, w := range run.Spec.Workspaces {
			if strings.HasPrefix(w.Name, "git-") {
				t.Errorf("build %s, without credentials, binds %s", id, w.Name)
			}
		}
		var p pipelinev1.PipelineList
		if err := c.List(ctx, &p, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		if len(p.Items) != 1 || p.Items[0].Labels[LabelBuildID] != id {
			t.Fatalf("build %s: Pipelines %+v, want one, last written by this build", id, p.Items)
		}
		tasks := p.Items[0].Spec.Tasks
		if i := slices.IndexFunc(tasks, func(pt pipelinev1.PipelineTask) bool { return pt.Name == cloneTaskName }); i < 0 || tasks[i].TaskRef != nil || tasks[i].TaskSpec == nil {
			t.Errorf("build %s: the Pipeline's clone task is not the embedded one", id)
		}
		cancel()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("build %s: RunPipeline of a cancelled build returned no error", id)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("build %s: RunPipeline did not return within 30s of its cancellation", id)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

func taskNames(tasks []pipelinev1.PipelineTask) []string {
	names := make([]string, 0, len(tasks))
	for _, t := range tasks {
		names = append(names, t.Name)
	}
	return names
}

func paramOf(params pipelinev1.Params, name string) string {
	for _, p := range params {
		if p.Name == name {
			return p.Value.StringVal
		}
	}
	return ""
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// startBuildCluster starts a control plane with Tekton's CRDs, points the func library
// at it through the proxy (as the operator does, here as admin), creates namespace
// "builds", and returns an admin client.
func startBuildCluster(t *testing.T) client.Client {
	t.Helper()
	env := envtest.StartT(t, envtest.TektonCRDs)
	ctx := context.Background()
	dir, err := os.MkdirTemp(t.TempDir(), "func-library-")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(clientcmd.RecommendedConfigPathEnvVar, "/nonexistent/kubeconfig")
	cluster, err := UseCluster(ctx, env.Config, dir, func() string { return "func-operator-builder" })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Close() })
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(pipelinev1.AddToScheme(scheme))
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "builds"}}); err != nil {
		t.Fatal(err)
	}
	return c
}

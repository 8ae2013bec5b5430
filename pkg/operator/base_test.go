package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/buildpacks/lifecycle/platform"
	"github.com/buildpacks/lifecycle/platform/files"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"knative.dev/pkg/apis"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/imagedeploy"
	"github.com/fnops/func-operator/pkg/rebuild"
	"github.com/fnops/func-operator/pkg/tenancy"
	"github.com/fnops/func-operator/test/envtest"
	"github.com/fnops/func-operator/test/gitserver"
	"github.com/fnops/func-operator/test/registrytest"
)

// The read-only credentials of the private registry of TestOperator_RebasePushRefused:
// a pull-only robot account.
const registryReader, registryReaderPassword = "puller", "pw-reader-3b8d1-secret"

// baseScene is a Go function deployed from a buildpacks app image, by digest, built
// on run image <registry>/paketo/run:latest (run1), with the newest middleware (no
// rebuild is due but the base's), its source served over git.
type baseScene struct {
	ns     string
	reg    *registrytest.Registry
	srv    *gitserver.HTTPServer
	commit string
	// runTag is the run image's tag, which lifecycle's metadata names.
	runTag string
	run1   registrytest.CNBImage
	// apps are the app images func deployed, by function name.
	apps map[string]registrytest.CNBImage
}

// newBaseScene pushes run1 and, for each function of names, its app image built on
// it, to reg (which keeps blobs per repository, as distribution does), and serves the
// functions' source.
func newBaseScene(t *testing.T, ns string, reg *registrytest.Registry, names ...string) *baseScene {
	t.Helper()
	reg.ScopeBlobs()
	s := &baseScene{ns: ns, reg: reg, runTag: reg.Host + "/paketo/run:latest", apps: map[string]registrytest.CNBImage{}}
	root := gitserver.NewRepoRoot(t)
	s.srv = gitserver.StartHTTP(t, root)
	tree := map[string]string{}
	for _, n := range names {
		tree["fns/"+n+"/func.yaml"] = funcYAML(n, "go") + "registry: " + reg.Host + "/fns\nbuild:\n  builder: pack\n"
		tree["fns/"+n+"/handle.go"] = "package function\n"
	}
	s.commit = gitserver.CreateRepo(t, root, "fleet").Commit(t, "main", tree, "the fleet")
	s.run1 = reg.PushRunImage(t, s.runTag, nil)
	for _, n := range names {
		s.apps[n] = s.pushApp(t, n, "")
	}
	return s
}

// pushApp pushes function's app image, built on run1, to <registry>/fns/<function>;
// its metadata names topLayer as the run image's top layer when set (a label that lies).
func (s *baseScene) pushApp(t *testing.T, function, topLayer string) registrytest.CNBImage {
	t.Helper()
	return s.reg.PushCNBApp(t, s.reg.Host+"/fns/"+function+":latest", s.run1, registrytest.CNBApp{
		RunImage: s.runTag, TopLayer: topLayer,
		Labels: map[string]string{registrytest.MiddlewareLabel: availableGoMiddleware(t), registrytest.RevisionLabel: s.commit},
	})
}

// moveRun moves the run image's tag to run1's next version: a new top layer.
func (s *baseScene) moveRun(t *testing.T) registrytest.CNBImage {
	t.Helper()
	return s.reg.PushRunImage(t, s.runTag, &s.run1)
}

// deployKnative writes the Knative Service func's knative deployer writes for
// function, running its app image by digest.
func (s *baseScene) deployKnative(t *testing.T, function string) {
	t.Helper()
	svc := &servingv1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: function, Labels: map[string]string{"function.knative.dev/name": function}},
		Spec: servingv1.ServiceSpec{ConfigurationSpec: servingv1.ConfigurationSpec{Template: servingv1.RevisionTemplateSpec{
			Spec: servingv1.RevisionSpec{PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Image: s.apps[function].Ref}}}},
		}}},
	}
	if err := k8sClient.Create(context.Background(), svc); err != nil {
		t.Fatal(err)
	}
	// As func deploy does: it returns once Knative serves the function, so a test
	// asserting Ready afterwards does not race the first Revision's rollout.
	eventually(t, 60*time.Second, knativeServes(t, s.ns, function))
}

// createFunction creates the Function of function with base policy policy
// (annotation functions.dev/base-updates; none when empty), changed by set.
func (s *baseScene) createFunction(t *testing.T, function, policy string, set func(*v1alpha1.Function)) {
	t.Helper()
	fn := &v1alpha1.Function{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: function},
		Spec:       v1alpha1.FunctionSpec{Repository: v1alpha1.Repository{URL: s.srv.URL("fleet"), Branch: "main", Path: "fns/" + function}},
	}
	if policy != "" {
		fn.Annotations = map[string]string{v1alpha1.AnnotationBaseUpdates: policy}
	}
	if set != nil {
		set(fn)
	}
	if err := k8sClient.Create(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

// baseConfig is the operator configuration of the base tests: a check every second
// and what a base tag points to taken as read for a second (both below the
// ConfigMap's minimums: a test's own store), so that a moved tag is seen at once;
// a 2s backoff.
func baseConfig() config.Config {
	cfg := rebuildConfig(2)
	cfg.CheckInterval = time.Second
	cfg.Base.CheckInterval = time.Second
	return cfg
}

// baseCurrent returns "" once function's base is current: BaseUpToDate True,
// status.base on run.
func baseCurrent(t *testing.T, ns, function string, run registrytest.CNBImage) func() string {
	return func() string {
		fn := getFunction(t, ns, function)
		c := fn.Status.GetCondition(v1alpha1.FunctionConditionBaseUpToDate)
		if st := fn.Status.Base; c == nil || !c.IsTrue() || c.Reason != v1alpha1.ReasonBaseCurrent || st == nil || st.Current != run.Ref || st.Available != run.Ref {
			return fmt.Sprintf("BaseUpToDate = %+v, status.base = %+v; want BaseCurrent on %s", c, fn.Status.Base, run.Ref)
		}
		return ""
	}
}

// rebased returns "" once function's base update is verified: a Base build of
// method Rebase succeeded and counted (status.base.lastUpdate), the base current again.
func rebased(t *testing.T, ns, function string) func() string {
	return func() string {
		fn := getFunction(t, ns, function)
		b, st := fn.Status.Build, fn.Status.Base
		c := fn.Status.GetCondition(v1alpha1.FunctionConditionBaseUpToDate)
		if b == nil || b.Cause != v1alpha1.BuildCauseBase || b.Method != v1alpha1.BuildMethodRebase || b.Phase != v1alpha1.BuildPhaseSucceeded ||
			st == nil || st.LastUpdate == nil || c == nil || !c.IsTrue() {
			return fmt.Sprintf("build = %+v, status.base = %+v, BaseUpToDate = %+v; want a verified rebase", b, st, c)
		}
		return ""
	}
}

// servesOld fails the test unless function is as before an update: its Knative
// Service's template and its status run image, no Base build succeeded, no Rebased
// event, no PipelineRun.
func servesOld(t *testing.T, ns, function, image string) {
	t.Helper()
	svc := &servingv1.Service{}
	if err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: function}, svc); err != nil {
		t.Fatal(err)
	}
	if got := svc.Spec.Template.Spec.Containers[0].Image; got != image {
		t.Errorf("%s: the Service's template runs %s, want the old image %s", function, got, image)
	}
	fn := getFunction(t, ns, function)
	if d := fn.Status.Deployment; d == nil || d.Image != image {
		t.Errorf("%s: status.deployment = %+v, want the old image %s served", function, d, image)
	}
	if b := fn.Status.Build; b != nil && b.Phase == v1alpha1.BuildPhaseSucceeded {
		t.Errorf("%s: status.build = %+v, want no build that succeeded", function, b)
	}
	if st := fn.Status.Base; st != nil && st.LastUpdate != nil {
		t.Errorf("%s: status.base.lastUpdate = %s, want none", function, st.LastUpdate)
	}
	if ev := eventsOf(t, ns, function); len(ev["Rebased"]) != 0 {
		t.Errorf("%s: events %v, want no Rebased", function, ev)
	}
	if n := len(pipelineRuns(t, ns)); n != 0 {
		t.Errorf("%d PipelineRuns, want none: a base update is no pipeline build", n)
	}
}

// logOnFailure logs, when the test failed, what the operators logged of namespace ns.
func logOnFailure(t *testing.T, ns string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, ns) {
				t.Log(line)
			}
		}
	})
}

// holds checks check for d: a state that must last, not one passed through.
func holds(t *testing.T, d time.Duration, check func() string) {
	t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if msg := check(); msg != "" {
			t.Fatal(msg)
		}
	}
}

// fieldManagers returns the managers of obj's managedFields, with their operation.
func fieldManagers(obj metav1.Object) []string {
	out := make([]string, 0, len(obj.GetManagedFields()))
	for _, m := range obj.GetManagedFields() {
		out = append(out, m.Manager+"/"+string(m.Operation))
	}
	return out
}

// mayUpdate reports whether user (a ServiceAccount, with a token's groups) may update
// resource of group in ns, as the API server's authorizer decides.
func mayUpdate(t *testing.T, user, ns, group, resource string) bool {
	t.Helper()
	saNamespace := strings.Split(user, ":")[2]
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               user,
		Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + saNamespace, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Group: group, Resource: resource, Verb: "update"},
	}}
	if err := k8sClient.Create(context.Background(), sar); err != nil {
		t.Fatal(err)
	}
	return sar.Status.Allowed
}

// checkRebasedImage reads the rebased image from the registry and checks it is app
// on run: run's layers, then app's own, every label of app kept, lifecycle's metadata
// (read with lifecycle's types) naming run's top layer and digest.
func checkRebasedImage(t *testing.T, s *baseScene, rebasedRef string, app, run registrytest.CNBImage) {
	t.Helper()
	if !strings.HasPrefix(rebasedRef, s.reg.Host+"/fns/") || rebasedRef == app.Ref || !strings.Contains(rebasedRef, "@sha256:") {
		t.Fatalf("rebased image %s: want a new digest in the app's repository %s", rebasedRef, strings.Split(app.Ref, "@")[0])
	}
	got := s.reg.ReadCNB(t, rebasedRef) // every layer read from the app's repository
	appOwn := app.DiffIDs[len(s.run1.DiffIDs):]
	if diff := cmp.Diff(slices.Concat(run.DiffIDs, appOwn), got.DiffIDs); diff != "" {
		t.Errorf("rebased layers (-want +got):\n%s", diff)
	}
	appCfg, err := app.Image.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := got.Image.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{registrytest.MiddlewareLabel, registrytest.RevisionLabel, platform.BuildMetadataLabel} {
		if cfg.Config.Labels[k] != appCfg.Config.Labels[k] || cfg.Config.Labels[k] == "" {
			t.Errorf("label %s = %q after the rebase, want %q kept", k, cfg.Config.Labels[k], appCfg.Config.Labels[k])
		}
	}
	md, before := lifecycleMetadata(t, cfg), lifecycleMetadata(t, appCfg)
	if md.RunImage.TopLayer != run.TopLayer().String() || md.RunImage.Reference != run.Ref || md.RunImage.Image != s.runTag {
		t.Errorf("rebased metadata runImage = %+v, want topLayer %s, reference %s, image %s", md.RunImage, run.TopLayer(), run.Ref, s.runTag)
	}
	// All but the run image is the app's, as before.
	md.RunImage, before.RunImage = files.RunImageForRebase{}, files.RunImageForRebase{}
	if diff := cmp.Diff(before, md); diff != "" {
		t.Errorf("rebased metadata but runImage (-app +rebased):\n%s", diff)
	}
}

// lifecycleMetadata decodes cfg's io.buildpacks.lifecycle.metadata with lifecycle's own types.
func lifecycleMetadata(t *testing.T, cfg *v1.ConfigFile) files.LayersMetadataCompat {
	t.Helper()
	var md files.LayersMetadataCompat
	if err := json.Unmarshal([]byte(cfg.Config.Labels[platform.LifecycleMetadataLabel]), &md); err != nil {
		t.Fatalf("decoding %s: %v", platform.LifecycleMetadataLabel, err)
	}
	return md
}

// tagsOf lists the tags of repository (host/path) of a public registry.
func tagsOf(t *testing.T, repository string) []string {
	t.Helper()
	repo, err := name.NewRepository(repository)
	if err != nil {
		t.Fatal(err)
	}
	tags, err := remote.List(repo)
	if err != nil {
		t.Fatal(err)
	}
	return tags
}

// digestOf is the digest the tag ref of a public registry points to now.
func digestOf(t *testing.T, ref string) v1.Hash {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	d, err := remote.Head(r)
	if err != nil {
		t.Fatal(err)
	}
	return d.Digest
}

// TestOperator_RebaseOutdatedBase, as shipped (the operator's ServiceAccount, config/'s
// RBAC, an onboarded namespace): a function func deployed with Knative from a
// buildpacks image, whose base policy is Rebase, is on its run image until the run
// image's tag moves; then it is rebased in place, in-process, with no pipeline: the
// rebased image is pushed by digest to the function's repository (no tag), written
// into the Knative Service's template as the build ServiceAccount, and counted only
// once a ready Revision of the real Knative Serving controller serves it (its pods
// held not ready meanwhile). The
// image read back from the registry is the new run image's layers under the app's,
// with the app's labels and lifecycle's metadata naming the new top layer.
func TestOperator_RebaseOutdatedBase(t *testing.T) {
	ns := newNamespace(t)
	logOnFailure(t, ns)
	s := newBaseScene(t, ns, registrytest.Start(t), "hello")
	app := s.apps["hello"]
	// The real Knative Serving controller runs the Service; the pods of any other
	// image than the app's are held not ready while hold is set.
	var hold atomic.Bool
	holdPods(t, ns, func(p *corev1.Pod) bool { return hold.Load() && p.Spec.Containers[0].Image != app.Ref })
	addr := freeAddr(t)
	startOperatorServing(t, baseConfig(), nil, addr, ns)
	s.deployKnative(t, "hello")
	s.createFunction(t, "hello", v1alpha1.BaseUpdatesRebase, nil)

	eventually(t, 30*time.Second, baseCurrent(t, ns, "hello", s.run1))
	fn := getFunction(t, ns, "hello")
	want := v1alpha1.BaseStatus{Kind: v1alpha1.BaseKindRunImage, Image: s.runTag, Current: s.run1.Ref, Available: s.run1.Ref,
		Policy: v1alpha1.BaseUpdatesRebase, PolicySource: v1alpha1.AutoUpdateSourceAnnotation}
	got := *fn.Status.Base
	got.LastChecked = nil
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("status.base (-want +got):\n%s", diff)
	}
	if d := fn.Status.Deployment; d == nil || d.Image != app.Ref {
		t.Fatalf("status.deployment = %+v, want the Revision's resolved %s", d, app.Ref)
	}

	// The run image's tag moves. The new Revision's pods are held not ready: the
	// rebased image is deployed, but no Revision serves it yet.
	hold.Store(true)
	run2 := s.moveRun(t)
	var b *v1alpha1.BuildStatus
	eventually(t, 30*time.Second, func() string {
		fn := getFunction(t, ns, "hello")
		b = fn.Status.Build
		if b == nil || b.Phase != v1alpha1.BuildPhaseSucceeded || b.ToImage == "" {
			return fmt.Sprintf("build = %+v, BaseUpToDate = %+v; want the rebase pushed and deployed", b, fn.Status.GetCondition(v1alpha1.FunctionConditionBaseUpToDate))
		}
		return ""
	})
	if b.Cause != v1alpha1.BuildCauseBase || b.Method != v1alpha1.BuildMethodRebase || b.FromImage != app.Ref || b.PipelineRun != "" || b.Commit != s.commit {
		t.Errorf("status.build = %+v, want cause Base, method Rebase from %s, no PipelineRun, the deployed commit", b, app.Ref)
	}
	rebasedRef := b.ToImage
	// Not counted while the old Revision serves, for longer than the machine's polls.
	holds(t, 3*rebuild.PollWhileWaiting, func() string {
		fn := getFunction(t, ns, "hello")
		c := fn.Status.GetCondition(v1alpha1.FunctionConditionBaseUpToDate)
		up := fn.Status.GetCondition(v1alpha1.FunctionConditionMiddlewareUpToDate)
		if c == nil || c.Status != corev1.ConditionFalse || c.Reason != v1alpha1.ReasonBaseOutdated || fn.Status.Base.LastUpdate != nil ||
			fn.Status.Build.ID != b.ID || up == nil || !strings.Contains(up.Message, "waiting for Knative Service hello to serve it") {
			return fmt.Sprintf("before a Revision serves the rebased image: BaseUpToDate = %+v, status.base = %+v, build = %+v, MiddlewareUpToDate = %+v; "+
				"want BaseOutdated, the one build waiting", c, fn.Status.Base, fn.Status.Build, up)
		}
		return ""
	})
	svc := &servingv1.Service{}
	if err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "hello"}, svc); err != nil {
		t.Fatal(err)
	}
	if img := svc.Spec.Template.Spec.Containers[0].Image; img != rebasedRef {
		t.Fatalf("the Service's template runs %s, want the rebased %s", img, rebasedRef)
	}
	// Written by the rebase's deploy (its field manager), which the operator's own
	// ServiceAccount may not do: as the build ServiceAccount it impersonates.
	if m := fieldManagers(svc); !slices.Contains(m, imagedeploy.FieldManager+"/Update") {
		t.Errorf("the Service's managedFields name %v, want %s", m, imagedeploy.FieldManager)
	}
	if mayUpdate(t, envtest.OperatorUser, ns, "serving.knative.dev", "services") {
		t.Error("the operator's ServiceAccount may update Knative Services itself: the write proves no impersonation")
	}
	if !mayUpdate(t, imagedeploy.ServiceAccountUser(ns, "func-operator-builder"), ns, "serving.knative.dev", "services") {
		t.Error("the build ServiceAccount may not update Knative Services: the check above proves nothing")
	}
	if ev := eventsOf(t, ns, "hello"); len(ev["Rebasing"]) != 1 || !strings.Contains(ev["Rebasing"][0], "rebasing "+app.Ref+" onto its new run image") {
		t.Errorf("events %v, want one Rebasing of %s", ev, app.Ref)
	}

	// The new Revision's pods are ready: Knative serves the rebased image, the rebase counts.
	hold.Store(false)
	resyncPods()
	eventually(t, 30*time.Second, rebased(t, ns, "hello"))
	eventually(t, 10*time.Second, baseCurrent(t, ns, "hello", run2))
	fn = getFunction(t, ns, "hello")
	if fn.Status.Build.ID != b.ID || fn.Status.Deployment.Image != rebasedRef {
		t.Errorf("build %s, deployment %+v; want build %s verified serving %s", fn.Status.Build.ID, fn.Status.Deployment, b.ID, rebasedRef)
	}
	wantHistory := "Rebased onto its new run image: " + rebasedRef
	if len(fn.Status.History) == 0 || !strings.HasPrefix(fn.Status.History[0].Message, wantHistory) {
		t.Errorf("history = %+v, want %q first", fn.Status.History, wantHistory)
	}
	if !fn.Status.Base.LastUpdate.Equal(fn.Status.Build.CompletionTime) {
		t.Errorf("status.base.lastUpdate = %s, want the build's completion %s", fn.Status.Base.LastUpdate, fn.Status.Build.CompletionTime)
	}
	eventually(t, 10*time.Second, func() string {
		if ev := eventsOf(t, ns, "hello"); len(ev["Rebasing"]) != 1 || len(ev["Rebased"]) != 1 || !strings.HasPrefix(ev["Rebased"][0], wantHistory) {
			return fmt.Sprintf("events %v, want one Rebasing and one Rebased", ev)
		}
		return ""
	})
	checkRebasedImage(t, s, rebasedRef, app, run2)
	// Pushed by digest: func's tag still names the image func pushed.
	if tags := tagsOf(t, s.reg.Host+"/fns/hello"); !slices.Equal(tags, []string{"latest"}) {
		t.Errorf("tags of fns/hello = %v, want func's latest alone", tags)
	}
	if d := digestOf(t, s.reg.Host+"/fns/hello:latest"); app.Ref != s.reg.Host+"/fns/hello@"+d.String() {
		t.Errorf("fns/hello:latest moved to %s, want it on func's image %s", d, app.Ref)
	}

	eventually(t, 10*time.Second, func() string {
		m := scrape(t, addr)
		if v, _ := value(m, "func_operator_rebases_total", map[string]string{"result": "succeeded"}); v != 1 {
			return fmt.Sprintf("rebases_total{result=succeeded} = %v, want 1", v)
		}
		if v, _ := value(m, "func_operator_rebases_total", map[string]string{"result": "failed"}); v != 0 {
			return fmt.Sprintf("rebases_total{result=failed} = %v, want 0", v)
		}
		if v, _ := value(m, "func_operator_rebase_duration_seconds", nil); v != 1 {
			return fmt.Sprintf("rebase_duration_seconds count = %v, want 1", v)
		}
		if v, _ := value(m, "func_operator_rebuilds_total", map[string]string{"result": "succeeded"}); v != 0 {
			return fmt.Sprintf("rebuilds_total{result=succeeded} = %v, want 0: a rebase is no rebuild", v)
		}
		return ""
	})
	// Nothing more: the function is on its base, and nothing went through Tekton.
	time.Sleep(2 * time.Second)
	if ev := eventsOf(t, ns, "hello"); len(ev["Rebasing"]) != 1 {
		t.Errorf("events %v after the rebase, want no second Rebasing", ev)
	}
	if n := len(pipelineRuns(t, ns)); n != 0 {
		t.Errorf("%d PipelineRuns, want none", n)
	}
}

// TestOperator_RebaseOutdatedBaseRaw: the same for a function of func's raw deployer,
// its Deployment rolled by the real deployment and replicaset controllers (the
// kubelet's part simulated): the rebased image is written into the Deployment as the
// build ServiceAccount, and counted only once every replica runs it, ready.
func TestOperator_RebaseOutdatedBaseRaw(t *testing.T) {
	ns := newNamespace(t)
	logOnFailure(t, ns)
	s := newBaseScene(t, ns, registrytest.Start(t), "hello")
	app := s.apps["hello"]
	// The rebased image's pods are held not ready until released.
	var release atomic.Bool
	holdPods(t, ns, func(p *corev1.Pod) bool { return !release.Load() && p.Spec.Containers[0].Image != app.Ref })
	startOperatorWith(t, baseConfig(), ns)
	deployAsFunc(t, k8sClient, ns, "hello", app.Ref, "raw")
	eventually(t, 30*time.Second, rolledOut(k8sClient, ns, "hello", app.Ref))
	s.createFunction(t, "hello", v1alpha1.BaseUpdatesRebase, nil)
	eventually(t, 30*time.Second, baseCurrent(t, ns, "hello", s.run1))

	run2 := s.moveRun(t)
	var b *v1alpha1.BuildStatus
	eventually(t, 30*time.Second, func() string {
		b = getFunction(t, ns, "hello").Status.Build
		if b == nil || b.Phase != v1alpha1.BuildPhaseSucceeded || b.ToImage == "" {
			return fmt.Sprintf("build = %+v, want the rebase pushed and deployed", b)
		}
		return ""
	})
	if b.Cause != v1alpha1.BuildCauseBase || b.Method != v1alpha1.BuildMethodRebase || b.FromImage != app.Ref {
		t.Errorf("status.build = %+v, want cause Base, method Rebase from %s", b, app.Ref)
	}
	d := &appsv1.Deployment{}
	if err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "hello"}, d); err != nil {
		t.Fatal(err)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; img != b.ToImage {
		t.Fatalf("the Deployment runs %s, want the rebased %s", img, b.ToImage)
	}
	if m := fieldManagers(d); !slices.Contains(m, imagedeploy.FieldManager+"/Update") {
		t.Errorf("the Deployment's managedFields name %v, want %s", m, imagedeploy.FieldManager)
	}
	if mayUpdate(t, envtest.OperatorUser, ns, "apps", "deployments") {
		t.Error("the operator's ServiceAccount may update Deployments itself: the write proves no impersonation")
	}
	if !mayUpdate(t, imagedeploy.ServiceAccountUser(ns, "func-operator-builder"), ns, "apps", "deployments") {
		t.Error("the build ServiceAccount may not update Deployments: the check above proves nothing")
	}
	// The new ReplicaSet's pod is not ready: not counted, for longer than the polls.
	holds(t, 3*rebuild.PollWhileWaiting, func() string {
		fn := getFunction(t, ns, "hello")
		up := fn.Status.GetCondition(v1alpha1.FunctionConditionMiddlewareUpToDate)
		if fn.Status.Base.LastUpdate != nil || up == nil || !strings.Contains(up.Message, "waiting for Deployment hello") {
			return fmt.Sprintf("before the rollout: status.base = %+v, MiddlewareUpToDate = %+v; want the rebase waiting for the Deployment", fn.Status.Base, up)
		}
		return ""
	})
	release.Store(true)
	resyncPods()
	eventually(t, 30*time.Second, rebased(t, ns, "hello"))
	eventually(t, 10*time.Second, baseCurrent(t, ns, "hello", run2))
	eventually(t, 10*time.Second, rolledOut(k8sClient, ns, "hello", b.ToImage))
	fn := getFunction(t, ns, "hello")
	if fn.Status.Deployment.Image != b.ToImage || fn.Status.Deployment.Deployer != v1alpha1.DeployerRaw {
		t.Errorf("status.deployment = %+v, want raw serving %s", fn.Status.Deployment, b.ToImage)
	}
	eventually(t, 10*time.Second, func() string {
		if ev := eventsOf(t, ns, "hello"); len(ev["Rebasing"]) != 1 || len(ev["Rebased"]) != 1 {
			return fmt.Sprintf("events %v, want one Rebasing and one Rebased", ev)
		}
		return ""
	})
	checkRebasedImage(t, s, b.ToImage, app, run2)
	if n := len(pipelineRuns(t, ns)); n != 0 {
		t.Errorf("%d PipelineRuns, want none", n)
	}
}

// startBaseOperator runs an operator watching ns
// (baseConfig, changed by set when not nil), serving metrics on the address it returns.
func startBaseOperator(t *testing.T, ns string, set func(*config.Config)) (metricsAddr string) {
	t.Helper()
	cfg := baseConfig()
	if set != nil {
		set(&cfg)
	}
	metricsAddr = freeAddr(t)
	startOperatorServing(t, cfg, nil, metricsAddr, ns)
	return metricsAddr
}

// writesTo returns the write requests (not GET or HEAD) to repository (a path of the
// registry) in log, by status.
func writesTo(log []registrytest.Logged, repository string) map[int]int {
	out := map[int]int{}
	for _, l := range log {
		if strings.HasPrefix(l.Path, "/v2/"+repository+"/") && l.Method != "GET" && l.Method != "HEAD" {
			out[l.Status]++
		}
	}
	return out
}

// noBaseUpdate checks for a few seconds, longer than the operator's check interval,
// that function name is not updated: BaseUpToDate keeps status and reason, no build
// starts, and the function serves image as before.
func noBaseUpdate(t *testing.T, ns, function, image string, status corev1.ConditionStatus, reason string) {
	t.Helper()
	holds(t, 3*time.Second, func() string {
		fn := getFunction(t, ns, function)
		c := fn.Status.GetCondition(v1alpha1.FunctionConditionBaseUpToDate)
		if c == nil || c.Status != status || c.Reason != reason || fn.Status.Build != nil {
			return fmt.Sprintf("%s: BaseUpToDate = %+v, build = %+v; want %s/%s and no build", function, c, fn.Status.Build, status, reason)
		}
		return ""
	})
	servesOld(t, ns, function, image)
	if ev := eventsOf(t, ns, function); len(ev["Rebasing"]) != 0 {
		t.Errorf("%s: events %v, want no Rebasing", function, ev)
	}
}

// TestOperator_BaseUnreachableNotRebased: the run image's tag moves to a manifest the
// registry no longer holds (deleted by digest, a garbage collection's leftover): the
// base cannot be read, BaseUpToDate says so (Unknown, BaseUnreachable) and nothing is
// rebased, let alone onto an empty image. Once the manifest is back, the same scene
// rebases (the positive control).
func TestOperator_BaseUnreachableNotRebased(t *testing.T) {
	ns := newNamespace(t)
	logOnFailure(t, ns)
	s := newBaseScene(t, ns, registrytest.Start(t), "hello")
	app := s.apps["hello"]
	startBaseOperator(t, ns, nil)
	s.deployKnative(t, "hello")
	s.createFunction(t, "hello", v1alpha1.BaseUpdatesRebase, nil)
	eventually(t, 30*time.Second, baseCurrent(t, ns, "hello", s.run1))

	run2 := s.moveRun(t)
	s.reg.DeleteManifest(t, run2.Ref) // the tag names it; its manifest is gone
	eventually(t, 20*time.Second, condition(ns, "hello", v1alpha1.FunctionConditionBaseUpToDate, corev1.ConditionUnknown, v1alpha1.ReasonBaseUnreachable))
	fn := getFunction(t, ns, "hello")
	if c := fn.Status.GetCondition(v1alpha1.FunctionConditionBaseUpToDate); !strings.Contains(c.Message, "the base "+s.runTag+" of the running image cannot be read") {
		t.Errorf("BaseUpToDate message %q does not name the base that cannot be read", c.Message)
	}
	if st := fn.Status.Base; st.Available != "" {
		t.Errorf("status.base.available = %q, want none: the tag's manifest cannot be read", st.Available)
	}
	noBaseUpdate(t, ns, "hello", app.Ref, corev1.ConditionUnknown, v1alpha1.ReasonBaseUnreachable)

	// The manifest is back: the same function is rebased onto it.
	s.reg.PushCNB(t, run2.Ref, run2.Image)
	eventually(t, 30*time.Second, rebased(t, ns, "hello"))
	eventually(t, 10*time.Second, baseCurrent(t, ns, "hello", run2))
	checkRebasedImage(t, s, getFunction(t, ns, "hello").Status.Build.ToImage, app, run2)
}

// TestOperator_BaseLabelInvalidNotRebased: an image whose lifecycle metadata names a
// run image top layer the image does not hold (a label that lies) has a base that
// cannot be told: BaseUpToDate Unknown BaseLabelInvalid, and it is never rebased, not
// when the run image moves either. A function of the same scene with a true label is
// rebased (the positive control).
func TestOperator_BaseLabelInvalidNotRebased(t *testing.T) {
	ns := newNamespace(t)
	logOnFailure(t, ns)
	s := newBaseScene(t, ns, registrytest.Start(t), "liar", "honest")
	lie := v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("0f", 32)}
	s.apps["liar"] = s.pushApp(t, "liar", lie.String())
	startBaseOperator(t, ns, nil)
	for _, n := range []string{"liar", "honest"} {
		s.deployKnative(t, n)
		s.createFunction(t, n, v1alpha1.BaseUpdatesRebase, nil)
	}
	eventually(t, 30*time.Second, baseCurrent(t, ns, "honest", s.run1))
	eventually(t, 30*time.Second, condition(ns, "liar", v1alpha1.FunctionConditionBaseUpToDate, corev1.ConditionUnknown, v1alpha1.ReasonBaseLabelInvalid))
	fn := getFunction(t, ns, "liar")
	if c := fn.Status.GetCondition(v1alpha1.FunctionConditionBaseUpToDate); !strings.Contains(c.Message, "names run image top layer "+lie.String()+", which is not a layer of the image") ||
		c.Severity != "Warning" {
		t.Errorf("BaseUpToDate = %+v, want a Warning naming the top layer the image does not hold", c)
	}
	if st := fn.Status.Base; st.Current != "" || st.Available != "" {
		t.Errorf("status.base = %+v, want no base guessed", st)
	}

	before := len(s.reg.Log())
	run2 := s.moveRun(t)
	eventually(t, 30*time.Second, rebased(t, ns, "honest"))
	eventually(t, 10*time.Second, baseCurrent(t, ns, "honest", run2))
	noBaseUpdate(t, ns, "liar", s.apps["liar"].Ref, corev1.ConditionUnknown, v1alpha1.ReasonBaseLabelInvalid)
	if w := writesTo(s.reg.Log()[before:], "fns/liar"); len(w) != 0 {
		t.Errorf("writes to fns/liar since the tag moved, by status: %v, want none", w)
	}
	if w := writesTo(s.reg.Log()[before:], "fns/honest"); w[http.StatusCreated] == 0 {
		t.Errorf("writes to fns/honest since the tag moved, by status: %v, want the rebased image's (the check above sees writes)", w)
	}
}

// TestOperator_RebasePushRefused: the Function's registry Secret holds pull-only
// credentials (the registry answers their writes 403 DENIED). The rebase reads the
// app and run images, and the push is refused: the build fails saying so, with an
// Event and a backoff, counted as a failed rebase; nothing is deployed, the old image
// serves on, and no credential shows. Once the Secret holds credentials that may
// push, the same rebase succeeds (the positive control).
func TestOperator_RebasePushRefused(t *testing.T) {
	ns := newNamespace(t)
	logOnFailure(t, ns)
	reg := registrytest.StartPrivate(t, registryUser, registryPassword)
	reg.AddReader(registryReader, registryReaderPassword)
	s := newBaseScene(t, ns, reg, "hello")
	app := s.apps["hello"]
	readOnly := []byte(`{"auths":{"` + reg.Host + `":{"auth":"` + base64Auth(registryReader, registryReaderPassword) + `"}}}`)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "registry"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: readOnly},
	}
	if err := k8sClient.Create(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	const backoff = 3 * time.Second
	addr := startBaseOperator(t, ns, func(c *config.Config) { c.BuildBackoff = backoff })
	s.deployKnative(t, "hello")
	s.createFunction(t, "hello", v1alpha1.BaseUpdatesRebase, func(fn *v1alpha1.Function) {
		fn.Spec.Registry.AuthSecretRef = &corev1.LocalObjectReference{Name: "registry"}
	})
	eventually(t, 30*time.Second, baseCurrent(t, ns, "hello", s.run1)) // the reader reads
	before := len(reg.Log())

	s.moveRun(t)
	var fn *v1alpha1.Function
	eventually(t, 30*time.Second, func() string {
		fn = getFunction(t, ns, "hello")
		if b := fn.Status.Build; b == nil || b.Phase != v1alpha1.BuildPhaseFailed || b.Failures != 1 {
			return fmt.Sprintf("build = %+v, want the rebase failed once", b)
		}
		return ""
	})
	// Within the backoff: what the first failure left.
	b := fn.Status.Build
	if b.Cause != v1alpha1.BuildCauseBase || b.Method != v1alpha1.BuildMethodRebase || b.ToImage != "" ||
		!strings.Contains(b.Message, "pushing the rebased image to "+reg.Host+"/fns/hello") || !strings.Contains(b.Message, "403") {
		t.Errorf("status.build = %+v, want a Base rebase failed naming the refused push to %s/fns/hello", b, reg.Host)
	}
	if b.RetryAfter == nil || b.RetryAfter.Sub(b.CompletionTime.Time) != backoff {
		t.Errorf("retryAfter %v after completion %v, want the %s backoff", b.RetryAfter, b.CompletionTime, backoff)
	}
	if c := fn.Status.GetCondition(v1alpha1.FunctionConditionMiddlewareUpToDate); c == nil || c.Reason != v1alpha1.ReasonBuildFailed ||
		!strings.Contains(c.Message, "the running revision keeps serving") {
		t.Errorf("MiddlewareUpToDate = %+v, want BuildFailed, the old revision serving", c)
	}
	// Counted and told once the status is written: soon after, well within the backoff.
	eventually(t, backoff/2, func() string {
		m := scrape(t, addr)
		if v, _ := value(m, "func_operator_rebases_total", map[string]string{"result": "failed"}); v != 1 {
			return fmt.Sprintf("rebases_total{result=failed} = %v, want 1", v)
		}
		if v, _ := value(m, "func_operator_rebases_total", map[string]string{"result": "succeeded"}); v != 0 {
			return fmt.Sprintf("rebases_total{result=succeeded} = %v, want 0", v)
		}
		if ev := eventsOf(t, ns, "hello"); len(ev["BuildFailed"]) != 1 || !strings.Contains(ev["BuildFailed"][0], "pushing the rebased image") {
			return fmt.Sprintf("events %v, want one BuildFailed naming the refused push", ev)
		}
		return ""
	})
	servesOld(t, ns, "hello", app.Ref)
	svc := &servingv1.Service{}
	if err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "hello"}, svc); err != nil {
		t.Fatal(err)
	}
	if m := fieldManagers(svc); slices.Contains(m, imagedeploy.FieldManager+"/Update") {
		t.Errorf("the Service's managedFields name %v: a rebase that was not pushed deployed", m)
	}
	if w := writesTo(reg.Log()[before:], "fns/hello"); len(w) != 1 || w[http.StatusForbidden] == 0 {
		t.Errorf("writes to fns/hello by status since the tag moved: %v, want refused ones alone", w)
	}
	status, _ := json.Marshal(getFunction(t, ns, "hello").Status)
	for _, leak := range []string{registryReaderPassword, base64Auth(registryReader, registryReaderPassword), registryPassword} {
		if strings.Contains(string(status), leak) {
			t.Error("the status holds a registry credential")
		}
		for _, msgs := range eventsOf(t, ns, "hello") {
			for _, msg := range msgs {
				if strings.Contains(msg, leak) {
					t.Error("an event holds a registry credential")
				}
			}
		}
	}

	// Credentials that may push: the next retry rebases.
	secret.Data[corev1.DockerConfigJsonKey] = reg.DockerConfigJSON()
	if err := k8sClient.Update(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, rebased(t, ns, "hello"))
	eventually(t, 10*time.Second, func() string {
		m := scrape(t, addr)
		if v, _ := value(m, "func_operator_rebases_total", map[string]string{"result": "succeeded"}); v != 1 {
			return fmt.Sprintf("rebases_total{result=succeeded} = %v, want 1", v)
		}
		return ""
	})
}

// TestOperator_RebaseNamespaceNotOnboarded: a namespace onboarded before the operator
// could rebase (its RoleBinding grants ClusterRole func-operator-namespace's rules
// but impersonation of the build ServiceAccount, as an older release's did) gets no
// rebase: nothing is pushed nor deployed, and BaseUpToDate says NamespaceNotOnboarded
// (severity Warning: a base update that cannot start does not gate Ready), naming the
// missing right and how to grant it. Once the
// namespace applies config/namespace/onboard.yaml again, the same function is rebased
// (the positive control), as the build ServiceAccount.
func TestOperator_RebaseNamespaceNotOnboarded(t *testing.T) {
	ns := newNamespace(t)
	logOnFailure(t, ns)
	grantAllButImpersonation(t, ns)
	s := newBaseScene(t, ns, registrytest.Start(t), "hello")
	app := s.apps["hello"]
	startBaseOperator(t, ns, nil)
	s.deployKnative(t, "hello")
	s.createFunction(t, "hello", v1alpha1.BaseUpdatesRebase, nil)
	eventually(t, 30*time.Second, baseCurrent(t, ns, "hello", s.run1))
	before := len(s.reg.Log())

	s.moveRun(t)
	want := "the operator may not impersonate serviceaccounts named func-operator-builder (ClusterRole func-operator-namespace, RoleBinding func-operator-namespace); " +
		"a namespace admin grants it with `kubectl apply -n " + ns + " -f config/namespace/onboard.yaml`"
	eventually(t, 30*time.Second, func() string {
		c := getFunction(t, ns, "hello").Status.GetCondition(v1alpha1.FunctionConditionBaseUpToDate)
		if c == nil || c.Reason != v1alpha1.ReasonNamespaceNotOnboarded || c.Severity != apis.ConditionSeverityWarning || !strings.Contains(c.Message, want) {
			return fmt.Sprintf("BaseUpToDate = %+v, want %s (Warning) saying %q", c, v1alpha1.ReasonNamespaceNotOnboarded, want)
		}
		return ""
	})
	holds(t, 3*time.Second, func() string {
		fn := getFunction(t, ns, "hello")
		c := fn.Status.GetCondition(v1alpha1.FunctionConditionBaseUpToDate)
		if fn.Status.Build != nil || c.Reason != v1alpha1.ReasonNamespaceNotOnboarded {
			return fmt.Sprintf("build = %+v, BaseUpToDate = %+v; want no build, NamespaceNotOnboarded", fn.Status.Build, c)
		}
		if mw := fn.Status.GetCondition(v1alpha1.FunctionConditionMiddlewareUpToDate); mw == nil || mw.Reason == v1alpha1.ReasonNamespaceNotOnboarded {
			return fmt.Sprintf("MiddlewareUpToDate = %+v: the middleware is current, the refused rebase is not its", mw)
		}
		if r := fn.Status.GetCondition(v1alpha1.FunctionConditionReady); r == nil || !r.IsTrue() {
			return fmt.Sprintf("Ready = %+v: a base update that cannot start does not gate Ready", r)
		}
		return ""
	})
	servesOld(t, ns, "hello", app.Ref)
	if w := writesTo(s.reg.Log()[before:], "fns/hello"); len(w) != 0 {
		t.Errorf("writes to fns/hello since the tag moved: %v, want none: nothing is pushed that cannot be deployed", w)
	}

	if err := envtest.Onboard(context.Background(), restConfig, ns); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, rebased(t, ns, "hello"))
	svc := &servingv1.Service{}
	if err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "hello"}, svc); err != nil {
		t.Fatal(err)
	}
	if m := fieldManagers(svc); !slices.Contains(m, imagedeploy.FieldManager+"/Update") {
		t.Errorf("the Service's managedFields name %v, want %s", m, imagedeploy.FieldManager)
	}
}

// grantAllButImpersonation replaces, in onboarded namespace ns, the operator's
// RoleBinding func-operator-namespace with one to a Role of ClusterRole
// func-operator-namespace's rules but impersonation: what a pipeline build needs,
// not a rebase.
func grantAllButImpersonation(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	cr := &rbacv1.ClusterRole{}
	if err := k8sClient.Get(ctx, types.NamespacedName{Name: tenancy.NamespaceClusterRole}, cr); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "func-operator-namespace-before-rebase"}}
	for _, r := range cr.Rules {
		if !slices.Contains(r.Verbs, "impersonate") {
			role.Rules = append(role.Rules, r)
		}
	}
	if len(role.Rules) != len(cr.Rules)-1 {
		t.Fatalf("ClusterRole %s has %d rules, %d without impersonate; want exactly one impersonate rule", cr.Name, len(cr.Rules), len(role.Rules))
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: role.ObjectMeta,
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "func-operator", Name: "func-operator"}},
	}
	for _, o := range []client.Object{role, binding} {
		if err := k8sClient.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	if err := k8sClient.Delete(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tenancy.NamespaceClusterRole}}); err != nil {
		t.Fatal(err)
	}
}

// TestOperator_BaseReportOnly: with the base policy Report, the ConfigMap's default
// or set by the annotation, a moved run image is reported (BaseUpToDate False
// BaseReportOnly, status.base current and available) and nothing else happens. The
// annotation set to Rebase then rebases that function (the positive control); the
// other stays reported.
func TestOperator_BaseReportOnly(t *testing.T) {
	ns := newNamespace(t)
	logOnFailure(t, ns)
	s := newBaseScene(t, ns, registrytest.Start(t), "implicit", "explicit")
	startBaseOperator(t, ns, nil)
	for _, n := range []string{"implicit", "explicit"} {
		s.deployKnative(t, n)
	}
	s.createFunction(t, "implicit", "", nil)
	s.createFunction(t, "explicit", v1alpha1.BaseUpdatesReport, nil)
	for _, n := range []string{"implicit", "explicit"} {
		eventually(t, 30*time.Second, baseCurrent(t, ns, n, s.run1))
	}

	run2 := s.moveRun(t)
	for n, source := range map[string]string{"implicit": v1alpha1.AutoUpdateSourceOperatorConfig, "explicit": v1alpha1.AutoUpdateSourceAnnotation} {
		eventually(t, 20*time.Second, condition(ns, n, v1alpha1.FunctionConditionBaseUpToDate, corev1.ConditionFalse, v1alpha1.ReasonBaseReportOnly))
		fn := getFunction(t, ns, n)
		if st := fn.Status.Base; st.Current != s.run1.Ref || st.Available != run2.Ref || st.Policy != v1alpha1.BaseUpdatesReport || st.PolicySource != source {
			t.Errorf("%s: status.base = %+v, want on %s, %s available, policy Report set by %s", n, st, s.run1.Ref, run2.Ref, source)
		}
		if c := fn.Status.GetCondition(v1alpha1.FunctionConditionBaseUpToDate); !strings.Contains(c.Message, "reports it only: with Rebase or RebaseAndRebuild it would be rebased onto it in place") {
			t.Errorf("%s: BaseUpToDate message %q does not say what Rebase would do", n, c.Message)
		}
	}
	for _, n := range []string{"implicit", "explicit"} {
		noBaseUpdate(t, ns, n, s.apps[n].Ref, corev1.ConditionFalse, v1alpha1.ReasonBaseReportOnly)
	}

	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.AnnotationBaseUpdates, v1alpha1.BaseUpdatesRebase)
	if err := k8sClient.Patch(context.Background(), &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "explicit"}},
		client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, rebased(t, ns, "explicit"))
	eventually(t, 10*time.Second, baseCurrent(t, ns, "explicit", run2))
	noBaseUpdate(t, ns, "implicit", s.apps["implicit"].Ref, corev1.ConditionFalse, v1alpha1.ReasonBaseReportOnly)
}

package function

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"
	"sigs.k8s.io/yaml"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/netguard"
	"github.com/fnops/func-operator/pkg/reconciler/function/resources"
	"github.com/fnops/func-operator/test/envtest"
)

// tenantRun is a PipelineRun as anyone who may create one can write it, labelled
// and owned as the operator's builds are, as Tekton reports it.
const tenantRun = `
apiVersion: tekton.dev/v1
kind: PipelineRun
metadata:
  name: hello-build-1
  namespace: team-a
  uid: pr1
  resourceVersion: "5"
  creationTimestamp: "2026-11-20T09:00:00Z"
  labels:
    app.kubernetes.io/managed-by: func-operator
    functions.dev/function: hello
    functions.dev/build-id: b1
    functions.dev/service-uid: s1
    team: a
  annotations: {note: small}
  ownerReferences:
  - {apiVersion: functions.dev/v1alpha1, kind: Function, name: hello, uid: f1, controller: true}
  - {apiVersion: v1, kind: ConfigMap, name: other, uid: c1}
spec:
  pipelineRef: {name: hello-pipeline}
  params: [{name: big, value: small}]
status:
  startTime: "2026-11-20T09:00:01Z"
  completionTime: "2026-11-20T09:03:00Z"
  conditions:
  - {type: Succeeded, status: "False", reason: Failed, message: "Tasks Completed: 1 (Failed: 1)"}
  childReferences:
  - {apiVersion: tekton.dev/v1, kind: TaskRun, name: hello-build-1-build, pipelineTaskName: build}
  - {apiVersion: tekton.dev/v1beta1, kind: CustomRun, name: hello-build-1-wait, pipelineTaskName: wait}
  results: [{name: big, value: small}]
`

// TestSlimPipelineRun: a run is kept as what the reconciler reads of a build's run,
// each text bounded, however large its params, results and copied Pipeline.
func TestSlimPipelineRun(t *testing.T) {
	var pr pipelinev1.PipelineRun
	if err := yaml.Unmarshal([]byte(tenantRun), &pr); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 1400<<10)
	pr.Spec.Params[0].Value = *pipelinev1.NewStructuredValues(big)
	pr.Annotations["note"] = big
	pr.Status.Results[0].Value = *pipelinev1.NewStructuredValues(big)
	pr.Status.PipelineSpec = &pipelinev1.PipelineSpec{Description: big}
	pr.Status.Conditions[0].Message += big
	for i := 0; i < 1000; i++ {
		pr.OwnerReferences = append(pr.OwnerReferences, metav1.OwnerReference{APIVersion: "functions.dev/v1alpha1", Kind: "Function", Name: "x", UID: "u"})
		pr.Status.ChildReferences = append(pr.Status.ChildReferences, pipelinev1.ChildStatusReference{Name: "many", PipelineTaskName: "t",
			TypeMeta: runtimeType("TaskRun")})
	}
	got, err := SlimPipelineRun(&pr)
	if err != nil {
		t.Fatal(err)
	}
	ts := func(s string) *metav1.Time { v, _ := time.Parse(time.RFC3339, s); return &metav1.Time{Time: v} }
	want := &pipelinev1.PipelineRun{
		TypeMeta: pr.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: "hello-build-1", Namespace: "team-a", UID: "pr1", ResourceVersion: "5",
			CreationTimestamp: *ts("2026-11-20T09:00:00Z"),
			Labels: map[string]string{"app.kubernetes.io/managed-by": "func-operator", "functions.dev/function": "hello",
				"functions.dev/build-id": "b1", "functions.dev/service-uid": "s1"},
			OwnerReferences: []metav1.OwnerReference{pr.OwnerReferences[0], pr.OwnerReferences[2]},
		},
		Status: pipelinev1.PipelineRunStatus{
			Status: duckv1.Status{Conditions: duckv1.Conditions{{Type: apis.ConditionSucceeded, Status: corev1.ConditionFalse, Reason: "Failed",
				Message: netguard.CapText(pr.Status.Conditions[0].Message, maxCachedText)}}},
			PipelineRunStatusFields: pipelinev1.PipelineRunStatusFields{StartTime: ts("2026-11-20T09:00:01Z"), CompletionTime: ts("2026-11-20T09:03:00Z"),
				ChildReferences: append([]pipelinev1.ChildStatusReference{pr.Status.ChildReferences[0]}, pr.Status.ChildReferences[2:2+maxCachedChildren-1]...)},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SlimPipelineRun (-want +got):\n%s", diff)
	}
	slimBound(t, "PipelineRun", &pr, got, 4<<10)
	// What the reconciler asks of a run still answers the same.
	if s := got.(*pipelinev1.PipelineRun); !s.IsDone() || !resources.ControlledBy(s, &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{UID: "f1"}}) {
		t.Errorf("slim run: done %t, controlled by f1 %t; want both", s.IsDone(), resources.ControlledBy(s, &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{UID: "f1"}}))
	}
	// The positive control: another kind keeps its annotations (managedFields go).
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"a": "b"}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}}}
	if o, _ := SlimPipelineRun(cm); o.(*corev1.ConfigMap).Annotations["a"] != "b" || o.(*corev1.ConfigMap).ManagedFields != nil {
		t.Errorf("SlimPipelineRun of a ConfigMap: %+v, want its annotations without managedFields", o)
	}
}

// TestSlimFunction: a Function keeps the settings the operator reads, each value cut;
// a cut setting is reported invalid, never read as another value.
func TestSlimFunction(t *testing.T) {
	big := strings.Repeat("x", 200<<10)
	fn := &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "team-a",
		Labels: map[string]string{"team": big[:63]},
		Annotations: map[string]string{"note": big, v1alpha1.AnnotationSuspend: "true",
			v1alpha1.AnnotationBuildHistoryLimit: "5" + big, v1alpha1.AnnotationLastDeployed: "2026-11-20T09:00:00Z"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: big}}},
		Spec: v1alpha1.FunctionSpec{Repository: v1alpha1.Repository{URL: "http://127.0.0.1/r.git"}}}
	got, err := SlimFunction(fn.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	want := fn.DeepCopy()
	want.Labels, want.ManagedFields = nil, nil
	want.Annotations = map[string]string{v1alpha1.AnnotationSuspend: "true",
		v1alpha1.AnnotationBuildHistoryLimit: netguard.CapText("5"+big, maxCachedText), v1alpha1.AnnotationLastDeployed: "2026-11-20T09:00:00Z"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SlimFunction (-want +got):\n%s", diff)
	}
	slimBound(t, "Function", fn, got, 2<<10)
	s := got.(*v1alpha1.Function).Settings()
	if !s.Suspend || len(s.Invalid) != 1 || !strings.Contains(s.Invalid[0], v1alpha1.AnnotationBuildHistoryLimit) {
		t.Errorf("settings of the slim Function: suspend %t, invalid %v; want suspended, the cut build history limit invalid", s.Suspend, s.Invalid)
	}
}

// TestSlimFunction_KeepsEveryAnnotation: every annotation api/v1alpha1 names is kept,
// so that a setting added there is not dropped by the cache, found in the source.
func TestSlimFunction_KeepsEveryAnnotation(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(envtest.RepoRoot(), "api", "v1alpha1", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok || len(vs.Values) != len(vs.Names) {
				return true
			}
			for i, name := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING || !strings.HasPrefix(name.Name, "Annotation") {
					continue
				}
				if v, err := strconv.Unquote(lit.Value); err == nil {
					named[name.Name] = v
				}
			}
			return true
		})
	}
	if len(named) < 5 {
		t.Fatalf("found %d annotation constants in api/v1alpha1, want the operator's settings at least: %v", len(named), named)
	}
	for name, key := range named {
		fn := &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{key: "v"}}}
		got, _ := SlimFunction(fn)
		if got.(*v1alpha1.Function).Annotations[key] != "v" {
			t.Errorf("v1alpha1.%s (%s) is dropped by the cache's SlimFunction: add it to keptFunctionAnnotations", name, key)
		}
	}
}

func runtimeType(kind string) runtime.TypeMeta {
	return runtime.TypeMeta{APIVersion: "tekton.dev/v1", Kind: kind}
}

// slimBound checks that slim encodes in at most max bytes, against an original of
// more than 200 KiB.
func slimBound(t *testing.T, kind string, orig, slim any, max int) {
	t.Helper()
	before, err := json.Marshal(orig)
	if err != nil {
		t.Fatal(err)
	}
	after, err := json.Marshal(slim)
	if err != nil {
		t.Fatal(err)
	}
	if len(before) < 200<<10 || len(after) > max {
		t.Errorf("%s: %d bytes stored, %d cached; want more than 200 KiB stored (the control), at most %d cached", kind, len(before), len(after), max)
	}
	t.Logf("%s: %d bytes stored, %d cached", kind, len(before), len(after))
}

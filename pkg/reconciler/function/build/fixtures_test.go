package build

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/rebuild"
	"github.com/fnops/func-operator/pkg/reconciler/function/resources"
)

// newFakeClient is controller-runtime's fake client with the kinds a build touches,
// their status subresources, and objs.
func newFakeClient(t *testing.T, objs ...client.Object) client.WithWatch {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, pipelinev1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return fake.NewClientBuilder().WithScheme(s).
		WithStatusSubresource(&v1alpha1.Function{}, &pipelinev1.PipelineRun{}, &pipelinev1.TaskRun{}).
		WithObjects(objs...).Build()
}

// newTestReconciler is a build sub-reconciler on c that rebuilds: a seeded queue of
// budget 2, and a launcher that returns at once.
func newTestReconciler(t *testing.T, c client.Client) *Reconciler {
	t.Helper()
	store := config.NewStore()
	return New(Deps{Client: c, APIReader: c, Recorder: record.NewFakeRecorder(100), Config: store, Builds: &rebuild.Builds{
		Queue:    rebuild.NewQueue(func() int { return store.Load().MaxConcurrentBuilds }, nil),
		Launcher: rebuild.NewLauncher(func(context.Context, funclib.BuildRequest) error { return nil }, nil, logr.Discard()),
		Tekton:   true,
		WorkDir:  t.TempDir(),
	}})
}

// labelledGitCredentials simulates the namespace's Secret watch (tenancy.Secrets) on
// the fake client: the git credentials Secrets of a Function, by metadata.
type labelledGitCredentials struct{ c client.Client }

func (l labelledGitCredentials) GitCredentials(namespace, name string) []*metav1.PartialObjectMetadata {
	var list metav1.PartialObjectMetadataList
	list.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("SecretList"))
	list.APIVersion = "v1"
	if err := l.c.List(context.Background(), &list, client.InNamespace(namespace),
		client.MatchingLabels{funclib.LabelGitCredentials: "true", resources.LabelFunction: name}); err != nil {
		panic(err)
	}
	out := make([]*metav1.PartialObjectMetadata, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out
}

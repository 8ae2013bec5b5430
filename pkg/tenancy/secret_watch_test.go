package tenancy

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/reconciler/function/resources"
	"github.com/fnops/func-operator/test/envtest"
)

// TestSecretWatches, as the operator: in a namespace that onboarded it, a Secret
// change after the watch starts is reported (the first list too); in one that did
// not, the refused watch ends instead of retrying forever, and Stop ends one.
func TestSecretWatches(t *testing.T) {
	apiServer(t)
	mc, err := metadata.NewForConfig(envtest.AsOperator(restConfig))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string
	w := &SecretWatches{Client: mc, OnChange: func(_ context.Context, s client.Object) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, s.GetNamespace()+"/"+s.GetName())
	}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	onboarded, bare := newNamespace(t), newBareNamespace(t)
	mustCreate(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: onboarded, Name: "before"}})
	w.Ensure(onboarded) // before Start: started with it
	go func() { _ = w.Start(ctx) }()
	saw := func(key string) bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(seen, key)
	}
	envtest.Until(t, "the Secret that was there when the watch started", func() bool { return saw(onboarded + "/before") })
	mustCreate(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: onboarded, Name: "after"}})
	envtest.Until(t, "a Secret made after the watch started", func() bool { return saw(onboarded + "/after") })

	w.Ensure(bare)
	envtest.Until(t, "the refused watch ends", func() bool { return !w.Watching(bare) })
	if !w.Watching(onboarded) {
		t.Error("the onboarded namespace's watch ended too")
	}
	w.Stop(onboarded)
	if w.Watching(onboarded) {
		t.Error("Stop left the watch")
	}
}

// TestSecretWatches_KeepNoValues: a Secret made with kubectl apply carries its data
// in an annotation, and managedFields name its keys; the namespace's watch keeps
// neither, nor labels it does not read. The positive control: the same watch still
// tells the Secret's resourceVersion and finds a build's git credentials by label.
func TestSecretWatches_KeepNoValues(t *testing.T) {
	apiServer(t)
	mc, err := metadata.NewForConfig(envtest.AsOperator(restConfig))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &SecretWatches{Client: mc, OnChange: func(context.Context, client.Object) {}}
	go func() { _ = w.Start(ctx) }()
	ns := newNamespace(t)
	const value = "hunter2-the-secret-value"
	applied := `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"applied","namespace":"` + ns +
		`"},"stringData":{"password":"` + value + `"}}`
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "applied",
		Annotations: map[string]string{corev1.LastAppliedConfigAnnotation: applied},
		Labels: map[string]string{"team": value, funclib.LabelGitCredentials: "true", resources.LabelFunction: "fn",
			resources.LabelBuildID: "b1"}},
		StringData: map[string]string{"password": value}}
	mustCreate(t, s)
	w.Ensure(ns)
	envtest.Until(t, "the watch sees the Secret", func() bool { return len(w.GitCredentials(ns, "fn")) == 1 })

	got := w.GitCredentials(ns, "fn")[0]
	if v, known := w.Version(ns, "applied"); !known || v != s.ResourceVersion {
		t.Errorf("Version = %q, %v; want %q, true", v, known, s.ResourceVersion)
	}
	want := map[string]string{funclib.LabelGitCredentials: "true", resources.LabelFunction: "fn", resources.LabelBuildID: "b1"}
	if diff := cmp.Diff(want, got.Labels); diff != "" {
		t.Errorf("labels kept (-want +got):\n%s", diff)
	}
	if got.Annotations != nil || got.ManagedFields != nil {
		t.Errorf("the watch keeps annotations %v and managedFields %v", got.Annotations, got.ManagedFields)
	}
	if dump := fmt.Sprintf("%#v", got); strings.Contains(dump, value) {
		t.Errorf("the watch's store holds the Secret's value: %s", dump)
	}
}

// TestSlimSecretMetadata_Owners: anyone who may write a Secret may give it thousands of
// owner references; the watch keeps the Functions' (ownedBy reads them), at most
// maxSecretOwners, so a cached Secret costs a few hundred bytes.
func TestSlimSecretMetadata_Owners(t *testing.T) {
	fn := metav1.OwnerReference{APIVersion: "functions.dev/v1alpha1", Kind: "Function", Name: "fn", UID: "f1", Controller: ptr.To(true)}
	m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "git-credentials", Namespace: "team-a", UID: "s1"}}
	for i := 0; i < 2000; i++ {
		m.OwnerReferences = append(m.OwnerReferences, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: strings.Repeat("c", 253), UID: "c"})
	}
	m.OwnerReferences = append(m.OwnerReferences, fn)
	for i := 0; i < 2000; i++ {
		m.OwnerReferences = append(m.OwnerReferences, metav1.OwnerReference{APIVersion: "functions.dev/v1alpha1", Kind: "Function", Name: "other", UID: "o"})
	}
	got, err := slimSecretMetadata(m)
	if err != nil {
		t.Fatal(err)
	}
	refs := got.(*metav1.PartialObjectMetadata).OwnerReferences
	want := []metav1.OwnerReference{fn, {APIVersion: "functions.dev/v1alpha1", Kind: "Function", Name: "other", UID: "o"}}
	if diff := cmp.Diff(want, refs); diff != "" {
		t.Errorf("owner references kept (-want +got):\n%s", diff)
	}
	before, _ := json.Marshal(m)
	after, _ := json.Marshal(got)
	if len(before) < 500<<10 || len(after) > 1<<10 {
		t.Errorf("%d bytes stored, %d kept; want more than 500 KiB stored (the control), at most 1 KiB kept", len(before), len(after))
	}
}

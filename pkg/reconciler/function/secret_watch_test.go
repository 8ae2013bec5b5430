package function

import (
	"context"
	"slices"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/test/envtest"
)

// TestSecretWatches, as the operator: in a namespace that onboarded it, a Secret
// change after the watch starts is reported (the first list too); in one that did
// not, the refused watch ends instead of retrying forever, and Stop ends one.
func TestSecretWatches(t *testing.T) {
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
	until(t, "the Secret that was there when the watch started", func() bool { return saw(onboarded + "/before") })
	mustCreate(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: onboarded, Name: "after"}})
	until(t, "a Secret made after the watch started", func() bool { return saw(onboarded + "/after") })

	w.Ensure(bare)
	until(t, "the refused watch ends", func() bool { return !w.Watching(bare) })
	if !w.Watching(onboarded) {
		t.Error("the onboarded namespace's watch ended too")
	}
	w.Stop(onboarded)
	if w.Watching(onboarded) {
		t.Error("Stop left the watch")
	}
}

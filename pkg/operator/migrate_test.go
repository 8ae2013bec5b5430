package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
)

// TestOperator_StoredBooleanReadyIsRewritten: a Function whose status.service.ready
// an older version stored as a boolean (seeded here under that version's schema)
// is rewritten to the string func deploy (v0.50+) can read, once the operator
// starts; a Function already stored with the string is left as it is (the positive
// control that the pass ran: it counts only the boolean).
func TestOperator_StoredBooleanReadyIsRewritten(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	for _, name := range []string{"old", "new"} {
		fn := &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.FunctionSpec{Repository: v1alpha1.Repository{URL: "https://127.0.0.1:1/org/" + name + ".git"}}}
		if err := k8sClient.Create(ctx, fn); err != nil {
			t.Fatal(err)
		}
	}
	// The older version's schema: ready a boolean.
	withReadySchema(t, apiextensionsv1.JSONSchemaProps{Type: "boolean"}, func() {
		writeReady(t, ns, "old", true)
	})
	writeReady(t, ns, "new", string(v1alpha1.ServiceReadyTrue))

	startOperatorWith(t, rebuildConfig(0), ns)
	eventually(t, 30*time.Second, func() string {
		if got := storedReady(t, ns, "old"); got != string(v1alpha1.ServiceReadyTrue) {
			return fmt.Sprintf("old: stored ready = %#v", got)
		}
		return ""
	})
	if got := storedReady(t, ns, "new"); got != string(v1alpha1.ServiceReadyTrue) {
		t.Errorf("new: stored ready = %#v, want the string it had", got)
	}
}

// withReadySchema runs seed with the CRD's status.service.ready schema set to
// schema, then puts the shipped one back.
func withReadySchema(t *testing.T, schema apiextensionsv1.JSONSchemaProps, seed func()) {
	t.Helper()
	ctx := context.Background()
	key := types.NamespacedName{Name: "functions.functions.dev"}
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	crds, err := client.New(restConfig, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	var shipped apiextensionsv1.JSONSchemaProps
	swap := func(set func(*apiextensionsv1.JSONSchemaProps)) {
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var crd apiextensionsv1.CustomResourceDefinition
			if err := crds.Get(ctx, key, &crd); err != nil {
				return err
			}
			status := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"]
			service := status.Properties["service"]
			ready := service.Properties["ready"]
			set(&ready)
			service.Properties["ready"] = ready
			status.Properties["service"] = service
			crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"] = status
			return crds.Update(ctx, &crd)
		}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second) // the API server's CRD handler picks the schema up
	}
	swap(func(r *apiextensionsv1.JSONSchemaProps) { shipped, *r = *r, schema })
	defer swap(func(r *apiextensionsv1.JSONSchemaProps) { *r = shipped })
	seed()
}

// writeReady stores status.service.ready of Function name as value, unstructured.
func writeReady(t *testing.T, ns, name string, value any) {
	t.Helper()
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"service": map[string]any{"ready": value}}})
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(v1alpha1.SchemeGroupVersion.WithKind("Function"))
	u.SetNamespace(ns)
	u.SetName(name)
	if err := k8sClient.Status().Patch(context.Background(), u, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatalf("storing ready %#v: %v", value, err)
	}
	if got := storedReady(t, ns, name); got != value {
		t.Fatalf("stored ready = %#v, want %#v", got, value)
	}
}

// storedReady reads status.service.ready as stored, unstructured.
func storedReady(t *testing.T, ns, name string) any {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(v1alpha1.SchemeGroupVersion.WithKind("Function"))
	if err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, u); err != nil {
		t.Fatal(err)
	}
	v, _, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "service", "ready")
	return v
}

package operator

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
)

// readyMigration rewrites, once the replica leads, the status.service.ready that
// versions before func v0.50 stored as a boolean into the string they store now.
// func deploy (v0.50+) lists every Function of a namespace into the upstream
// operator's types, where the field is a string: one stored boolean makes its List
// fail, and with it the sync of every Function of that namespace. The reconciler
// never rewrites it by itself (the boolean decodes to the same value, so no status
// patch holds it), hence this pass over the stored objects, read unstructured.
type readyMigration struct {
	// Reader reads from the API server (not a cache, which holds decoded objects).
	Reader client.Reader
	// Writer patches the status subresource.
	Writer client.StatusWriter
	// Namespaces are the namespaces to go through; empty means all.
	Namespaces []string
	Log        logr.Logger
}

// NeedLeaderElection is true: one replica writes.
func (*readyMigration) NeedLeaderElection() bool { return true }

// Start goes through the Functions once; a failure is logged, and the next start
// tries again (the operator serves meanwhile: only func deploy's sync is hurt).
func (m *readyMigration) Start(ctx context.Context) error {
	migrated, err := m.run(ctx)
	if err != nil {
		m.Log.Error(err, "rewriting status.service.ready stored as a boolean", "migrated", migrated)
		return nil
	}
	if migrated > 0 {
		m.Log.Info("rewrote status.service.ready stored as a boolean by an older version", "functions", migrated)
	}
	return nil
}

// run patches every Function whose stored status.service.ready is a boolean, and
// returns how many it patched.
func (m *readyMigration) run(ctx context.Context) (int, error) {
	namespaces := m.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	migrated := 0
	for _, ns := range namespaces {
		cont := ""
		for {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(v1alpha1.SchemeGroupVersion.WithKind("FunctionList"))
			opts := []client.ListOption{client.Limit(500), client.Continue(cont)}
			if ns != "" {
				opts = append(opts, client.InNamespace(ns))
			}
			if err := m.Reader.List(ctx, list, opts...); err != nil {
				return migrated, fmt.Errorf("listing Functions: %w", err)
			}
			for i := range list.Items {
				fn := &list.Items[i]
				ready, ok, _ := unstructured.NestedFieldNoCopy(fn.Object, "status", "service", "ready")
				b, isBool := ready.(bool)
				if !ok || !isBool {
					continue
				}
				value := v1alpha1.ServiceReadyFalse
				if b {
					value = v1alpha1.ServiceReadyTrue
				}
				patch, err := json.Marshal(map[string]any{"status": map[string]any{"service": map[string]any{"ready": value}}})
				if err != nil {
					return migrated, err
				}
				if err := m.Writer.Patch(ctx, fn, client.RawPatch(types.MergePatchType, patch)); client.IgnoreNotFound(err) != nil {
					return migrated, fmt.Errorf("patching Function %s/%s: %w", fn.GetNamespace(), fn.GetName(), err)
				}
				migrated++
			}
			if cont = list.GetContinue(); cont == "" {
				break
			}
		}
	}
	return migrated, nil
}

package function

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/fnops/func-operator/api/v1alpha1"
)

// TestReconcile_DebugLog: at debug level, each reconcile writes one line of what it
// concluded; at the default level, none.
func TestReconcile_DebugLog(t *testing.T) {
	ns := newNamespace(t)
	mustCreate(t, newFunction(ns, "fn", v1alpha1.Repository{URL: "http://127.0.0.1:1/fns.git"}))
	r, _ := newTestReconciler(t, 10)
	for _, tt := range []struct {
		verbosity int
		want      bool
	}{{verbosity: 0, want: false}, {verbosity: 1, want: true}} {
		var (
			mu    sync.Mutex
			lines []string
		)
		logger := funcr.New(func(prefix, args string) {
			mu.Lock()
			defer mu.Unlock()
			lines = append(lines, args)
		}, funcr.Options{Verbosity: tt.verbosity})
		ctx := logr.NewContext(context.Background(), logger)
		_, _ = r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "fn"}})
		mu.Lock()
		var got string
		for _, l := range lines {
			if strings.Contains(l, `"msg"="reconciled"`) {
				got = l
			}
		}
		mu.Unlock()
		if (got != "") != tt.want {
			t.Fatalf("verbosity %d: a reconciled line = %q, want one: %t (lines: %q)", tt.verbosity, got, tt.want, lines)
		}
		if !tt.want {
			continue
		}
		for _, key := range []string{`"ready"="False"`, `"reason"=`, `"stoppedBy"=`, `"stopReason"=`, `"requeueAfter"=`, `"took"=`} {
			if !strings.Contains(got, key) {
				t.Errorf("the reconciled line %q has no %s", got, key)
			}
		}
	}
}

package function

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"knative.dev/pkg/apis"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/rerror"
)

// logReconciled writes, at debug level (--zap-log-level=debug, or V(1)), one line
// per reconcile: what it concluded and what comes next, so that following a Function
// needs no status diff. Messages are the conditions' own, which hold no Secret value.
func logReconciled(ctx context.Context, orig, fn *v1alpha1.Function, err error, res reconcile.Result, took time.Duration) {
	l := log.FromContext(ctx).V(1)
	if !l.Enabled() {
		return
	}
	kv := []any{"took", took.Round(time.Microsecond), "statusChanged", !equality.Semantic.DeepEqual(orig.Status, fn.Status),
		"requeueAfter", res.RequeueAfter}
	if c := fn.Status.GetCondition(apis.ConditionReady); c != nil {
		kv = append(kv, "ready", string(c.Status), "reason", c.Reason, "message", c.Message)
	}
	if g := fn.Status.Git; g != nil {
		kv = append(kv, "commit", v1alpha1.ShortCommit(g.ObservedCommit))
	}
	if d := fn.Status.Deployment; d != nil {
		kv = append(kv, "deployer", d.Deployer, "image", d.Image, "revision", d.Revision)
	}
	if mw := fn.Status.Middleware; mw != nil {
		kv = append(kv, "middleware", mw.Current, "available", mw.Available, "pendingRebuild", mw.PendingRebuild)
		if rf := mw.RebuildFrom; rf != nil {
			kv = append(kv, "rebuildFrom", rf.Source+" "+v1alpha1.ShortCommit(rf.Commit))
		}
	}
	if b := fn.Status.Build; b != nil {
		kv = append(kv, "build", b.ID, "buildPhase", b.Phase)
	}
	if err != nil {
		kind := "transient"
		switch {
		case rerror.IsStalling(err):
			kind = "stalling"
		case rerror.IsWaiting(err):
			kind = "waiting"
		}
		kv = append(kv, "stoppedBy", kind, "stopReason", rerror.Reason(err))
	}
	l.Info("reconciled", kv...)
}

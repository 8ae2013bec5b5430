package function

import (
	"time"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/outcomes"
)

// emitDeploySeen hands s a deploy seen: fn runs another image than orig did (which
// the status patch just wrote over, so it is emitted once). The first image a
// Function is seen to run is none: it is no deploy the operator saw happen, and an
// install over a fleet would send one per Function at once.
func emitDeploySeen(s *outcomes.Sender, orig, fn *v1alpha1.Function, now time.Time) {
	before, after := deployedImage(orig), deployedImage(fn)
	if s == nil || before == "" || after == "" || after == before {
		return
	}
	// The status write that recorded it: the same image deployed again is another deploy.
	o := outcomes.Outcome{Type: outcomes.TypeDeploySeen, Time: now, Subject: after, Key: fn.ResourceVersion, Data: outcomes.Of(fn)}
	o.Data.Image = outcomes.Change{Before: before, After: after}
	o.Data.Commit, o.Data.Deployer = fn.Status.Deployment.Revision, fn.Status.Deployment.Deployer
	if mw := orig.Status.Middleware; mw != nil {
		o.Data.Middleware.Before = mw.Current
	}
	if mw := fn.Status.Middleware; mw != nil {
		o.Data.Middleware.After = mw.Current
	}
	s.Emit(o)
}

func deployedImage(fn *v1alpha1.Function) string {
	if fn.Status.Deployment == nil {
		return ""
	}
	return fn.Status.Deployment.Image
}

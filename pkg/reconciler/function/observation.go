package function

import (
	"github.com/google/go-containerregistry/pkg/authn"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/git"
	"github.com/fnops/func-operator/pkg/rebuild"
	"github.com/fnops/func-operator/pkg/reconciler/function/build"
	"github.com/fnops/func-operator/pkg/reconciler/function/step"
)

// Result is what a step asks of the end of its reconcile, besides its error.
type Result = step.Result

// observation is what the steps of one reconcile learn and hand on, in their order.
// Each part names the step that sets it; a step reads only the parts of the steps
// before it. What outlives the reconcile is in the Function's status.
type observation struct {
	// source is set by reconcileSource.
	source sourceArtifact
	// deployment is set by reconcileDeployment.
	deployment deployment
	// middleware is set by reconcileMiddleware.
	middleware middlewareVerdict
	// onCommit is set by reconcileDeployOnCommit.
	onCommit build.OnCommit
	// base is set by reconcileBase.
	base build.Base
	// registry is the Function's registry keychain, when reconcileMiddleware read it.
	registry authn.Keychain
}

// sourceArtifact is the function's source at the branch head.
type sourceArtifact struct {
	// head is the branch followed and its commit.
	head git.Head
	// auth are the repository credentials, read in this reconcile.
	auth *git.Auth
	// name, runtime and invoke are func.yaml's, read at head by this reconcile or by
	// an earlier one (then from the status).
	name, runtime, invoke string
	// metadata is func.yaml in full when this reconcile read it; nil when the status
	// already showed head (the rebuild step reads it then, from the Fetcher's cache).
	metadata *funclib.Metadata
	// tree is the git tree of the function's directory at head, and pipelinesAsCode
	// whether the repository has a .tekton/ directory there, when this reconcile read it.
	tree            string
	pipelinesAsCode bool
}

// deployment is what func deployed for the function, as described through the func library.
type deployment struct {
	// image is the image it runs: by digest when a Revision resolved it (knative), the
	// Deployment's template's (raw, keda).
	image string
	// found is what func deployed (its deployer, the Knative Service or workload),
	// which the Function is bound to; nil when nothing is.
	found deployed
	// rollingOut (reconcileServiceReady): the image read may not serve yet (a
	// Deployment not rolled out, knative.RollingOut).
	rollingOut bool
	// failure: Knative reports the newest Revision failed (reconcileServiceReady).
	failure rebuild.RevisionFailure
	// unbound: the step left the Service the Function was bound to (gone, or not the
	// Function's any more); a build in flight for it is stopped (build.StopUnbound).
	unbound bool
}

// uid is the bound object's (Knative Service, Deployment); "" when none is.
func (d deployment) uid() types.UID {
	if d.found == nil {
		return ""
	}
	return d.found.UID()
}

// middlewareVerdict is how the running middleware compares with what a rebuild brings.
type middlewareVerdict struct {
	// current is the running version ("" when unknown); available what a rebuild brings.
	current, available string
	// rebuildDue is true when the middleware is outdated and auto-update is on.
	rebuildDue bool
	// from is the commit a rebuild builds.
	from rebuildFrom
}

// forBuild is what the build sub-reconciler reads of the checks: the source, what
// func deployed, and the middleware's verdict.
func (o *observation) forBuild() build.Observed {
	d, mw := o.deployment, o.middleware
	out := build.Observed{Head: o.source.head, Auth: o.source.auth, Metadata: o.source.metadata,
		Deployed:   build.Deployed{BoundUID: d.uid(), Image: d.image, RollingOut: d.rollingOut, Failure: d.failure, Unbound: d.unbound},
		Middleware: build.Middleware{Current: mw.current, Available: mw.available, Due: mw.rebuildDue},
		From: build.From{Commit: mw.from.commit, Source: mw.from.source, Problem: mw.from.problem,
			Remedy: mw.from.remedy(o.source.head.Commit)},
		OnCommit: o.onCommit,
		Base:     o.base,
	}
	if d.found != nil {
		out.Deployed.Target = d.found
	}
	return out
}

package function

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"knative.dev/pkg/apis"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/knative"
	"github.com/fnops/func-operator/pkg/rebuild"
	"github.com/fnops/func-operator/pkg/reconciler/function/build"
	"github.com/fnops/func-operator/pkg/reconciler/function/step"
	"github.com/fnops/func-operator/pkg/rerror"
	"github.com/fnops/func-operator/pkg/workload"
)

// deployed is what one of func's deployers deployed for the function, which the
// Function binds to: a Knative Service (knative), or a Deployment and a core Service
// (raw; keda adds an HTTPScaledObject).
type deployed interface {
	// String names it in messages; Deployer is funclib.DeployerKnative, DeployerRaw
	// or DeployerKeda.
	build.Target
	// UID, Name and Labels are the bound object's (Knative Service, Deployment): func
	// names it as the function and labels it with the function's name.
	UID() types.UID
	Name() string
	Labels() map[string]string
}

// knativeTarget is a function of func's knative deployer: its Knative Service.
type knativeTarget struct{ svc *servingv1.Service }

func (k knativeTarget) Deployer() string          { return funclib.DeployerKnative }
func (k knativeTarget) UID() types.UID            { return k.svc.UID }
func (k knativeTarget) Name() string              { return k.svc.Name }
func (k knativeTarget) Labels() map[string]string { return k.svc.Labels }
func (k knativeTarget) String() string            { return "Knative Service " + k.svc.Name }

// workloadTarget is a function of func's raw or keda deployer: its Deployment.
type workloadTarget struct{ w *workload.Workload }

func (t workloadTarget) Deployer() string          { return t.w.Deployer }
func (t workloadTarget) UID() types.UID            { return t.w.UID() }
func (t workloadTarget) Name() string              { return t.w.Name() }
func (t workloadTarget) Labels() map[string]string { return t.w.Deployment.Labels }
func (t workloadTarget) String() string {
	return fmt.Sprintf("Deployment %s of func's %s deployer", t.w.Name(), t.w.Deployer)
}

// reconcileDeployment finds what func deployed for the function named obs.source.name
// (findDeployed), binds fn to it (binding.go) and describes it through the func
// library, into obs.deployment. Nothing deployed is a normal state: Deployed False,
// and the watches bring the Function back when something appears.
func (r *Reconciler) reconcileDeployment(ctx context.Context, fn *v1alpha1.Function, obs *observation) (Result, error) {
	name := obs.source.name
	requested := requestedDeployer(fn)
	d, stranded, err := r.findDeployed(ctx, name, fn.Namespace, requested)
	var in funclib.Instance
	if err == nil {
		if err := r.bind(ctx, fn, d); err != nil {
			if !rerror.IsStalling(err) {
				return Result{}, err // nothing new is known of the binding
			}
			r.unbind(fn, obs)
			return Result{}, err
		}
		in, err = r.targets.describer.Describe(ctx, d.Deployer(), name, fn.Namespace)
		if errors.Is(err, funclib.ErrNotDeployed) {
			// Found a moment ago: it changed under the describe (a deployer switch in
			// progress). The next reconcile finds it again; nothing is unbound.
			return Result{}, step.MarkedBy(fn.Status.MarkDeployedUnknown, rerror.NewTransient(v1alpha1.ReasonDescribeFailed,
				"%s changed while it was described: %w", d, err))
		}
	}
	switch {
	case errors.Is(err, funclib.ErrNotDeployed):
		fn.Status.MarkNotDeployed(name, fn.Namespace)
		r.unbind(fn, obs)
		return Result{}, rerror.NewWaiting(v1alpha1.ReasonNotDeployed, 0, "waiting for func to deploy function %s/%s", fn.Namespace, name)
	case meta.IsNoMatchError(err):
		// The API's absence says all the cause would (no match for the kind).
		stall := step.MarkedBy(fn.Status.MarkDeployedUnknown, rerror.NewStalling(v1alpha1.ReasonKnativeServingNotInstalled,
			"the cluster has no Knative Serving API (serving.knative.dev/v1 Service), and func's raw or keda deployer deployed no function %q here: "+
				"install Knative Serving, or deploy with func's raw deployer (func.yaml deployer: raw)", name))
		fn.Status.MarkServiceReadyUnknown(v1alpha1.ReasonKnativeServingNotInstalled, "the cluster has no Knative Serving API")
		fn.Status.MarkMiddlewareUnknown(v1alpha1.ReasonKnativeServingNotInstalled, "the cluster has no Knative Serving API")
		return Result{}, stall
	case err != nil:
		return Result{}, step.MarkedBy(fn.Status.MarkDeployedUnknown, rerror.NewTransient(v1alpha1.ReasonDescribeFailed, "describing function %s failed: %w", name, err))
	}

	obs.deployment = deployment{image: in.Image, found: d}
	if fn.Status.Deployment == nil {
		fn.Status.Deployment = &v1alpha1.DeploymentStatus{}
	}
	newImage(fn, in.Image, obs.source.head.Commit)
	fn.Status.Deployment.Deployer = d.Deployer()
	if fn.Status.Service == nil {
		fn.Status.Service = &v1alpha1.ServiceStatus{}
	}
	fn.Status.Service.UID = d.UID()
	fn.Status.Service.URL = in.Route
	fn.Status.Service.Subscriptions, fn.Status.Service.SubscriptionsOmitted = subscriptions(in.Subscriptions)
	fn.Status.MarkDeployed(d.String(), in.Image, deployerNote(d.Deployer(), requested, stranded))
	return Result{}, nil
}

// findDeployed finds what func deployed under the function's name in namespace: a
// Knative Service, or a raw or keda Deployment and Service. When both are there (a
// deployer switch left the old one's resources), requested (func.yaml's deployer)
// picks, and stranded names the other. Nothing found is funclib.ErrNotDeployed; a
// cluster without Knative Serving where the raw and keda deployers deployed nothing
// either is a NoMatch error unless func.yaml asks for raw or keda.
func (r *Reconciler) findDeployed(ctx context.Context, name, namespace, requested string) (d deployed, stranded string, err error) {
	var (
		svc *servingv1.Service
		w   *workload.Workload
	)
	svcErr := funclib.ErrNotDeployed
	if r.targets.services != nil {
		svc, svcErr = r.targets.services.Service(ctx, name, namespace)
	}
	wErr := funclib.ErrNotDeployed
	if r.targets.workloads != nil {
		w, wErr = r.targets.workloads.Find(ctx, name, namespace)
	}
	for _, err := range []error{svcErr, wErr} {
		if err != nil && !errors.Is(err, funclib.ErrNotDeployed) && !meta.IsNoMatchError(err) {
			return nil, "", err
		}
	}
	kn := knativeTarget{svc: svc}
	switch {
	case svcErr == nil && wErr == nil:
		wd := workloadTarget{w: w}
		if funclib.EffectiveDeployer(requested) == funclib.DeployerKnative {
			return kn, wd.String(), nil
		}
		return wd, kn.String(), nil
	case svcErr == nil:
		return kn, "", nil
	case wErr == nil:
		return workloadTarget{w: w}, "", nil
	case meta.IsNoMatchError(svcErr) && funclib.EffectiveDeployer(requested) == funclib.DeployerKnative:
		return nil, "", svcErr
	}
	return nil, "", fmt.Errorf("function %s/%s: %w", namespace, name, funclib.ErrNotDeployed)
}

// requestedDeployer is the deployer func.yaml names, as the source step recorded it.
func requestedDeployer(fn *v1alpha1.Function) string {
	if d := fn.Status.Deployment; d != nil {
		return d.RequestedDeployer
	}
	return ""
}

// deployerNote says, for the Deployed condition, how the deployer func.yaml asks for
// compares with the one that deployed the function, and what a deployer switch left.
func deployerNote(deployer, requested, stranded string) string {
	note := ""
	switch want := funclib.EffectiveDeployer(requested); {
	case want == deployer:
	case funclib.CheckDeployerSwitch(deployer, want) == nil:
		note = fmt.Sprintf("func.yaml asks for func's %s deployer: a rebuild deploys with it (func switches %s to %s in place)", want, deployer, want)
	default:
		note = fmt.Sprintf("func.yaml asks for func's %s deployer, but %s deployed the function: the operator does not rebuild it, "+
			"as that would leave what %s deployed beside what %s deploys (set func.yaml's deployer to %s, or func delete and deploy again)",
			want, deployer, deployer, want, deployer)
	}
	if stranded != "" {
		if note != "" {
			note += "; "
		}
		note += fmt.Sprintf("%s is there too, left by a deployer switch: the operator ignores it (func delete removes both)", stranded)
	}
	return note
}

// newImage records image as the one the function runs. A new one (a deploy, a
// rebuild) is stamped with the followed commit of this check, and what was read of
// the old one goes: its revision, and which commit a rebuild of it would build.
func newImage(fn *v1alpha1.Function, image, followed string) {
	d := fn.Status.Deployment
	if d.Image != image || d.FollowedAtDeploy == "" {
		d.FollowedAtDeploy = followed
		// The operator's build, not verified yet, deployed it: the commit it built, not
		// one pushed since. (A verified build's image was seen already: a later image
		// is someone else's deploy.)
		if b := fn.Status.Build; b != nil && len(b.Commit) == 40 && b.FromImage != image && d.Image != "" && buildUnverified(fn) {
			d.FollowedAtDeploy = b.Commit
		}
	}
	if d.Image != image {
		d.Revision = ""
		if fn.Status.Middleware != nil {
			fn.Status.Middleware.RebuildFrom = nil
		}
	}
	d.Image = image
}

// unbind leaves what func deployed that the Function has not, or may not touch: the
// status forgets it, and a build in flight for it is stopped after the checks
// (build.StopUnbound); a queued rebuild gives its place up as the step fails.
func (r *Reconciler) unbind(fn *v1alpha1.Function, obs *observation) {
	fn.Status.Service = nil
	if fn.Status.Deployment != nil {
		fn.Status.Deployment.Image, fn.Status.Deployment.Deployer = "", ""
	}
	obs.deployment = deployment{unbound: true}
}

// reconcileServiceReady mirrors whether what the deployment step found serves the
// function: a Knative Service's Ready condition, once Knative observed its latest
// spec; a raw or keda function's rollout, availability and HTTPScaledObject
// (workload.ReadinessOf).
func (r *Reconciler) reconcileServiceReady(ctx context.Context, fn *v1alpha1.Function, obs *observation) (Result, error) {
	if t, ok := obs.deployment.found.(workloadTarget); ok {
		ready := workload.ReadinessOf(t.w)
		obs.deployment.rollingOut = !ready.RolledOut
		if fn.Status.Service == nil {
			fn.Status.Service = &v1alpha1.ServiceStatus{}
		}
		fn.Status.Service.LatestReadyRevision = ""
		fn.Status.Service.Ready = v1alpha1.ServiceReadiness(ready.Status)
		switch ready.Status {
		case "True":
			fn.Status.MarkServiceReady("%s", ready.Message)
		case "False":
			fn.Status.MarkServiceNotReady(ready.Reason, "%s", ready.Message)
		default:
			fn.Status.MarkServiceReadyUnknown(ready.Reason, "%s", ready.Message)
		}
		return Result{}, nil
	}
	svc, err := r.targets.services.Service(ctx, obs.source.name, fn.Namespace)
	if err != nil {
		// It was there a moment ago: retry.
		return Result{}, fmt.Errorf("reading Knative Service %s/%s: %w", fn.Namespace, obs.source.name, err)
	}
	if svc.UID != obs.deployment.uid() {
		// Replaced since it was described: the next reconcile binds again.
		return Result{}, fmt.Errorf("knative Service %s/%s was replaced while it was reconciled", fn.Namespace, svc.Name)
	}
	if fn.Status.Service == nil {
		fn.Status.Service = &v1alpha1.ServiceStatus{}
	}
	fn.Status.Service.LatestReadyRevision = svc.Status.LatestReadyRevisionName
	ready := svc.Status.GetCondition(apis.ConditionReady)
	fn.Status.Service.Ready = v1alpha1.ServiceReadyUnknown
	if ready != nil && svc.Status.ObservedGeneration == svc.Generation {
		fn.Status.Service.Ready = v1alpha1.ServiceReadiness(ready.Status)
	}
	obs.deployment.rollingOut = knative.RollingOut(svc)
	if f := r.targets.services.NewestRevisionFailure(ctx, svc); f != nil {
		obs.deployment.failure = rebuild.RevisionFailure{Revision: f.Revision, Reason: f.Reason, Since: f.Since, Created: f.Created}
	}
	switch {
	case svc.Status.ObservedGeneration != svc.Generation:
		fn.Status.MarkServiceReadyUnknown(v1alpha1.ReasonServiceReconciling,
			"Knative has not yet observed generation %d of Service %s", svc.Generation, svc.Name)
	case ready == nil:
		fn.Status.MarkServiceReadyUnknown(v1alpha1.ReasonServiceReconciling, "Knative Service %s reports no Ready condition yet", svc.Name)
	case ready.IsTrue():
		fn.Status.MarkServiceReady("Knative Service %s is ready", svc.Name)
	case ready.IsFalse():
		fn.Status.MarkServiceNotReady(cmp.Or(ready.Reason, v1alpha1.ReasonServiceNotReady), "%s", ready.Message)
	default:
		fn.Status.MarkServiceReadyUnknown(cmp.Or(ready.Reason, v1alpha1.ReasonServiceReconciling), "%s", ready.Message)
	}
	return Result{}, nil
}

// subscriptions are the status's subscriptions, bounded: build code and tenants may
// create any number of Triggers with filters of any length, and the status must stay
// far below etcd's object limit. It shows the first v1alpha1.MaxSubscriptions (in the
// order they come, sorted), each value cut, and how many it leaves out.
func subscriptions(in []funclib.Subscription) (out []v1alpha1.Subscription, omitted int32) {
	for i, sub := range in {
		if i == v1alpha1.MaxSubscriptions {
			return out, int32(len(in) - i)
		}
		out = append(out, v1alpha1.Subscription{Broker: knative.Cut(sub.Broker, knative.MaxAttributeBytes),
			Source: knative.Cut(sub.Source, knative.MaxAttributeBytes), Type: knative.Cut(sub.Type, knative.MaxAttributeBytes)})
	}
	return out, 0
}

// buildUnverified reports whether fn's build runs, or succeeded and its image has not
// been seen serving yet (FunctionStatus.RebuildRecorded).
func buildUnverified(fn *v1alpha1.Function) bool {
	b := fn.Status.Build
	return b != nil && (b.Phase == v1alpha1.BuildPhaseRunning || (b.Phase == v1alpha1.BuildPhaseSucceeded && !fn.Status.RebuildRecorded()))
}

package function

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"knative.dev/pkg/apis"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/knative"
	"github.com/fnops/func-operator/pkg/rerror"
)

// reconcileDeployment describes the function named obs.source.name through the func
// library, into obs.deployment, once its Knative Service is bound to fn (binding.go).
// No Service is a normal state: Deployed False, and the Service watch brings the
// Function back when one appears.
func (r *Reconciler) reconcileDeployment(ctx context.Context, fn *v1alpha1.Function, obs *observation) (Result, error) {
	name := obs.source.name
	svc, err := r.Services.Service(ctx, name, fn.Namespace)
	var in funclib.Instance
	if err == nil {
		if err := r.bind(ctx, fn, svc); err != nil {
			if !rerror.IsStalling(err) {
				return Result{}, err // nothing new is known of the binding
			}
			r.unbind(fn, obs)
			return Result{}, err
		}
		in, err = r.Describer.Describe(ctx, name, fn.Namespace)
	}
	switch {
	case errors.Is(err, funclib.ErrNotDeployed):
		fn.Status.MarkNotDeployed(name, fn.Namespace)
		r.unbind(fn, obs)
		return Result{}, rerror.NewWaiting(v1alpha1.ReasonNotDeployed, 0, "waiting for Knative Service %s/%s", fn.Namespace, name)
	case meta.IsNoMatchError(err):
		// The API's absence says all the cause would (no match for the kind).
		stall := markedBy(fn.Status.MarkDeployedUnknown, rerror.NewStalling(v1alpha1.ReasonKnativeServingNotInstalled,
			"the cluster has no Knative Serving API (serving.knative.dev/v1 Service): install Knative Serving"))
		fn.Status.MarkServiceReadyUnknown(v1alpha1.ReasonKnativeServingNotInstalled, "the cluster has no Knative Serving API")
		fn.Status.MarkMiddlewareUnknown(v1alpha1.ReasonKnativeServingNotInstalled, "the cluster has no Knative Serving API")
		return Result{}, stall
	case err != nil:
		return Result{}, markedBy(fn.Status.MarkDeployedUnknown, rerror.NewTransient(v1alpha1.ReasonDescribeFailed, "describing Knative Service %s failed: %w", name, err))
	}

	obs.deployment = deployment{image: in.Image, uid: svc.UID}
	if fn.Status.Deployment == nil {
		fn.Status.Deployment = &v1alpha1.DeploymentStatus{}
	}
	fn.Status.Deployment.Image = in.Image
	fn.Status.Deployment.Deployer = v1alpha1.DeployerKnative
	if fn.Status.Service == nil {
		fn.Status.Service = &v1alpha1.ServiceStatus{}
	}
	fn.Status.Service.UID = svc.UID
	fn.Status.Service.URL = in.Route
	fn.Status.Service.Subscriptions, fn.Status.Service.SubscriptionsOmitted = subscriptions(in.Subscriptions)
	fn.Status.MarkDeployed(name, in.Image)
	return Result{}, nil
}

// unbind leaves a Knative Service the Function has not, or may not touch: the status
// forgets it, and a build in flight for it is stopped after the checks
// (stopUnboundBuild); a queued rebuild gives its place up as the step fails.
func (r *Reconciler) unbind(fn *v1alpha1.Function, obs *observation) {
	fn.Status.Service = nil
	if fn.Status.Deployment != nil {
		fn.Status.Deployment.Image, fn.Status.Deployment.Deployer = "", ""
	}
	obs.deployment = deployment{unbound: true}
}

// reconcileServiceReady mirrors the Ready condition of the Knative Service named
// obs.source.name, once Knative has observed the Service's latest spec.
func (r *Reconciler) reconcileServiceReady(ctx context.Context, fn *v1alpha1.Function, obs *observation) (Result, error) {
	svc, err := r.Services.Service(ctx, obs.source.name, fn.Namespace)
	if err != nil {
		// It was there a moment ago: retry.
		return Result{}, fmt.Errorf("reading Knative Service %s/%s: %w", fn.Namespace, obs.source.name, err)
	}
	if svc.UID != obs.deployment.uid {
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
	switch {
	case svc.Status.ObservedGeneration != svc.Generation:
		fn.Status.MarkServiceReadyUnknown(v1alpha1.ReasonServiceReconciling,
			"Knative has not yet observed generation %d of Service %s", svc.Generation, svc.Name)
	case ready == nil:
		fn.Status.MarkServiceReadyUnknown(v1alpha1.ReasonServiceReconciling, "Knative Service %s reports no Ready condition yet", svc.Name)
	case ready.IsTrue():
		fn.Status.MarkServiceReady(svc.Name)
	case ready.IsFalse():
		fn.Status.MarkServiceNotReady(orDefault(ready.Reason, v1alpha1.ReasonServiceNotReady), "%s", ready.Message)
	default:
		fn.Status.MarkServiceReadyUnknown(orDefault(ready.Reason, v1alpha1.ReasonServiceReconciling), "%s", ready.Message)
	}
	return Result{}, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
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

package function

import (
	"context"
	"slices"
	"time"

	kedav1alpha1 "github.com/kedacore/http-add-on/operator/apis/http/v1alpha1"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	eventingv1 "knative.dev/eventing/pkg/apis/eventing/v1"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/workload"
)

// DefaultAPIRecheck is how often the operator looks for the APIs it watches that the
// cluster did not serve when it started.
const DefaultAPIRecheck = 30 * time.Second

// optionalAPI is an API the operator watches when the cluster serves it: Knative
// Serving, Knative Eventing, the KEDA HTTP add-on, Tekton Pipelines.
type optionalAPI struct {
	gvk schema.GroupVersionKind
	// source watches it, for the Function controller.
	source func(mgr manager.Manager) source.Source
	// missing is logged when the cluster does not serve it.
	missing string
	// found runs once the cluster serves it, after its watch started; absent, when
	// it does not at the start.
	found, absent func()
}

// optionalAPIs are the APIs the Function controller watches when they are served.
func (r *Reconciler) optionalAPIs() []optionalAPI {
	apis := r.knownAPIs()
	if r.targets.workloads == nil {
		// Without func's raw and keda deployers' functions read, no HTTPScaledObject is.
		apis = slices.DeleteFunc(apis, func(a optionalAPI) bool { return a.gvk.Group == kedav1alpha1.SchemeGroupVersion.Group })
	}
	return apis
}

// knownAPIs are every optional API the Function controller knows.
func (r *Reconciler) knownAPIs() []optionalAPI {
	return []optionalAPI{{
		gvk: servingv1.SchemeGroupVersion.WithKind("Service"),
		source: func(mgr manager.Manager) source.Source {
			return source.Kind[client.Object](mgr.GetCache(), &servingv1.Service{}, handler.EnqueueRequestsFromMapFunc(r.watch.functionsForService))
		},
		missing: "Knative Serving is not installed: Functions of func's knative deployer report Deployed Unknown, reason " +
			v1alpha1.ReasonKnativeServingNotInstalled + ", until it is (looked for every API recheck); raw and keda ones are looked after",
		absent: func() {
			if r.targets.services != nil {
				r.targets.services.ServingMissing()
			}
		},
		found: func() {
			if r.targets.services != nil {
				r.targets.services.EnableServing()
			}
		},
	}, {
		gvk: eventingv1.SchemeGroupVersion.WithKind("Trigger"),
		source: func(mgr manager.Manager) source.Source {
			return source.Kind[client.Object](mgr.GetCache(), &eventingv1.Trigger{}, handler.EnqueueRequestsFromMapFunc(r.watch.functionsForTrigger))
		},
		missing: "Knative Eventing is not installed: Triggers are not watched until it is",
		found: func() {
			if r.targets.services != nil {
				r.targets.services.EnableEventing()
			}
		},
	}, {
		gvk: kedav1alpha1.SchemeGroupVersion.WithKind("HTTPScaledObject"),
		source: func(mgr manager.Manager) source.Source {
			return source.Kind[client.Object](mgr.GetCache(), &kedav1alpha1.HTTPScaledObject{}, handler.EnqueueRequestsFromMapFunc(r.watch.functionsForService))
		},
		missing: "the KEDA HTTP add-on is not installed: functions of func's keda deployer report ServiceReady False, reason " +
			workload.ReasonKEDAHTTPAddOnNotInstalled + ", until it is (looked for every API recheck)",
		found: func() { r.targets.workloads.EnableKEDA() },
	}, {
		gvk: pipelinev1.SchemeGroupVersion.WithKind("PipelineRun"),
		source: func(mgr manager.Manager) source.Source {
			// Builds are followed through their PipelineRuns, mapped back by label.
			return source.Kind[client.Object](mgr.GetCache(), &pipelinev1.PipelineRun{}, handler.EnqueueRequestsFromMapFunc(functionForPipelineRun))
		},
		missing: "Tekton Pipelines is not installed: outdated Functions report MiddlewareUpToDate False, reason " +
			v1alpha1.ReasonRebuildNotPossible + ", until it is (looked for every API recheck)",
		found: func() { r.build.TektonFound() },
	}}
}

// LateAPIs picks up, without a restart, the APIs that the cluster did not serve when
// the operator started (Knative Serving or Eventing, Tekton Pipelines installed after
// it): it looks for them every Interval, and once one is served, starts its watch and
// brings every Function back to be checked with it.
type LateAPIs struct {
	Manager    manager.Manager
	Reconciler *Reconciler
	Controller controller.Controller
	// Interval between looks; DefaultAPIRecheck when zero.
	Interval time.Duration
	missing  []optionalAPI
}

// NeedLeaderElection is true: the watches feed the leader's controller.
func (*LateAPIs) NeedLeaderElection() bool { return true }

// Start looks for the missing APIs until they are all served or ctx ends.
func (l *LateAPIs) Start(ctx context.Context) error {
	interval := l.Interval
	if interval <= 0 {
		interval = DefaultAPIRecheck
	}
	logger := log.FromContext(ctx).WithName("late-apis")
	for len(l.missing) > 0 {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
		var still []optionalAPI
		for _, api := range l.missing {
			ok, err := installed(l.Manager, api.gvk)
			if err != nil || !ok {
				still = append(still, api)
				continue
			}
			if err := l.Controller.Watch(api.source(l.Manager)); err != nil {
				logger.Error(err, "watching an API installed after the operator started", "kind", api.gvk.String())
				still = append(still, api)
				continue
			}
			if api.found != nil {
				api.found()
			}
			logger.Info("an API installed after the operator started is watched now", "kind", api.gvk.String())
			l.recheckAll(ctx)
		}
		l.missing = still
	}
	return nil
}

// recheckAll brings every Function back to the reconciler.
func (l *LateAPIs) recheckAll(ctx context.Context) {
	var list v1alpha1.FunctionList
	if err := l.Manager.GetClient().List(ctx, &list); err != nil {
		log.FromContext(ctx).Error(err, "listing the Functions to check again")
		return
	}
	keys := make([]types.NamespacedName, 0, len(list.Items))
	for i := range list.Items {
		keys = append(keys, types.NamespacedName{Namespace: list.Items[i].Namespace, Name: list.Items[i].Name})
	}
	l.Reconciler.watch.wakeups.EnqueueAll(ctx, keys)
}

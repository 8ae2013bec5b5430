package knative

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	eventingv1 "knative.dev/eventing/pkg/apis/eventing/v1"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/pkg/funclib"
)

// FunctionNameLabel is the label func's deployer puts on a function's Knative Service.
const FunctionNameLabel = "function.knative.dev/name"

// Services finds deployed functions in Knative Serving. With the manager's client as
// Reader, every read is served by an informer cache.
type Services struct {
	Reader client.Reader

	// eventing is true once the cluster serves Knative Eventing's Triggers: before,
	// no Trigger is looked for. (A read of a kind the cluster does not serve makes the
	// cache ask discovery again, under a lock every cached read takes.)
	eventing atomic.Bool
	// noServing is true while the cluster serves no Knative Services (ServingMissing,
	// until EnableServing): Service answers as the API server would, without asking
	// discovery on every reconcile of a raw or keda function.
	noServing atomic.Bool
}

// ServingMissing makes Service answer that the cluster serves no Knative Services,
// without a read: the operator found none served.
func (s *Services) ServingMissing() { s.noServing.Store(true) }

// EnableServing makes Service read Knative Services again: the cluster serves them.
func (s *Services) EnableServing() { s.noServing.Store(false) }

// EnableEventing makes Instance look for the Triggers that deliver events to a
// function: the cluster serves Knative Eventing.
func (s *Services) EnableEventing() { s.eventing.Store(true) }

var _ funclib.InstanceSource = (*Services)(nil)

// Instance describes the Knative Service named name in namespace: its URLs, and the
// image it runs, by digest when its latest ready Revision reports one.
func (s *Services) Instance(ctx context.Context, name, namespace string) (funclib.Instance, error) {
	svc, err := s.Service(ctx, name, namespace)
	if err != nil {
		return funclib.Instance{}, err
	}
	in := funclib.Instance{Name: name, Namespace: namespace, Image: s.image(ctx, svc)}
	if svc.Status.URL != nil {
		in.Route = svc.Status.URL.String()
		in.Routes = append(in.Routes, in.Route)
	}
	for _, t := range svc.Status.Traffic {
		if t.URL != nil && t.URL.String() != in.Route {
			in.Routes = append(in.Routes, t.URL.String())
		}
	}
	if in.Subscriptions, err = s.subscriptions(ctx, svc); err != nil {
		return funclib.Instance{}, err
	}
	return in, nil
}

// subscriptions returns the Triggers that deliver events to svc, as func's own
// describer matches them. Without Knative Eventing on the cluster there are none.
func (s *Services) subscriptions(ctx context.Context, svc *servingv1.Service) ([]funclib.Subscription, error) {
	return s.triggers(ctx, svc.Namespace, func(t *eventingv1.Trigger) bool { return subscribesTo(t, svc) })
}

// SubscriptionsTo returns the Triggers of namespace whose subscriber URI names one of
// hosts (with any port, at the root path): func's raw deployer subscribes a function's
// core Service by its cluster address. Without Knative Eventing there are none.
func (s *Services) SubscriptionsTo(ctx context.Context, namespace string, hosts []string) ([]funclib.Subscription, error) {
	return s.triggers(ctx, namespace, func(t *eventingv1.Trigger) bool {
		uri := t.Spec.Subscriber.URI
		if t.Spec.Subscriber.Ref != nil || uri == nil || strings.TrimSuffix(uri.Path, "/") != "" {
			return false
		}
		for _, h := range hosts {
			if uri.URL().Hostname() == h {
				return true
			}
		}
		return false
	})
}

// triggers returns, sorted, the subscriptions of the Triggers of namespace that match.
func (s *Services) triggers(ctx context.Context, namespace string, match func(*eventingv1.Trigger) bool) ([]funclib.Subscription, error) {
	if !s.eventing.Load() {
		return nil, nil
	}
	var triggers eventingv1.TriggerList
	err := s.Reader.List(ctx, &triggers, client.InNamespace(namespace))
	switch {
	case meta.IsNoMatchError(err), runtime.IsNotRegisteredError(err):
		return nil, nil // no Knative Eventing
	case err != nil:
		return nil, fmt.Errorf("listing the Triggers of namespace %s: %w", namespace, err)
	}
	var subs []funclib.Subscription
	for _, t := range triggers.Items {
		if !match(&t) {
			continue
		}
		sub := funclib.Subscription{Broker: t.Spec.Broker}
		if t.Spec.Filter != nil {
			sub.Source, sub.Type = t.Spec.Filter.Attributes["source"], t.Spec.Filter.Attributes["type"]
		}
		subs = append(subs, sub)
	}
	// A stable order, so that the status does not change with the order of a list.
	sort.Slice(subs, func(i, j int) bool {
		a, b := subs[i], subs[j]
		if a.Broker != b.Broker {
			return a.Broker < b.Broker
		}
		if a.Type != b.Type {
			return a.Type < b.Type
		}
		return a.Source < b.Source
	})
	return subs, nil
}

// subscribesTo reports whether trigger delivers events to svc: by reference, or by a
// URI naming the Service's address. (func's own describer compares only the paths,
// which are usually both empty, and so matches every Trigger with a URI.)
func subscribesTo(t *eventingv1.Trigger, svc *servingv1.Service) bool {
	if ref := t.Spec.Subscriber.Ref; ref != nil {
		return ref.Name == svc.Name && (ref.Kind == "" || ref.Kind == "Service")
	}
	uri := t.Spec.Subscriber.URI
	if uri == nil || svc.Status.Address == nil || svc.Status.Address.URL == nil {
		return false
	}
	addr := svc.Status.Address.URL
	return uri.Host == addr.Host && strings.TrimSuffix(uri.Path, "/") == strings.TrimSuffix(addr.Path, "/")
}

// Service returns the Knative Service named name in namespace, or funclib.ErrNotDeployed.
func (s *Services) Service(ctx context.Context, name, namespace string) (*servingv1.Service, error) {
	if s.noServing.Load() {
		gvk := servingv1.SchemeGroupVersion.WithKind("Service")
		return nil, &meta.NoKindMatchError{GroupKind: gvk.GroupKind(), SearchedVersions: []string{gvk.Version}}
	}
	svc := &servingv1.Service{}
	err := s.Reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, svc)
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("knative Service %s/%s: %w", namespace, name, funclib.ErrNotDeployed)
	case err != nil:
		return nil, fmt.Errorf("reading Knative Service %s/%s: %w", namespace, name, err)
	}
	return svc, nil
}

// image is the image the Service runs: the digest its latest ready Revision resolved,
// else the image its template names.
func (s *Services) image(ctx context.Context, svc *servingv1.Service) string {
	var image string
	if cs := svc.Spec.Template.Spec.Containers; len(cs) > 0 {
		image = cs[0].Image
	}
	name := svc.Status.LatestReadyRevisionName
	if name == "" {
		return image
	}
	rev := &servingv1.Revision{}
	if err := s.Reader.Get(ctx, types.NamespacedName{Namespace: svc.Namespace, Name: name}, rev); err != nil {
		return image
	}
	for _, c := range rev.Status.ContainerStatuses {
		if c.ImageDigest != "" {
			return c.ImageDigest
		}
	}
	return image
}

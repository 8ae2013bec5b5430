package funclib

import (
	"context"
	"errors"
	"fmt"

	fn "knative.dev/func/pkg/functions"
)

// ErrNotDeployed says a function has no Knative Service.
var ErrNotDeployed = errors.New("the function is not deployed")

// Instance is the runtime state of a deployed function, as func describes it.
type Instance struct {
	Name      string
	Namespace string
	// Route is the primary URL of the function; Routes are all its URLs.
	Route  string
	Routes []string
	// Image is the image the function runs, by digest when known.
	Image         string
	Subscriptions []Subscription
}

// Subscription is a Knative Eventing trigger that delivers events to the function.
type Subscription struct {
	Source string
	Type   string
	Broker string
}

// InstanceSource finds the Instance of a deployed function, or ErrNotDeployed.
// The operator's implementation reads informer caches, not the API server.
type InstanceSource interface {
	Instance(ctx context.Context, name, namespace string) (Instance, error)
}

// Describer describes deployed functions through the func library's client
// (fn.Client.Describe), with the operator's InstanceSource as func's Describer, in
// place of func's default one that builds new API clients on every call.
type Describer struct {
	client *fn.Client
}

// NewDescriber returns a Describer over src.
func NewDescriber(src InstanceSource) *Describer {
	return &Describer{client: fn.New(fn.WithDescribers(describer{src: src}))}
}

// Describe describes function name in namespace: ErrNotDeployed when it has no Service.
func (d *Describer) Describe(ctx context.Context, name, namespace string) (Instance, error) {
	if name == "" || namespace == "" {
		return Instance{}, fmt.Errorf("describing a function needs its name and namespace (got %q, %q)", name, namespace)
	}
	in, err := d.client.Describe(ctx, name, namespace, fn.Function{})
	if err != nil {
		return Instance{}, err
	}
	out := Instance{Name: in.Name, Namespace: in.Namespace, Route: in.Route, Routes: in.Routes, Image: in.Image}
	for _, s := range in.Subscriptions {
		out.Subscriptions = append(out.Subscriptions, Subscription{Source: s.Source, Type: s.Type, Broker: s.Broker})
	}
	return out, nil
}

// describer adapts an InstanceSource to the func library's Describer interface.
type describer struct{ src InstanceSource }

var _ fn.Describer = describer{}

func (d describer) Describe(ctx context.Context, name, namespace string) (fn.Instance, error) {
	in, err := d.src.Instance(ctx, name, namespace)
	if err != nil {
		return fn.Instance{}, err
	}
	out := fn.Instance{Name: in.Name, Namespace: in.Namespace, Route: in.Route, Routes: in.Routes, Image: in.Image}
	for _, s := range in.Subscriptions {
		out.Subscriptions = append(out.Subscriptions, fn.Subscription{Source: s.Source, Type: s.Type, Broker: s.Broker})
	}
	return out, nil
}

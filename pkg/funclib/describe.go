package funclib

import (
	"context"
	"errors"
	"fmt"

	fn "knative.dev/func/pkg/functions"
)

// ErrNotDeployed says a function has nothing deployed by the deployer asked.
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
	// Deployer is the func deployer that deployed the function: knative, raw or keda.
	Deployer string
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
// (fn.Client.Describe), with the operator's InstanceSources as func's Describers, in
// place of func's default ones that build new API clients on every call: one per
// deployer, as func's pipelines provider picks its describer by deployer.
type Describer struct {
	clients map[string]*fn.Client
}

// NewDescriber returns a Describer over knative, the source of Knative Services.
// Sources of other deployers are added with WithSource.
func NewDescriber(knative InstanceSource) *Describer {
	return (&Describer{clients: map[string]*fn.Client{}}).WithSource(DeployerKnative, knative)
}

// WithSource makes d describe the functions of deployer through src, and returns d.
func (d *Describer) WithSource(deployer string, src InstanceSource) *Describer {
	d.clients[deployer] = fn.New(fn.WithDescribers(describer{src: src, deployer: deployer}))
	return d
}

// Describe describes function name in namespace as deployer deployed it:
// ErrNotDeployed when that deployer deployed nothing of that name.
func (d *Describer) Describe(ctx context.Context, deployer, name, namespace string) (Instance, error) {
	if name == "" || namespace == "" {
		return Instance{}, fmt.Errorf("describing a function needs its name and namespace (got %q, %q)", name, namespace)
	}
	c, ok := d.clients[deployer]
	if !ok {
		return Instance{}, fmt.Errorf("describing a function deployed by %q: the operator reads no such deployer's functions", deployer)
	}
	in, err := c.Describe(ctx, name, namespace, fn.Function{})
	if err != nil {
		return Instance{}, err
	}
	out := Instance{Name: in.Name, Namespace: in.Namespace, Route: in.Route, Routes: in.Routes, Image: in.Image, Deployer: in.Deployer}
	for _, s := range in.Subscriptions {
		out.Subscriptions = append(out.Subscriptions, Subscription{Source: s.Source, Type: s.Type, Broker: s.Broker})
	}
	return out, nil
}

// describer adapts an InstanceSource to the func library's Describer interface.
type describer struct {
	src      InstanceSource
	deployer string
}

var _ fn.Describer = describer{}

func (d describer) Describe(ctx context.Context, name, namespace string) (fn.Instance, error) {
	in, err := d.src.Instance(ctx, name, namespace)
	if err != nil {
		return fn.Instance{}, err
	}
	out := fn.Instance{Name: in.Name, Namespace: in.Namespace, Route: in.Route, Routes: in.Routes, Image: in.Image, Deployer: d.deployer}
	for _, s := range in.Subscriptions {
		out.Subscriptions = append(out.Subscriptions, fn.Subscription{Source: s.Source, Type: s.Type, Broker: s.Broker})
	}
	return out, nil
}

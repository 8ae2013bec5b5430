package envtest

import (
	"context"
	"fmt"
	"slices"
	"testing"

	httpv1alpha1 "github.com/kedacore/http-add-on/operator/apis/http/v1alpha1"
	kedaclient "github.com/kedacore/http-add-on/operator/generated/clientset/versioned"
	kedainformers "github.com/kedacore/http-add-on/operator/generated/informers/externalversions"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// KEDAHTTPFinalizer is the finalizer the KEDA HTTP add-on's operator (v0.12.0) sets on
// every HTTPScaledObject and removes once it has cleaned up after a deleted one.
const KEDAHTTPFinalizer = "httpscaledobject.http.keda.sh"

// KEDAHTTPAddOnOptions configure the KEDA HTTP add-on simulation.
type KEDAHTTPAddOnOptions struct {
	// Namespace limits the simulation to one namespace; empty for every namespace.
	Namespace string
	// NotReady, when set, marks the HTTPScaledObjects it returns true for not Ready
	// (reason CreateError), as the add-on does when it cannot make their KEDA
	// ScaledObject. It is asked again at each resync (every second).
	NotReady func(*httpv1alpha1.HTTPScaledObject) bool
	// Logf, when set, logs what the simulation could not write (it retries).
	Logf func(format string, args ...any)
}

// KEDAHTTPAddOn is a running simulation of the KEDA HTTP add-on's operator, which
// needs KEDA itself and does not run in envtest (install the CRD with
// KEDAHTTPCRDs).
//
// It plays what the add-on's operator (v0.12.0) writes on each HTTPScaledObject:
// its finalizer (KEDAHTTPFinalizer), removed again when the object is deleted; and
// its status — targetWorkload (apiVersion/kind/name of spec.scaleTargetRef),
// targetService (service:port) and the Ready condition, True with reason Reconciled
// for the object's generation. It makes no KEDA ScaledObject and scales nothing.
// The simulation writes as the user of the rest.Config it was given.
type KEDAHTTPAddOn struct {
	opts KEDAHTTPAddOnOptions
	c    kedaclient.Interface
	sim  *simulation
}

// SimulateKEDAHTTPAddOn starts the simulation and returns once it watches the
// HTTPScaledObjects; it runs until ctx ends or Stop.
func SimulateKEDAHTTPAddOn(ctx context.Context, cfg *rest.Config, opts KEDAHTTPAddOnOptions) (*KEDAHTTPAddOn, error) {
	cfg = rest.CopyConfig(cfg)
	// The API server warns at each write of the add-on's finalizer, whose name has no
	// path: the add-on's choice, not the test's.
	cfg.WarningHandler = rest.NoWarnings{}
	c, err := kedaclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("KEDA HTTP add-on simulation: creating a client: %w", err)
	}
	a := &KEDAHTTPAddOn{opts: opts, c: c}
	factory := kedainformers.NewSharedInformerFactoryWithOptions(c, kubeletResync, kedainformers.WithNamespace(opts.Namespace))
	informer := factory.Http().V1alpha1().HTTPScaledObjects().Informer()
	a.sim, err = startSimulation(ctx, "KEDA HTTP add-on simulation", informer, factory.Start, factory.Shutdown, func(ctx context.Context, obj any) error {
		hso, ok := obj.(*httpv1alpha1.HTTPScaledObject)
		if !ok {
			return nil
		}
		return a.sync(ctx, hso)
	}, opts.Logf)
	if err != nil {
		return nil, err
	}
	return a, nil
}

// SimulateKEDAHTTPAddOnT starts the simulation for one test (SimulateKEDAHTTPAddOn),
// logging what it could not write, and stops it when the test ends.
func SimulateKEDAHTTPAddOnT(t testing.TB, cfg *rest.Config, opts KEDAHTTPAddOnOptions) *KEDAHTTPAddOn {
	t.Helper()
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	a, err := SimulateKEDAHTTPAddOn(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Stop)
	return a
}

// Resync looks at every HTTPScaledObject again now: after a change of what NotReady
// answers.
func (a *KEDAHTTPAddOn) Resync() { a.sim.resync() }

// Stop stops the simulation and waits for it; it may be called more than once.
func (a *KEDAHTTPAddOn) Stop() { a.sim.stop() }

// sync does what the add-on's reconciler does with hso: finalizer first, then status.
func (a *KEDAHTTPAddOn) sync(ctx context.Context, hso *httpv1alpha1.HTTPScaledObject) error {
	objects := a.c.HttpV1alpha1().HTTPScaledObjects(hso.Namespace)
	has := slices.Contains(hso.Finalizers, KEDAHTTPFinalizer)
	if hso.DeletionTimestamp != nil {
		if !has {
			return nil
		}
		updated := hso.DeepCopy()
		updated.Finalizers = slices.DeleteFunc(updated.Finalizers, func(f string) bool { return f == KEDAHTTPFinalizer })
		if _, err := objects.Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("removing the finalizer of HTTPScaledObject %s/%s: %w", hso.Namespace, hso.Name, err)
		}
		return nil
	}
	if !has {
		updated := hso.DeepCopy()
		updated.Finalizers = append(updated.Finalizers, KEDAHTTPFinalizer)
		if _, err := objects.Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("adding the finalizer of HTTPScaledObject %s/%s: %w", hso.Namespace, hso.Name, err)
		}
		return nil // the update's event syncs the status
	}
	ready := a.opts.NotReady == nil || !a.opts.NotReady(hso.DeepCopy())
	status := KEDAHTTPScaledObjectStatus(hso, ready)
	if equality.Semantic.DeepEqual(status, hso.Status) {
		return nil
	}
	updated := hso.DeepCopy()
	updated.Status = status
	if _, err := objects.UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("writing the status of HTTPScaledObject %s/%s: %w", hso.Namespace, hso.Name, err)
	}
	return nil
}

// KEDAHTTPScaledObjectStatus returns the status the KEDA HTTP add-on's operator
// (v0.12.0) writes on hso once it made (ready) or failed to make its KEDA
// ScaledObject. The Ready condition's last transition time is kept while its status
// is unchanged.
func KEDAHTTPScaledObjectStatus(hso *httpv1alpha1.HTTPScaledObject, ready bool) httpv1alpha1.HTTPScaledObjectStatus {
	status := *hso.Status.DeepCopy()
	ref := hso.Spec.ScaleTargetRef
	status.TargetWorkload = fmt.Sprintf("%s/%s/%s", ref.APIVersion, ref.Kind, ref.Name)
	status.TargetService = fmt.Sprintf("%s:%d", ref.Service, ref.Port)
	condition := metav1.Condition{
		Type:               httpv1alpha1.ConditionTypeReady,
		Status:             metav1.ConditionTrue,
		ObservedGeneration: hso.Generation,
		Reason:             httpv1alpha1.ConditionReasonReconciled,
		Message:            "ScaledObject created and configured",
	}
	if !ready {
		condition.Status = metav1.ConditionFalse
		condition.Reason = httpv1alpha1.ConditionReasonCreateError
		condition.Message = "Failed to create scaled objects: held not ready by the KEDA HTTP add-on simulation"
	}
	meta.SetStatusCondition(&status.Conditions, condition)
	return status
}

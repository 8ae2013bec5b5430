package envtest

import (
	"testing"
	"time"
)

// GarbageCollectorResync is how often the garbage collector asks discovery for the
// resources to watch, a period kube-controller-manager fixes (no flag sets it). A
// dependent of a CRD installed after StartGarbageCollector, or owned by one, is
// collected only once its resource is watched: up to this long after the install.
// Stopping the collector and starting it again (under a second) is quicker.
const GarbageCollectorResync = 30 * time.Second

// GarbageCollectorControllers are the controllers StartGarbageCollector runs: the
// garbage collector, and pvc-protection, which removes the
// kubernetes.io/pvc-protection finalizer of a deleted PVC no running pod uses, as on
// a cluster (without it, a PVC the collector deletes stays Terminating).
func GarbageCollectorControllers() []string {
	return []string{GarbageCollectorController, PVCProtectionController}
}

// StartGarbageCollector starts, against the control plane, the Kubernetes garbage
// collector: $KUBEBUILDER_ASSETS/kube-controller-manager with only the controllers
// GarbageCollectorControllers names, as the admin user of e.Config. It returns once
// the collector watches every resource discovery lists (CRDs included: install them
// before, or see GarbageCollectorResync for one installed after). Deleting an owner
// then deletes, in the background, every object whose ownerReferences name it (by
// UID) and no other live owner. stop stops it (SIGTERM, SIGKILL after 10s), waits for
// it, and fails when it had exited before; it may be called more than once.
func (e *Environment) StartGarbageCollector() (stop func() error, err error) {
	return e.StartControllers(GarbageCollectorControllers()...)
}

// StartGarbageCollectorT starts the garbage collector for one test
// (StartGarbageCollector) and stops it when the test ends, after logging the last of
// its log when the test failed. The stop it returns stops it sooner.
func (e *Environment) StartGarbageCollectorT(t testing.TB) (stop func() error) {
	t.Helper()
	return e.StartControllersT(t, GarbageCollectorControllers()...)
}

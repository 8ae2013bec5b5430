// Package workload reads the functions that func's raw and keda deployers deployed
// — a Deployment and a core Service of the function's name, and for keda an
// HTTPScaledObject of the KEDA HTTP add-on — from the operator's informer caches
// (Workloads), and says from them alone whether such a function serves (Readiness).
// The cache transforms that keep those objects small are here too (Slim).
//
// It reads, never writes, and must not import pkg/reconciler or pkg/operator (depguard
// rule top): the Reconciler calls it through workload.Workloads, as it calls
// pkg/knative for Knative Services. The func library is reached through pkg/funclib.
package workload

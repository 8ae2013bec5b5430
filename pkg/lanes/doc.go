// Package lanes keeps one remote host, and one tenant (namespace), from holding
// every worker of the Function controller: the per-host and per-(host, namespace)
// lanes a remote read enters (Lanes), the keys that name a host (GitHost,
// RegistryHost), and the wait of a Function without a free lane (Busy, told by
// IsHostBusy, never by its reason).
//
// It is pure: no client, no control plane. It must not import pkg/reconciler (the
// Reconciler uses it, not the other way round).
package lanes

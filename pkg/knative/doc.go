// Package knative reads deployed functions' Knative Services and Revisions from the
// operator's informer caches (Services), and slims the Triggers the operator watches.
//
// It reads, never writes, and must not import pkg/reconciler or pkg/operator (depguard
// rule top): the Reconciler calls it through knative.Services.
package knative

// Package knative reads deployed functions' Knative Services and Revisions from the operator's informer caches.
package knative

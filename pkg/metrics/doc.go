// Package metrics holds the operator's Prometheus metrics, registered on the manager's
// registry.
//
// It imports no other package of the operator (depguard rule floor): the packages that
// count import it.
package metrics

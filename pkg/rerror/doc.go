// Package rerror classifies why a reconcile step stopped: stalling, waiting or
// transient.
//
// Callers branch on the kind (IsStalling, IsWaiting, IsTransient) or on a typed cause
// in the chain, never on Reason: that is the condition reason users see. It imports no
// other package of the operator (depguard rule floor): every step's package uses it.
package rerror

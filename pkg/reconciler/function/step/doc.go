// Package step holds what every step of the Function reconcile shares, whichever
// package it lives in (the Function reconciler, its build sub-reconciler): the Result
// a step asks of the end of its reconcile, and the one way a failure marks its
// condition (MarkedBy).
//
// It imports no package of the operator but the API and rerror; the reconcilers
// import it, never the other way round.
package step

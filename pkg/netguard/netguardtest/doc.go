// Package netguardtest helps test what goes through the operator's network guard: an
// HTTP CONNECT proxy that never leaves the loopback.
//
// Only tests import it; it imports no other package of the operator (depguard rule
// floor).
package netguardtest

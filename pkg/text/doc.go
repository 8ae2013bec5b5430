// Package text cuts text to a number of bytes without splitting a character: the one
// cutter of the operator's messages, conditions, Events and cached objects (netguard's
// caps, Knative's attributes, func.yaml's errors, a build's messages).
//
// It imports no package of the operator (depguard rule floor), so every package may
// use it.
package text

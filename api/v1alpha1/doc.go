// Package v1alpha1 holds the functions.dev/v1alpha1 API: the Function resource, its
// status and its ConditionSet (function_lifecycle.go: MarkXxx helpers), and the
// reasons users read. Every other package may import it; it imports no other package
// of the operator (depguard rule floor): an API that moves with the code behind it
// breaks the users who wrote against it.
// +kubebuilder:object:generate=true
// +groupName=functions.dev
package v1alpha1

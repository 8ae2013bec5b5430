// Package v1alpha1 holds the functions.dev/v1alpha1 API: the Function resource.
// +kubebuilder:object:generate=true
// +groupName=functions.dev
package v1alpha1

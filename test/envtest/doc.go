// Package envtest starts a real kube-apiserver and etcd with the operator's CRDs installed, for tests.
package envtest

// Package envtest starts a real kube-apiserver and etcd with the operator's CRDs
// installed, for tests, and what runs around them there: the real
// kube-controller-manager controllers asked for (the garbage collector, the
// deployment and replicaset controllers: controllers.go), and simulations, named as
// such, of what cannot run without nodes, a data plane or KEDA: a kubelet for the
// pods of ReplicaSets (kubelet.go), Knative's autoscaler (autoscaler.go) and
// networking layer (networking.go), around the real Knative Serving controller
// (test/knative), and the KEDA HTTP add-on's operator (keda.go).
//
// It is test support: no package of the operator's binary imports it, and it
// imports none of the operator's packages.
package envtest

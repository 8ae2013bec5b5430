// Package funclib is the only package that imports knative.dev/func: every call into
// the func library goes through it, so a func upgrade touches this package alone.
//
// It owns func.yaml loading (subpackage funcyaml, re-exported here), the func middleware table, the Tekton pipeline and task
// objects func builds with, and the cluster clients func needs. Only it may import
// knative.dev/func (depguard rule func-adapter), and it imports no other package of the
// operator (depguard rule floor; its tests may): the operator's packages call it, never
// the other way.
package funclib

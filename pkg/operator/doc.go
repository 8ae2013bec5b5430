// Package operator assembles the func-operator manager: scheme, caches (and the
// transforms that keep them slim), controllers, the rebuild machinery
// (rebuild.Builds), the tenancy and lane parts, push receivers, probes and metrics,
// from Options the binary's flags fill. It is the one place where the parts are
// wired together; its tests (TestOperator_*) run the manager in-process as the
// binary wires it.
//
// Only cmd/func-operator and tests import it (depguard rule top): the parts it wires
// never import it back.
package operator

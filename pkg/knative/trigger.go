package knative

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	eventingv1 "knative.dev/eventing/pkg/apis/eventing/v1"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"

	"github.com/fnops/func-operator/pkg/text"
)

// MaxAttributeBytes bounds a Trigger's broker name and filter attribute values as
// the operator keeps and reports them: build code (which may create Triggers as the
// build ServiceAccount) or a tenant could write filters of any length, into every
// replica's cache and every Function's status. A longer value is cut, ending in "...".
const MaxAttributeBytes = 256

// maxHostBytes is the longest host (a DNS name, and a port) a subscriber URI may
// have and still name a Service's address.
const maxHostBytes = 253 + len(":65535")

// SlimTrigger is the cache's transform of a Trigger: it keeps only what the
// operator reads (subscribesTo, the Function mapping, status.service.subscriptions):
// the broker, the source and type filter attributes, each cut to MaxAttributeBytes,
// and the subscriber. Labels, annotations, managedFields, other filters, delivery
// and status are dropped, so that a cached Trigger costs a few hundred bytes however
// large the stored one is.
func SlimTrigger(o any) (any, error) {
	t, ok := o.(*eventingv1.Trigger)
	if !ok {
		return o, nil
	}
	slim := &eventingv1.Trigger{TypeMeta: t.TypeMeta, ObjectMeta: metav1.ObjectMeta{
		Name: t.Name, Namespace: t.Namespace, UID: t.UID, ResourceVersion: t.ResourceVersion,
		Generation: t.Generation, DeletionTimestamp: t.DeletionTimestamp,
	}}
	slim.Spec.Broker = Cut(t.Spec.Broker, MaxAttributeBytes)
	if f := t.Spec.Filter; f != nil {
		attrs := map[string]string{}
		for _, k := range []string{"source", "type"} {
			if v, ok := f.Attributes[k]; ok {
				attrs[k] = Cut(v, MaxAttributeBytes)
			}
		}
		slim.Spec.Filter = &eventingv1.TriggerFilter{Attributes: attrs}
	}
	if ref := t.Spec.Subscriber.Ref; ref != nil {
		slim.Spec.Subscriber.Ref = &duckv1.KReference{Kind: ref.Kind, Name: ref.Name, APIVersion: ref.APIVersion, Namespace: ref.Namespace}
	}
	if u := t.Spec.Subscriber.URI; u != nil && len(u.Host) <= maxHostBytes && len(u.Path) <= MaxAttributeBytes {
		// subscribesTo compares the host and the path: nothing else is kept. A longer
		// host (no DNS name is) or path is dropped: it matches no Service's address.
		slim.Spec.Subscriber.URI = &apis.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}
	}
	return slim, nil
}

// Cut returns s if it has at most max bytes, else its longest prefix of whole
// characters that fits in max bytes with "..." after it.
func Cut(s string, max int) string { return text.Cut(s, max, "...") }

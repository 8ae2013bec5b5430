package hygiene

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/fnops/func-operator/test/envtest"
)

// TestNetworkPolicy_MetricsFromPrometheusOnly: config/'s NetworkPolicy opens the
// Deployment's metrics port only to pods that a namespace selector and a pod selector
// both pick (Prometheus's: an example an admin adjusts), never to any source: each
// scrape that reaches it costs the API server a TokenReview. Positive controls: the
// metrics port in the rule that admits any source, and a peer of a namespace
// selector alone, are reported.
func TestNetworkPolicy_MetricsFromPrometheusOnly(t *testing.T) {
	d, np := shippedNetworkPolicy(t)
	if problems := metricsSourceProblems(d, np); len(problems) > 0 {
		t.Errorf("%s: %v", envtest.NetworkPolicyFile, problems)
	}

	open := np.DeepCopy()
	for i := range open.Spec.Ingress {
		if len(open.Spec.Ingress[i].From) == 0 {
			open.Spec.Ingress[i].Ports = append(open.Spec.Ingress[i].Ports, networkingv1.NetworkPolicyPort{Port: ptrTo(intstr.FromString("metrics"))})
		}
	}
	namespaceOnly := np.DeepCopy()
	for i := range namespaceOnly.Spec.Ingress {
		for j := range namespaceOnly.Spec.Ingress[i].From {
			namespaceOnly.Spec.Ingress[i].From[j].PodSelector = nil
		}
	}
	for name, tt := range map[string]struct {
		np   *networkingv1.NetworkPolicy
		want []string
	}{
		"metrics from any source":    {open, []string{"ingress rule 1 opens the metrics port to any source"}},
		"a namespace selector alone": {namespaceOnly, []string{"ingress rule 0 peer 0 is not a namespace selector with a pod selector"}},
	} {
		if diff := cmp.Diff(tt.want, metricsSourceProblems(d, tt.np)); diff != "" {
			t.Errorf("%s: problems (-want +got):\n%s", name, diff)
		}
	}
}

// metricsSourceProblems lists the rules of np that open d's container port named
// metrics to more than a namespace and pod selector's pods.
func metricsSourceProblems(d *appsv1.Deployment, np *networkingv1.NetworkPolicy) []string {
	var port int32
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == "metrics" {
				port = p.ContainerPort
			}
		}
	}
	if port == 0 {
		return []string{"the Deployment has no port named metrics"}
	}
	var out []string
	opened := false
	for i, r := range np.Spec.Ingress {
		metrics := false
		for _, p := range r.Ports {
			if p.Port != nil && (p.Port.String() == "metrics" || (p.Port.Type == intstr.Int && p.Port.IntVal == port)) {
				metrics = true
			}
		}
		if !metrics {
			continue
		}
		opened = true
		if len(r.From) == 0 {
			out = append(out, fmt.Sprintf("ingress rule %d opens the metrics port to any source", i))
		}
		for j, peer := range r.From {
			if peer.IPBlock != nil || emptySelector(peer.NamespaceSelector) || emptySelector(peer.PodSelector) {
				out = append(out, fmt.Sprintf("ingress rule %d peer %d is not a namespace selector with a pod selector", i, j))
			}
		}
	}
	if !opened {
		out = append(out, "no rule opens the metrics port")
	}
	return out
}

// emptySelector is true for no selector, or one that selects everything.
func emptySelector(s *metav1.LabelSelector) bool {
	return s == nil || (len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0)
}

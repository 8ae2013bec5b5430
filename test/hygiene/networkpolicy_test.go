package hygiene

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/fnops/func-operator/test/envtest"
)

// TestNetworkPolicy_OpensTheDeploymentsPorts reads config/'s NetworkPolicy and
// Deployment: the policy selects the operator's pods in their namespace, restricts
// their ingress, and opens exactly the ports the Deployment's containers declare
// (metrics, probes, the push webhook receiver), each by a name or number that resolves
// to one of them, and nothing else (no rule without ports, no port range).
func TestNetworkPolicy_OpensTheDeploymentsPorts(t *testing.T) {
	d, np := shippedNetworkPolicy(t)
	if problems := policyProblems(d, np); len(problems) > 0 {
		t.Errorf("%s against %s:\n%v", envtest.NetworkPolicyFile, envtest.DeploymentFile, problems)
	}
	// All three listeners are there: a port dropped from both files would pass above.
	var names []string
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, p := range c.Ports {
			names = append(names, p.Name)
		}
	}
	slices.Sort(names)
	if diff := cmp.Diff([]string{"metrics", "probes", "webhook"}, names); diff != "" {
		t.Errorf("the Deployment's container ports (-want +got):\n%s", diff)
	}
}

// TestNetworkPolicy_Problems: policyProblems catches what would open more, or less,
// than the Deployment's ports.
func TestNetworkPolicy_Problems(t *testing.T) {
	sel := map[string]string{"app": "op"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "op"}, Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: sel},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Ports: []corev1.ContainerPort{
			{Name: "metrics", ContainerPort: 8443}, {Name: "probes", ContainerPort: 8081},
		}}}},
	}}}
	tcp := corev1.ProtocolTCP
	port := func(p intstr.IntOrString) networkingv1.NetworkPolicyPort {
		return networkingv1.NetworkPolicyPort{Protocol: &tcp, Port: &p}
	}
	policy := func(edit func(*networkingv1.NetworkPolicy)) *networkingv1.NetworkPolicy {
		np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "op"}, Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: sel},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress:     []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{port(intstr.FromString("metrics")), port(intstr.FromInt32(8081))}}},
		}}
		if edit != nil {
			edit(np)
		}
		return np
	}
	for _, tt := range []struct {
		name string
		np   *networkingv1.NetworkPolicy
		want []string
	}{
		{name: "exactly the ports", np: policy(nil)},
		{name: "another namespace", np: policy(func(np *networkingv1.NetworkPolicy) { np.Namespace = "other" }),
			want: []string{`namespace "other", want the Deployment's "op"`}},
		{name: "other pods", np: policy(func(np *networkingv1.NetworkPolicy) { np.Spec.PodSelector.MatchLabels = map[string]string{"app": "x"} }),
			want: []string{"the pod selector does not select the Deployment's pods"}},
		{name: "no Ingress policy type", np: policy(func(np *networkingv1.NetworkPolicy) {
			np.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
		}),
			want: []string{"policyTypes [Egress] do not restrict ingress"}},
		{name: "a rule without ports", np: policy(func(np *networkingv1.NetworkPolicy) {
			np.Spec.Ingress = append(np.Spec.Ingress, networkingv1.NetworkPolicyIngressRule{})
		}), want: []string{"ingress rule 1 opens every port"}},
		{name: "a port the pods do not declare", np: policy(func(np *networkingv1.NetworkPolicy) {
			np.Spec.Ingress[0].Ports = append(np.Spec.Ingress[0].Ports, port(intstr.FromInt32(9090)))
		}), want: []string{"ingress rule 0 opens 9090/TCP, no port of the Deployment"}},
		{name: "an unknown port name", np: policy(func(np *networkingv1.NetworkPolicy) {
			np.Spec.Ingress[0].Ports[0] = port(intstr.FromString("metric"))
		}), want: []string{`ingress rule 0 opens port "metric", which no container names`, "8443/TCP (metrics) is not opened"}},
		{name: "a range", np: policy(func(np *networkingv1.NetworkPolicy) {
			np.Spec.Ingress[0].Ports[1].EndPort = ptrTo[int32](9000)
		}), want: []string{"ingress rule 0 opens a range from 8081", "8081/TCP (probes) is not opened"}},
		{name: "a port left out", np: policy(func(np *networkingv1.NetworkPolicy) { np.Spec.Ingress[0].Ports = np.Spec.Ingress[0].Ports[:1] }),
			want: []string{"8081/TCP (probes) is not opened"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, policyProblems(d, tt.np)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

// policyProblems lists how np fails to open exactly d's container ports to ingress.
func policyProblems(d *appsv1.Deployment, np *networkingv1.NetworkPolicy) []string {
	var out []string
	if np.Namespace != d.Namespace {
		out = append(out, fmt.Sprintf("namespace %q, want the Deployment's %q", np.Namespace, d.Namespace))
	}
	if sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector); err != nil || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
		out = append(out, "the pod selector does not select the Deployment's pods")
	}
	if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) {
		out = append(out, fmt.Sprintf("policyTypes %v do not restrict ingress", np.Spec.PolicyTypes))
	}
	type key struct {
		port  int32
		proto corev1.Protocol
	}
	declared, byName := map[key]string{}, map[string]key{}
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, p := range c.Ports {
			k := key{p.ContainerPort, orTCP(p.Protocol)}
			declared[k] = p.Name
			if p.Name != "" {
				byName[p.Name] = k
			}
		}
	}
	opened := map[key]bool{}
	for i, r := range np.Spec.Ingress {
		if len(r.Ports) == 0 {
			out = append(out, fmt.Sprintf("ingress rule %d opens every port", i))
		}
		for _, p := range r.Ports {
			var proto corev1.Protocol
			if p.Protocol != nil {
				proto = *p.Protocol
			}
			switch {
			case p.Port == nil:
				out = append(out, fmt.Sprintf("ingress rule %d opens every port of %s", i, orTCP(proto)))
			case p.EndPort != nil:
				out = append(out, fmt.Sprintf("ingress rule %d opens a range from %s", i, p.Port.String()))
			case p.Port.Type == intstr.String:
				k, ok := byName[p.Port.StrVal]
				if !ok || k.proto != orTCP(proto) {
					out = append(out, fmt.Sprintf("ingress rule %d opens port %q, which no container names", i, p.Port.StrVal))
					continue
				}
				opened[k] = true
			default:
				k := key{p.Port.IntVal, orTCP(proto)}
				if _, ok := declared[k]; !ok {
					out = append(out, fmt.Sprintf("ingress rule %d opens %d/%s, no port of the Deployment", i, k.port, k.proto))
					continue
				}
				opened[k] = true
			}
		}
	}
	var missing []string
	for k, name := range declared {
		if !opened[k] {
			missing = append(missing, fmt.Sprintf("%d/%s (%s) is not opened", k.port, k.proto, name))
		}
	}
	slices.Sort(missing)
	return append(out, missing...)
}

// orTCP is p, or TCP (the default of a container port and a NetworkPolicy port) when empty.
func orTCP(p corev1.Protocol) corev1.Protocol {
	if p == "" {
		return corev1.ProtocolTCP
	}
	return p
}

// shippedNetworkPolicy reads config/'s Deployment and its one NetworkPolicy.
func shippedNetworkPolicy(t *testing.T) (*appsv1.Deployment, *networkingv1.NetworkPolicy) {
	t.Helper()
	d, err := envtest.ShippedDeployment()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := envtest.Read(envtest.NetworkPolicyFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 || objs[0].GetKind() != "NetworkPolicy" {
		t.Fatalf("%s holds %d objects, want one NetworkPolicy", envtest.NetworkPolicyFile, len(objs))
	}
	np := &networkingv1.NetworkPolicy{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(objs[0].Object, np); err != nil {
		t.Fatal(err)
	}
	return d, np
}

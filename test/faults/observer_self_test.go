package faults

import (
	"context"
	"strings"
	"testing"

	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/operator"
	"github.com/fnops/func-operator/pkg/reconciler/function/resources"
)

// TestObserver_Counts is the positive control of the suite's counters: each counts
// what it must, and nothing else.
func TestObserver_Counts(t *testing.T) {
	o := newObserver([]string{"s3cr3t"})
	fn := func(ready corev1.ConditionStatus) *v1alpha1.Function {
		f := &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "fn"}}
		f.Status.Conditions = duckv1.Conditions{{Type: apis.ConditionReady, Status: ready}}
		return f
	}
	o.function(fn(corev1.ConditionFalse))
	o.function(fn(corev1.ConditionTrue))
	o.function(fn(corev1.ConditionTrue))
	if flaps, _ := o.counts(); len(flaps) != 0 {
		t.Errorf("flaps = %q before any, want none", flaps)
	}
	o.function(fn(corev1.ConditionUnknown))
	if flaps, _ := o.counts(); len(flaps) != 1 || !strings.Contains(flaps[0], "ns/fn") {
		t.Errorf("flaps = %q, want the one True -> Unknown", flaps)
	}
	// A Function a fault makes unhealthy on purpose: its Ready going down is counted
	// apart, and no flap, until the fault is over.
	o.expectUnhealthy("ns/fn", true)
	o.function(fn(corev1.ConditionTrue))
	o.function(fn(corev1.ConditionFalse))
	o.function(fn(corev1.ConditionTrue))
	if downs, ready := o.readyDowns("ns/fn"); downs != 1 || !ready {
		t.Errorf("readyDowns = %d, %v; want 1, Ready last", downs, ready)
	}
	o.expectUnhealthy("ns/fn", false)
	if flaps, _ := o.counts(); len(flaps) != 1 {
		t.Errorf("flaps = %q, want only the first: the unhealthy one's down was meant", flaps)
	}
	o.function(fn(corev1.ConditionFalse))
	if flaps, _ := o.counts(); len(flaps) != 2 {
		t.Errorf("flaps = %q, want a second once the fault is over", flaps)
	}
	if leaks := o.statusLeaks(); len(leaks) != 0 {
		t.Errorf("leaks = %q before any, want none", leaks)
	}
	leaky := fn(corev1.ConditionFalse)
	leaky.Status.Conditions[0].Message = "token s3cr3t"
	o.function(leaky)
	if leaks := o.statusLeaks(); len(leaks) != 1 || strings.Contains(leaks[0], "s3cr3t") {
		t.Errorf("leaks = %q, want the one status, without the value", leaks)
	}

	run := func(uid string, succeeded corev1.ConditionStatus) *pipelinev1.PipelineRun {
		pr := &pipelinev1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: uid, UID: types.UID(uid),
			Labels: map[string]string{resources.LabelFunction: "fn"}}}
		if succeeded != "" {
			pr.Status.SetCondition(&apis.Condition{Type: apis.ConditionSucceeded, Status: succeeded})
		}
		return pr
	}
	o.run(run("a", ""), false)
	o.run(run("a", corev1.ConditionFalse), false) // failed: a retry is no duplicate
	o.run(run("b", ""), false)
	if _, dups := o.counts(); len(dups) != 0 {
		t.Errorf("duplicates = %q after a failed run and its retry, want none", dups)
	}
	o.run(run("c", ""), false) // while b runs
	o.run(run("c", ""), true)
	o.run(run("b", corev1.ConditionTrue), false)
	o.run(run("d", ""), false) // after b succeeded
	o.run(run("e", ""), true)  // first seen deleted: created all the same
	if _, dups := o.counts(); len(dups) != 3 || !strings.Contains(dups[0], "while") || !strings.Contains(dups[1], "after a build of it succeeded") {
		t.Errorf("duplicates = %q, want c (b still ran), d and e (b succeeded)", dups)
	}
	if n := o.runsOf("ns/fn"); n != 5 {
		t.Errorf("runsOf = %d, want 5", n)
	}
}

// TestSecretLeaks is the positive control of the Secret check: a value in an Event,
// a status or the output is found, and named without the value.
func TestSecretLeaks(t *testing.T) {
	scheme, err := operator.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	const secret = "s3cr3t-value"
	fn := &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "fn"}}
	fn.Status.Conditions = duckv1.Conditions{{Type: apis.ConditionReady, Status: corev1.ConditionFalse, Message: "token " + secret}}
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ev"}, Message: "clean"}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(fn, ev).Build()
	leaks, err := secretLeaks(context.Background(), c, "log line "+secret, []string{secret})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"secret #1 (12 characters) in status of Function ns/fn", "secret #1 (12 characters) in the operator's output"}
	if strings.Join(leaks, "|") != strings.Join(want, "|") {
		t.Errorf("leaks = %q, want %q", leaks, want)
	}
	for _, l := range leaks {
		if strings.Contains(l, secret) {
			t.Errorf("a leak report shows the value: %q", l)
		}
	}
}

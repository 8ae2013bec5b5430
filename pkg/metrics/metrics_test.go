package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"knative.dev/pkg/apis"
)

func TestMetrics(t *testing.T) {
	running, waiting := 1, 3
	m := New(func() (int, int) { return running, waiting })
	reg := prometheus.NewPedanticRegistry()
	for _, c := range m.Collectors() {
		reg.MustRegister(c)
	}
	a := types.NamespacedName{Namespace: "team-a", Name: "hello"}
	b := types.NamespacedName{Namespace: "team-b", Name: "echo"}

	m.Conditions(a, []apis.Condition{
		{Type: apis.ConditionReady, Status: corev1.ConditionUnknown, Reason: "Rebuilding"},
		{Type: "MiddlewareUpToDate", Status: corev1.ConditionUnknown, Reason: "Rebuilding"},
	}, true)
	m.Conditions(b, []apis.Condition{{Type: apis.ConditionReady, Status: corev1.ConditionTrue}}, false)
	// A later reconcile replaces a Function's series: the Unknown ones go.
	m.Conditions(a, []apis.Condition{
		{Type: apis.ConditionReady, Status: corev1.ConditionTrue},
		{Type: "MiddlewareUpToDate", Status: corev1.ConditionFalse, Reason: "AutoUpdateDisabled", Severity: apis.ConditionSeverityInfo},
	}, true)
	m.Rebuild(ResultSucceeded, 90*time.Second)
	m.Rebuild(ResultFailed, -1) // duration unknown
	m.GitFetch(GitListRefs, 20*time.Millisecond)

	want := `
# HELP func_operator_function_condition 1 for the status, reason and severity of each condition of each Function (Unknown while reconciling); severity Info conditions never gate Ready; the series go with the Function.
# TYPE func_operator_function_condition gauge
func_operator_function_condition{name="echo",namespace="team-b",reason="",severity="Error",status="True",type="Ready"} 1
func_operator_function_condition{name="hello",namespace="team-a",reason="",severity="Error",status="True",type="Ready"} 1
func_operator_function_condition{name="hello",namespace="team-a",reason="AutoUpdateDisabled",severity="Info",status="False",type="MiddlewareUpToDate"} 1
# HELP func_operator_rebuilds_total Rebuilds that ended, by result (succeeded, failed).
# TYPE func_operator_rebuilds_total counter
func_operator_rebuilds_total{result="failed"} 1
func_operator_rebuilds_total{result="succeeded"} 1
# HELP func_operator_build_queue_length Rebuilds waiting for a slot of the fleet budget (ConfigMap maxConcurrentBuilds).
# TYPE func_operator_build_queue_length gauge
func_operator_build_queue_length 3
# HELP func_operator_builds_running Rebuilds holding a slot of the fleet budget.
# TYPE func_operator_builds_running gauge
func_operator_builds_running 1
# HELP func_operator_middleware_outdated_functions Functions whose middleware is outdated (a rebuild would bring newer middleware).
# TYPE func_operator_middleware_outdated_functions gauge
func_operator_middleware_outdated_functions 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "func_operator_function_condition", "func_operator_rebuilds_total",
		"func_operator_build_queue_length", "func_operator_builds_running", "func_operator_middleware_outdated_functions"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(m.buildDuration); n != 1 {
		t.Errorf("build duration histograms = %d, want 1", n)
	}
	if n := testutil.CollectAndCount(m.gitDuration); n != 1 {
		t.Errorf("git duration series = %d, want 1 (ls-remote)", n)
	}

	// Outdated counts Functions; Forget takes a Function's series away.
	m.Conditions(b, []apis.Condition{{Type: "MiddlewareUpToDate", Status: corev1.ConditionFalse, Reason: "RebuildQueued"}}, true)
	m.Forget(a)
	if got := testutil.CollectAndCount(m.condition); got != 1 {
		t.Errorf("%d condition series after Forget, want 1 (echo's)", got)
	}
	want = `
# HELP func_operator_middleware_outdated_functions Functions whose middleware is outdated (a rebuild would bring newer middleware).
# TYPE func_operator_middleware_outdated_functions gauge
func_operator_middleware_outdated_functions 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "func_operator_middleware_outdated_functions"); err != nil {
		t.Error(err)
	}

	var none *Metrics // a nil Metrics records nothing, and does not panic
	none.Conditions(a, nil, true)
	none.Forget(a)
	none.Rebuild(ResultSucceeded, time.Second)
	none.GitFetch(GitClone, time.Second)
}

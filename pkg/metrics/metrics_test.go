package metrics

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
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
	if got := testutil.CollectAndCount(conditionCollector{m}); got != 1 {
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

func TestMetrics_CheckAge(t *testing.T) {
	m := New(func() (int, int) { return 0, 0 })
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	m.clock = clk
	reg := prometheus.NewPedanticRegistry()
	for _, c := range m.Collectors() {
		reg.MustRegister(c)
	}
	age := func() float64 {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "func_operator_check_age_max_seconds" {
				return mf.GetMetric()[0].GetGauge().GetValue()
			}
		}
		t.Fatal("func_operator_check_age_max_seconds not gathered")
		return 0
	}
	a := types.NamespacedName{Namespace: "team-a", Name: "hello"}
	b := types.NamespacedName{Namespace: "team-b", Name: "echo"}
	if got := age(); got != 0 {
		t.Errorf("with no Function: %v, want 0", got)
	}
	m.Checked(a, true)
	clk.Step(30 * time.Second)
	m.Checked(b, true)
	clk.Step(10 * time.Second)
	if got := age(); got != 40 {
		t.Errorf("oldest check age = %v, want 40 (a's)", got)
	}
	m.Checked(a, false) // suspended: not counted
	if got := age(); got != 10 {
		t.Errorf("with a suspended: %v, want 10 (b's)", got)
	}
	m.Forget(b)
	if got := age(); got != 0 {
		t.Errorf("after b is deleted: %v, want 0", got)
	}
}

// TestMetrics_GatherWhileConditionsChange: a scrape while reconciles replace condition
// series must not deadlock. (It did: Conditions held the lock the gauges of Gather
// wait for while it waited for the vector Gather was collecting.)
func TestMetrics_GatherWhileConditionsChange(t *testing.T) {
	m := New(func() (int, int) { return 0, 0 })
	reg := prometheus.NewPedanticRegistry()
	for _, c := range m.Collectors() {
		reg.MustRegister(c)
	}
	conds := []apis.Condition{
		{Type: apis.ConditionReady, Status: corev1.ConditionTrue},
		{Type: "SourceReady", Status: corev1.ConditionTrue},
		{Type: "MiddlewareUpToDate", Status: corev1.ConditionFalse, Reason: "MiddlewareOutdated"},
	}
	const fns = 3000
	for i := 0; i < fns; i++ {
		m.Conditions(types.NamespacedName{Namespace: "ns", Name: fmt.Sprint("fn-", i)}, conds, i%2 == 0)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		stop := time.Now().Add(2 * time.Second)
		for i := 0; time.Now().Before(stop); i++ {
			key := types.NamespacedName{Namespace: "ns", Name: fmt.Sprint("fn-", i%fns)}
			m.Conditions(key, conds, i%3 == 0)
			m.Checked(key, true)
		}
	}()
	scraped := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-done:
				scraped <- n
				return
			default:
			}
			if _, err := reg.Gather(); err != nil {
				t.Error(err)
			}
			n++
		}
	}()
	select {
	case n := <-scraped:
		if n == 0 {
			t.Fatal("no scrape ran while the conditions changed")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("deadlock: a scrape and the conditions changing are stuck after 20s")
	}
}

// TestMetrics_Fleet: func_operator_functions counts the Functions of each namespace by
// condition, status and reason, with the per-Function series or without them.
func TestMetrics_Fleet(t *testing.T) {
	ready := apis.Condition{Type: apis.ConditionReady, Status: corev1.ConditionTrue}
	notReady := apis.Condition{Type: apis.ConditionReady, Status: corev1.ConditionFalse, Reason: "BuildFailed"}
	source := apis.Condition{Type: "SourceReady", Status: corev1.ConditionTrue}
	unreachable := apis.Condition{Type: "SourceReachable", Status: corev1.ConditionFalse, Reason: "GitTimedOut", Severity: apis.ConditionSeverityWarning}
	fleet := `
# HELP func_operator_functions Functions of each namespace by the status and reason of each of their conditions (type): the fleet's view, bounded by namespaces, condition types and the closed set of reasons, not by Functions.
# TYPE func_operator_functions gauge
func_operator_functions{namespace="team-a",reason="",status="True",type="Ready"} 2
func_operator_functions{namespace="team-a",reason="",status="True",type="SourceReady"} 3
func_operator_functions{namespace="team-a",reason="BuildFailed",status="False",type="Ready"} 1
func_operator_functions{namespace="team-a",reason="GitTimedOut",status="False",type="SourceReachable"} 1
func_operator_functions{namespace="team-b",reason="",status="True",type="Ready"} 1
`
	for _, tc := range []struct {
		name        string
		opts        []Option
		perFunction int // func_operator_function_condition series
	}{
		{name: "per-Function series (the default)", perFunction: 8},
		{name: "without per-Function series", opts: []Option{WithoutFunctionConditions()}, perFunction: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := New(func() (int, int) { return 0, 0 }, tc.opts...)
			reg := prometheus.NewPedanticRegistry()
			for _, c := range m.Collectors() {
				reg.MustRegister(c)
			}
			fn := func(ns, name string) types.NamespacedName { return types.NamespacedName{Namespace: ns, Name: name} }
			m.Conditions(fn("team-a", "one"), []apis.Condition{ready, source}, false)
			m.Conditions(fn("team-a", "two"), []apis.Condition{ready, source, unreachable}, false)
			m.Conditions(fn("team-a", "three"), []apis.Condition{notReady, source}, true)
			m.Conditions(fn("team-b", "four"), []apis.Condition{ready}, false)
			m.Conditions(fn("team-b", "gone"), []apis.Condition{notReady}, false)
			m.Forget(fn("team-b", "gone"))
			if err := testutil.GatherAndCompare(reg, strings.NewReader(fleet), "func_operator_functions"); err != nil {
				t.Error(err)
			}
			got, err := testutil.GatherAndCount(reg, "func_operator_function_condition")
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.perFunction {
				t.Errorf("func_operator_function_condition series = %d, want %d", got, tc.perFunction)
			}
			// Describe names exactly what Collect sends: the per-Function family is
			// not announced when it is off (a pedantic registry checks the rest).
			described := map[string]bool{}
			for _, c := range m.Collectors() {
				ch := make(chan *prometheus.Desc, 16)
				c.Describe(ch)
				close(ch)
				for d := range ch {
					described[d.String()] = true
				}
			}
			announced := false
			for d := range described {
				if strings.Contains(d, `"func_operator_function_condition"`) {
					announced = true
				}
			}
			if announced != (tc.perFunction > 0) {
				t.Errorf("func_operator_function_condition described = %v, want %v", announced, tc.perFunction > 0)
			}
		})
	}
}

// TestMetrics_CommitStore: with WithCommitStore the commit store's bytes, commits,
// evictions, refetches and commits not kept are exported as read at scrape time;
// without it, none of them.
func TestMetrics_CommitStore(t *testing.T) {
	stats := CommitStore{Bytes: 4096, Commits: 3, Evictions: 7, Refetches: 2, NotKept: 1}
	m := New(nil, WithCommitStore(func() CommitStore { return stats }))
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m.Collectors()...)
	names := []string{"func_operator_git_commit_store_bytes", "func_operator_git_commit_store_commits", "func_operator_git_commit_store_evictions_total",
		"func_operator_git_commit_store_refetches_total", "func_operator_git_commit_store_not_kept_total"}
	want := func(s CommitStore) string {
		return fmt.Sprintf(`
# HELP func_operator_git_commit_store_bytes Bytes kept of recently fetched commits (their trees and func.yaml files, which every Function on a commit reads from its one transfer), within the ConfigMap's commitStoreMaxBytes.
# TYPE func_operator_git_commit_store_bytes gauge
func_operator_git_commit_store_bytes %d
# HELP func_operator_git_commit_store_commits Commits kept of those fetched (one per repository, commit and credentials identity).
# TYPE func_operator_git_commit_store_commits gauge
func_operator_git_commit_store_commits %d
# HELP func_operator_git_commit_store_evictions_total Commits dropped, least recently used first, to stay within commitStoreMaxBytes: after pushes, the turnover of commits no Function reads any more.
# TYPE func_operator_git_commit_store_evictions_total counter
func_operator_git_commit_store_evictions_total %d
# HELP func_operator_git_commit_store_not_kept_total Commits too large for commitStoreMaxBytes on their own: used, not kept, so that every Function on such a commit transfers it.
# TYPE func_operator_git_commit_store_not_kept_total counter
func_operator_git_commit_store_not_kept_total %d
# HELP func_operator_git_commit_store_refetches_total Transfers of a commit the store had dropped, because a Function still read it: a steady rate says commitStoreMaxBytes is too small for the commits in use.
# TYPE func_operator_git_commit_store_refetches_total counter
func_operator_git_commit_store_refetches_total %d
`, s.Bytes, s.Commits, s.Evictions, s.NotKept, s.Refetches)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want(stats)), names...); err != nil {
		t.Error(err)
	}
	stats = CommitStore{Bytes: 1024, Commits: 1, Evictions: 9, Refetches: 3, NotKept: 4}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want(stats)), names...); err != nil {
		t.Errorf("after the store changed: %v", err)
	}

	without := prometheus.NewPedanticRegistry()
	without.MustRegister(New(nil).Collectors()...)
	if n, err := testutil.GatherAndCount(without, names...); err != nil || n != 0 {
		t.Errorf("without WithCommitStore: %d series (%v), want none", n, err)
	}
}

// TestMetrics_TransferRetries: with WithTransferRetries the git transfers made again
// are exported as read at scrape time; without it, not at all.
func TestMetrics_TransferRetries(t *testing.T) {
	var n int64 = 2
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(New(nil, WithTransferRetries(func() int64 { return n })).Collectors()...)
	want := func(n int64) string {
		return fmt.Sprintf(`
# HELP func_operator_git_transfer_retries_total Git transfers made again at once because go-git had failed an SSH exchange the server completed (it closed first): one more upload-pack each.
# TYPE func_operator_git_transfer_retries_total counter
func_operator_git_transfer_retries_total %d
`, n)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want(2)), "func_operator_git_transfer_retries_total"); err != nil {
		t.Error(err)
	}
	n = 5
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want(5)), "func_operator_git_transfer_retries_total"); err != nil {
		t.Errorf("after two more: %v", err)
	}
	without := prometheus.NewPedanticRegistry()
	without.MustRegister(New(nil).Collectors()...)
	if got, err := testutil.GatherAndCount(without, "func_operator_git_transfer_retries_total"); err != nil || got != 0 {
		t.Errorf("without WithTransferRetries: %d series (%v), want none", got, err)
	}
}

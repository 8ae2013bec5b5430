package operator

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/version"
	"github.com/fnops/func-operator/test/tekton"
)

// scrape reads the operator's metrics endpoint.
func scrape(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scraping metrics: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing metrics: %v", err)
	}
	return families
}

// value returns the value of the series of family whose labels include want, and
// whether there is one. Histograms give their sample count.
func value(families map[string]*dto.MetricFamily, family string, want map[string]string) (float64, bool) {
	f, ok := families[family]
	if !ok {
		return 0, false
	}
next:
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

func TestOperator_Metrics(t *testing.T) {
	ns := newNamespace(t)
	f := newRebuildFixture(t, ns, "hello")
	var release atomic.Bool
	tekton.StartKubelet(t, restConfig, tekton.Options{
		Namespaces: []string{ns}, Registry: f.reg, Decide: succeed(t),
		Hold: func(*pipelinev1.PipelineRun) bool { return release.Load() },
	})
	addr := freeAddr(t)
	startOperatorServing(t, rebuildConfig(2), nil, addr, ns)
	f.createFunction(t, "hello", nil)
	series := func(typ, status, reason string) map[string]string {
		return map[string]string{"namespace": ns, "name": "hello", "type": typ, "status": status, "reason": reason, "severity": "Error"}
	}

	// While the rebuild runs: the condition series say so, the Function counts as
	// outdated and holds a slot.
	eventually(t, 60*time.Second, func() string {
		m := scrape(t, addr)
		if v, ok := value(m, "func_operator_function_condition", series("MiddlewareUpToDate", "False", v1alpha1.ReasonRebuilding)); !ok || v != 1 {
			return "no MiddlewareUpToDate False Rebuilding series yet"
		}
		for name, want := range map[string]float64{"func_operator_middleware_outdated_functions": 1, "func_operator_builds_running": 1, "func_operator_build_queue_length": 0} {
			if v, _ := value(m, name, nil); v != want {
				return fmt.Sprintf("%s = %v, want %v", name, v, want)
			}
		}
		return ""
	})
	m := scrape(t, addr)
	// Which build serves: a test binary is stamped with no release.
	if v, ok := value(m, "func_operator_build_info", map[string]string{"version": version.Devel, "go_version": runtime.Version()}); !ok || v != 1 {
		t.Errorf("func_operator_build_info{version=%q,go_version=%q} = %v (present: %v), want 1 (families: %v)", version.Devel, runtime.Version(), v, ok, m["func_operator_build_info"])
	}
	if v, _ := value(m, "func_operator_git_fetch_duration_seconds", map[string]string{"operation": "ls-remote"}); v < 1 {
		t.Errorf("git ls-remote observations = %v, want at least 1", v)
	}
	if v, _ := value(m, "func_operator_git_fetch_duration_seconds", map[string]string{"operation": "clone"}); v < 1 {
		t.Errorf("git clone observations = %v, want at least 1", v)
	}

	release.Store(true)
	eventually(t, 60*time.Second, rebuilt(t, ns, "hello"))
	eventually(t, 10*time.Second, func() string {
		m := scrape(t, addr)
		if _, ok := value(m, "func_operator_function_condition", series("MiddlewareUpToDate", "False", v1alpha1.ReasonRebuilding)); ok {
			return "the Rebuilding series is still there after the rebuild"
		}
		if v, ok := value(m, "func_operator_function_condition", series("MiddlewareUpToDate", "True", v1alpha1.ReasonUpToDate)); !ok || v != 1 {
			return "no MiddlewareUpToDate True UpToDate series"
		}
		for name, want := range map[string]float64{"func_operator_middleware_outdated_functions": 0, "func_operator_builds_running": 0} {
			if v, _ := value(m, name, nil); v != want {
				return fmt.Sprintf("%s = %v, want %v", name, v, want)
			}
		}
		if v, _ := value(m, "func_operator_rebuilds_total", map[string]string{"result": "succeeded"}); v != 1 {
			return fmt.Sprintf("rebuilds_total{result=succeeded} = %v, want 1", v)
		}
		if v, _ := value(m, "func_operator_build_duration_seconds", nil); v != 1 {
			return fmt.Sprintf("build_duration_seconds count = %v, want 1", v)
		}
		return ""
	})

	// The series go with the Function.
	if err := k8sClient.Delete(context.Background(), &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hello"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() string {
		if _, ok := value(scrape(t, addr), "func_operator_function_condition", map[string]string{"namespace": ns, "name": "hello"}); ok {
			return "condition series of the deleted Function are still served"
		}
		return ""
	})
}

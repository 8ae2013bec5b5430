//go:build scale

package scale

import (
	"bufio"
	"fmt"
	"math"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// families is one scrape of a Prometheus text endpoint.
type families map[string]*dto.MetricFamily

// scrape reads the metrics of url with client.
func scrape(client *http.Client, url string) (families, error) {
	resp, err := client.Get(url)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parsing the metrics of %s: %w", url, err)
	}
	return fams, nil
}

// sum adds the values (counter, gauge or untyped; the count of a histogram) of the
// series of name whose labels hold every pair of match ("" values: any; a value
// of the form "a|b": either).
func (f families) sum(name string, match ...string) float64 {
	fam := f[name]
	if fam == nil {
		return 0
	}
	var total float64
	for _, m := range fam.GetMetric() {
		if !labelsMatch(m, match) {
			continue
		}
		total += value(m)
	}
	return total
}

// value is the value of a counter, gauge or untyped series, the count of a histogram.
func value(m *dto.Metric) float64 {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetUntyped() != nil:
		return m.GetUntyped().GetValue()
	case m.GetHistogram() != nil:
		return float64(m.GetHistogram().GetSampleCount())
	}
	return 0
}

// series counts the series of every family (a histogram's or summary's as one).
func (f families) series() int {
	n := 0
	for _, mf := range f {
		n += len(mf.GetMetric())
	}
	return n
}

// histogramSum adds the sample sums of the histogram series of name that match.
func (f families) histogramSum(name string, match ...string) float64 {
	fam := f[name]
	if fam == nil {
		return 0
	}
	var total float64
	for _, m := range fam.GetMetric() {
		if labelsMatch(m, match) && m.GetHistogram() != nil {
			total += m.GetHistogram().GetSampleSum()
		}
	}
	return total
}

// buckets returns the cumulative counts by upper bound of the histogram series of
// name that match, added up.
func (f families) buckets(name string, match ...string) map[float64]float64 {
	out := map[float64]float64{}
	fam := f[name]
	if fam == nil {
		return out
	}
	for _, m := range fam.GetMetric() {
		if !labelsMatch(m, match) || m.GetHistogram() == nil {
			continue
		}
		for _, b := range m.GetHistogram().GetBucket() {
			out[b.GetUpperBound()] += float64(b.GetCumulativeCount())
		}
		out[math.Inf(1)] += float64(m.GetHistogram().GetSampleCount())
	}
	return out
}

// byLabel adds the values of the series of name that match, by the value of label.
func (f families) byLabel(name, label string, match ...string) map[string]float64 {
	out := map[string]float64{}
	fam := f[name]
	if fam == nil {
		return out
	}
	for _, m := range fam.GetMetric() {
		if !labelsMatch(m, match) {
			continue
		}
		for _, l := range m.GetLabel() {
			if l.GetName() == label {
				out[l.GetValue()] += value(m)
			}
		}
	}
	return out
}

func labelsMatch(m *dto.Metric, match []string) bool {
	for i := 0; i+1 < len(match); i += 2 {
		want := match[i+1]
		if want == "" {
			continue
		}
		got := ""
		for _, l := range m.GetLabel() {
			if l.GetName() == match[i] {
				got = l.GetValue()
			}
		}
		ok := false
		for _, w := range strings.Split(want, "|") {
			ok = ok || got == w
		}
		if !ok {
			return false
		}
	}
	return true
}

// maxBound is the upper bound of the lowest bucket holding every sample of the
// difference of two cumulative histograms: an upper bound of the largest sample
// between them (+Inf when one was beyond the last bucket, 0 without samples).
func maxBound(before, after map[float64]float64) float64 {
	total := after[math.Inf(1)] - before[math.Inf(1)]
	if total <= 0 {
		return 0
	}
	bounds := make([]float64, 0, len(after))
	for b := range after {
		bounds = append(bounds, b)
	}
	sort.Float64s(bounds)
	for _, b := range bounds {
		if after[b]-before[b] >= total {
			return b
		}
	}
	return math.Inf(1)
}

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat: 100 on
// every Linux architecture Go runs on (sysconf(_SC_CLK_TCK) needs cgo).
const clockTicks = 100

// cpuTime is the user plus system CPU time of process pid (fields 14 and 15 of
// /proc/<pid>/stat).
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	fields := strings.Fields(s[i+1:]) // fields[0] is field 3 (state)
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields)+2)
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// machineBusy is the CPU time all cores spent not idle (user, nice, system, irq,
// softirq and steal of /proc/stat's first line): with the operator's own, what the API
// server, etcd, the git server and the benchmark took.
func machineBusy() (time.Duration, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	fields := strings.Fields(line)
	if len(fields) < 9 || fields[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: %q", line)
	}
	var ticks int64
	for i, f := range fields[1:9] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// memory reads VmRSS and VmHWM (peak RSS) of process pid, in bytes.
func memory(pid int) (rss, hwm int64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		fields := strings.Fields(value)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, 0, fmt.Errorf("/proc/%d/status: %s: %q", pid, name, value)
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, 0, err
		}
		if name == "VmRSS" {
			rss = kb << 10
		} else {
			hwm = kb << 10
		}
	}
	return rss, hwm, sc.Err()
}

// The Go runtime's metrics of the operator (client_golang's Go collector).
const (
	nextGC     = "go_memstats_next_gc_bytes"
	stackInuse = "go_memstats_stack_inuse_bytes"
)

// liveHeap estimates the heap the operator's last garbage collection found live from
// the heap goal it set after it: since Go 1.21 the goal is live + (live + stacks +
// globals) × GOGC/100 (GOMEMLIMIT, far above it here, aside). Globals, a few hundred
// KiB, count as live. 0 when the metrics lack the goal.
func liveHeap(f families, gogc float64) float64 {
	goal := f.sum(nextGC)
	if goal == 0 {
		return 0
	}
	g := gogc / 100
	return (goal - g*f.sum(stackInuse)) / (1 + g)
}

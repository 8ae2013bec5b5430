package function

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fnops/func-operator/pkg/config"
)

// outageRecheck is how often a Function whose repository or registry does not answer
// is looked at again, at most.
const outageRecheck = time.Minute

// outage is one outage of a git host or a registry, as a Function sees it.
type outage struct {
	since, until time.Time // start, and end of the grace
	recheck      time.Duration
}

// outageOf records now in *since unless an outage is already under way, and returns
// it: when it began, when its grace ends, and when to look again.
func outageOf(since **metav1.Time, now time.Time, cfg config.Config) outage {
	if *since == nil {
		t := metav1.NewTime(now)
		*since = &t
	}
	o := outage{since: (*since).Time}
	o.until = o.since.Add(cfg.OutageGrace)
	o.recheck = min(outageRecheck, cfg.CheckInterval, o.until.Sub(now))
	return o
}

// over reports whether the grace of the outage has passed at now.
func (o outage) over(now time.Time) bool { return !now.Before(o.until) }

// started is when the outage began, for messages.
func (o outage) started() string { return o.since.UTC().Format(time.RFC3339) }

// ends is when the grace ends, for messages.
func (o outage) ends() string { return o.until.UTC().Format(time.RFC3339) }

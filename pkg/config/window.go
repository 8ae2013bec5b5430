package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Window is a maintenance window: hours of the week, in UTC, when updates may roll
// out. The zero Window is always open.
type Window struct {
	spec  string
	spans []span // minutes of the week from Monday 00:00, end exclusive; end may pass a week
}

type span struct{ start, end int }

const (
	minutesPerDay  = 24 * 60
	minutesPerWeek = 7 * minutesPerDay
	// maxWindowSpans bounds a window's spans: a ConfigMap value is not a program.
	maxWindowSpans = 64
)

var weekdays = map[string]int{"mon": 0, "tue": 1, "wed": 2, "thu": 3, "fri": 4, "sat": 5, "sun": 6}

// ParseWindow reads a maintenance window: spans separated by ";", each days and
// hours, "Mon-Fri 22:00-06:00" or "Sat 00:00-24:00" or "Sun,Wed 01:30-03:00", in
// UTC. A span whose end is not after its start runs past midnight into the next
// day: it belongs to the day it starts on. "" is always open.
func ParseWindow(v string) (Window, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return Window{}, nil
	}
	w := Window{spec: v}
	for _, part := range strings.Split(v, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		days, hours, ok := strings.Cut(part, " ")
		if !ok {
			return Window{}, fmt.Errorf("%q is not days and hours such as \"Sat 02:00-06:00\"", part)
		}
		ds, err := parseDays(days)
		if err != nil {
			return Window{}, err
		}
		from, to, ok := strings.Cut(strings.TrimSpace(hours), "-")
		if !ok {
			return Window{}, fmt.Errorf("%q is not hours such as 02:00-06:00", hours)
		}
		start, err := parseClock(from, false)
		if err != nil {
			return Window{}, err
		}
		end, err := parseClock(to, true)
		if err != nil {
			return Window{}, err
		}
		if end <= start {
			end += minutesPerDay // past midnight
		}
		for _, d := range ds {
			w.spans = append(w.spans, span{d*minutesPerDay + start, d*minutesPerDay + end})
		}
		if len(w.spans) > maxWindowSpans {
			return Window{}, fmt.Errorf("more than %d spans", maxWindowSpans)
		}
	}
	if len(w.spans) == 0 {
		return Window{}, fmt.Errorf("%q names no span", v)
	}
	return w, nil
}

// parseDays reads "Mon", "Mon-Fri" (a range, which may wrap: "Sat-Mon") or
// "Sat,Sun".
func parseDays(v string) ([]int, error) {
	var out []int
	for _, d := range strings.Split(v, ",") {
		from, to, isRange := strings.Cut(d, "-")
		a, ok := weekdays[strings.ToLower(strings.TrimSpace(from))]
		if !ok {
			return nil, fmt.Errorf("%q is not a day (Mon, Tue, Wed, Thu, Fri, Sat, Sun)", from)
		}
		b := a
		if isRange {
			if b, ok = weekdays[strings.ToLower(strings.TrimSpace(to))]; !ok {
				return nil, fmt.Errorf("%q is not a day (Mon, Tue, Wed, Thu, Fri, Sat, Sun)", to)
			}
		}
		for i := a; ; i = (i + 1) % 7 {
			out = append(out, i)
			if i == b {
				break
			}
		}
	}
	return out, nil
}

// parseClock reads HH:MM; 24:00 only as an end.
func parseClock(v string, end bool) (int, error) {
	hh, mm, ok := strings.Cut(strings.TrimSpace(v), ":")
	h, err1 := strconv.Atoi(hh)
	m, err2 := strconv.Atoi(mm)
	switch {
	case !ok || err1 != nil || err2 != nil || len(mm) != 2 || m < 0 || m > 59 || h < 0:
	case h < 24, end && h == 24 && m == 0:
		return h*60 + m, nil
	}
	return 0, fmt.Errorf("%q is not a time of day such as 02:00", v)
}

// String is the window as configured; "" when always open.
func (w Window) String() string { return w.spec }

// Always reports whether the window is always open (none configured).
func (w Window) Always() bool { return len(w.spans) == 0 }

// minuteOfWeek is t's minute from Monday 00:00 UTC.
func minuteOfWeek(t time.Time) int {
	t = t.UTC()
	return ((int(t.Weekday())+6)%7)*minutesPerDay + t.Hour()*60 + t.Minute()
}

// Open reports whether t is inside the window.
func (w Window) Open(t time.Time) bool {
	if w.Always() {
		return true
	}
	m := minuteOfWeek(t)
	for _, s := range w.spans {
		// A span past Sunday midnight goes on into Monday of the next week.
		if (m >= s.start && m < s.end) || (s.end > minutesPerWeek && m < s.end-minutesPerWeek) {
			return true
		}
	}
	return false
}

// NextOpen is when the window opens next after t (t when it is open), to the minute.
func (w Window) NextOpen(t time.Time) time.Time {
	if w.Open(t) {
		return t
	}
	base := t.UTC().Truncate(time.Minute)
	m := minuteOfWeek(base)
	best := minutesPerWeek + 1
	for _, s := range w.spans {
		d := (s.start - m + minutesPerWeek) % minutesPerWeek
		if d == 0 {
			d = minutesPerWeek
		}
		best = min(best, d)
	}
	return base.Add(time.Duration(best) * time.Minute)
}

// Equal reports whether w and o are the same window (cmp uses it).
func (w Window) Equal(o Window) bool { return w.spec == o.spec }

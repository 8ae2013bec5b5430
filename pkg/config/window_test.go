package config

import (
	"testing"
	"time"
)

func TestParseWindow(t *testing.T) {
	// 2026-11-30 is a Monday.
	at := func(day int, hhmm string) time.Time {
		tm, err := time.Parse("15:04", hhmm)
		if err != nil {
			t.Fatal(err)
		}
		return time.Date(2026, 11, 30+day, tm.Hour(), tm.Minute(), 0, 0, time.UTC)
	}
	tests := []struct {
		spec       string
		open, shut []time.Time
	}{
		{spec: "", open: []time.Time{at(0, "00:00"), at(6, "23:59")}},
		{spec: "Sat 02:00-06:00", open: []time.Time{at(5, "02:00"), at(5, "05:59")},
			shut: []time.Time{at(5, "01:59"), at(5, "06:00"), at(6, "03:00")}},
		{spec: "Mon-Fri 22:00-06:00", open: []time.Time{at(0, "22:00"), at(1, "05:59"), at(4, "23:00"), at(5, "05:00")},
			shut: []time.Time{at(0, "05:00"), at(0, "12:00"), at(5, "06:00"), at(5, "22:30")}},
		// Past Sunday midnight into Monday of the next week.
		{spec: "Sun 23:00-01:00", open: []time.Time{at(6, "23:30"), at(0, "00:30")}, shut: []time.Time{at(0, "01:00"), at(6, "22:59")}},
		{spec: "Sat,Sun 00:00-24:00; Wed 12:00-13:00", open: []time.Time{at(5, "00:00"), at(6, "23:59"), at(2, "12:30")},
			shut: []time.Time{at(4, "23:59"), at(2, "13:00")}},
		{spec: "sat-mon 10:00-11:00", open: []time.Time{at(5, "10:00"), at(6, "10:00"), at(0, "10:59")}, shut: []time.Time{at(1, "10:00")}},
	}
	for _, tt := range tests {
		w, err := ParseWindow(tt.spec)
		if err != nil {
			t.Fatalf("ParseWindow(%q): %v", tt.spec, err)
		}
		for _, o := range tt.open {
			if !w.Open(o) {
				t.Errorf("%q: closed at %s, want open", tt.spec, o.Format(time.RFC1123))
			}
			if got := w.NextOpen(o); !got.Equal(o) {
				t.Errorf("%q: NextOpen(%s) = %s, want itself", tt.spec, o, got)
			}
		}
		for _, s := range tt.shut {
			if w.Open(s) {
				t.Errorf("%q: open at %s, want closed", tt.spec, s.Format(time.RFC1123))
			}
			next := w.NextOpen(s)
			if !next.After(s) || !w.Open(next) || w.Open(next.Add(-time.Minute)) {
				t.Errorf("%q: NextOpen(%s) = %s: not the first open minute after it", tt.spec, s.Format(time.RFC1123), next.Format(time.RFC1123))
			}
		}
	}
}

func TestParseWindow_Invalid(t *testing.T) {
	for _, spec := range []string{"Sat", "Someday 01:00-02:00", "Sat 1:00", "Sat 25:00-26:00", "Sat 01:60-02:00", "Sat 24:00-01:00", ";", "Sat 01:00-02:0"} {
		if _, err := ParseWindow(spec); err == nil {
			t.Errorf("ParseWindow(%q): no error", spec)
		}
	}
	// Positive control: the same forms, valid.
	if _, err := ParseWindow("Sat 01:00-02:00; Sun 00:00-24:00"); err != nil {
		t.Errorf("valid window refused: %v", err)
	}
}

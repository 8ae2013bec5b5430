package text

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestPrefix(t *testing.T) {
	for _, tt := range []struct {
		s    string
		n    int
		want string
	}{
		{"hello", 10, "hello"},
		{"hello", 5, "hello"},
		{"hello", 3, "hel"},
		{"hello", 0, ""},
		{"hello", -1, ""},
		{"héllo", 2, "h"}, // é is two bytes: not split
		{"héllo", 3, "hé"},
		{"日本", 4, "日"}, // three bytes each
		{"日本", 2, ""},
	} {
		if got := Prefix(tt.s, tt.n); got != tt.want {
			t.Errorf("Prefix(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}

func TestCut(t *testing.T) {
	for _, tt := range []struct {
		s, mark string
		max     int
		want    string
	}{
		{"short", "...", 10, "short"},
		{"exactly10!", "...", 10, "exactly10!"},
		{"a longer text", "...", 10, "a longe..."},
		{"éééééé", "…", 7, "éé…"}, // 4 bytes of é, then the 3-byte mark
		{"anything", "......", 4, "...."},
	} {
		if got := Cut(tt.s, tt.max, tt.mark); got != tt.want || len(got) > tt.max {
			t.Errorf("Cut(%q, %d, %q) = %q (%d bytes), want %q", tt.s, tt.max, tt.mark, got, len(got), tt.want)
		}
	}
}

// FuzzCut: whatever the text and the bound, the result is valid UTF-8 when the text
// was, at most max bytes, and a start of the text followed by the mark when cut.
func FuzzCut(f *testing.F) {
	f.Add("héllo wörld", 5)
	f.Add(strings.Repeat("日本", 100), 17)
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max < 0 || max > 1<<16 {
			return
		}
		got := Cut(s, max, "…")
		if len(got) > max && len(s) > max {
			t.Fatalf("Cut(%q, %d) = %q: %d bytes", s, max, got, len(got))
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("Cut(%q, %d) = %q splits a character", s, max, got)
		}
		if len(s) > max && len("…") < max && !strings.HasPrefix(s, strings.TrimSuffix(got, "…")) {
			t.Fatalf("Cut(%q, %d) = %q is not a start of the text", s, max, got)
		}
	})
}

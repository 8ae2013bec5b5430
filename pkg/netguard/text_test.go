package netguard

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestServerText(t *testing.T) {
	if got := ServerText("short"); got != "short" {
		t.Errorf("ServerText(short) = %q", got)
	}
	got := ServerText(strings.Repeat("é", 1000))
	if !utf8.ValidString(got) || !strings.HasSuffix(got, "…") || len(got) > MaxServerText+len("…") {
		t.Errorf("ServerText cut %d bytes (valid UTF-8: %v): %.40q…", len(got), utf8.ValidString(got), got)
	}
}

func TestIsTooLarge(t *testing.T) {
	err := &TooLargeError{Limit: 10}
	for _, e := range []error{err, fmt.Errorf("wrapped: %w", err), errors.New("as text: " + err.Error())} {
		if !IsTooLarge(e) {
			t.Errorf("IsTooLarge(%v) is false", e)
		}
	}
	if IsTooLarge(errors.New("connection refused")) || IsTooLarge(nil) {
		t.Errorf("IsTooLarge is true for another error")
	}
}

func TestCapText(t *testing.T) {
	tests := []struct {
		name string
		in   string
		max  int
		want string
	}{
		{name: "short", in: "all fine", max: 64, want: "all fine"},
		{name: "exactly the cap", in: strings.Repeat("a", 64), max: 64, want: strings.Repeat("a", 64)},
		{name: "over the cap", in: strings.Repeat("a", 100), max: 40, want: strings.Repeat("a", 20) + " … (100 bytes cut)"},
		{name: "cut on a character boundary", in: strings.Repeat("é", 50), max: 40, want: strings.Repeat("é", 10) + " … (100 bytes cut)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CapText(tt.in, tt.max)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("CapText() (-want +got):\n%s", diff)
			}
			if len(got) > tt.max || !utf8.ValidString(got) {
				t.Errorf("CapText() = %d bytes (valid UTF-8: %v), want at most %d", len(got), utf8.ValidString(got), tt.max)
			}
		})
	}
}

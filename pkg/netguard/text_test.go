package netguard

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
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

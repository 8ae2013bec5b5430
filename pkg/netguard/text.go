package netguard

import (
	"errors"
	"strings"
	"unicode/utf8"
)

// MaxServerText caps what of a server's own text (an error page, a git message)
// goes into a message.
const MaxServerText = 512

// ServerText cuts s, text a server chose, at MaxServerText bytes, on a character
// boundary, and marks the cut.
func ServerText(s string) string {
	if len(s) <= MaxServerText {
		return s
	}
	n := MaxServerText
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// IsTooLarge is true when err is, wraps, or quotes a read past a limit of
// WithReadLimit.
func IsTooLarge(err error) bool {
	var tl *TooLargeError
	return err != nil && (errors.As(err, &tl) || strings.Contains(err.Error(), TooLargeMarker))
}

package netguard

import (
	"errors"
	"fmt"
	"strings"

	"github.com/fnops/func-operator/pkg/text"
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
	return text.Prefix(s, MaxServerText) + "…"
}

// CapText returns s when it has at most max bytes; otherwise its start, cut on a
// character boundary, with a note of how much was cut, max bytes in all: for
// condition and Event messages, and the lines of a failed build's log.
func CapText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	note := fmt.Sprintf(" … (%d bytes cut)", len(s))
	return text.Prefix(s, max-len(note)) + note
}

// IsTooLarge is true when err is, wraps, or quotes a read past a limit of
// WithReadLimit.
func IsTooLarge(err error) bool {
	var tl *TooLargeError
	return err != nil && (errors.As(err, &tl) || strings.Contains(err.Error(), TooLargeMarker))
}

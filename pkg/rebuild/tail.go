package rebuild

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// DefaultLogLines is how many lines of a failed build's output are logged when
// the Launcher is not told.
const DefaultLogLines = 20

// maxLogLineBytes cuts each line of a failed build's output that is logged.
const maxLogLineBytes = 512

// TailLines keeps the first line of s (what failed) and its last n-1 lines,
// each cut at width bytes, and says how many lines were left out. n == 0 keeps the
// first line only.
func TailLines(s string, n, width int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	keep := lines
	cut := 0
	if n < 1 {
		n = 1
	}
	if len(lines) > n {
		cut = len(lines) - n
		keep = append([]string{lines[0]}, lines[len(lines)-(n-1):]...)
	}
	for i, l := range keep {
		keep[i] = capLine(l, width)
	}
	if cut > 0 {
		keep = append(keep[:1], append([]string{fmt.Sprintf("… (%d lines cut)", cut)}, keep[1:]...)...)
	}
	return strings.Join(keep, "\n")
}

// capLine returns s when it has at most max bytes; otherwise its start, cut on a
// character boundary, with a note of how much was cut, max bytes in all (as the
// reconciler's CapMessage does to condition messages).
func capLine(s string, max int) string {
	if len(s) <= max {
		return s
	}
	note := fmt.Sprintf(" … (%d bytes cut)", len(s))
	keep := max - len(note)
	if keep < 0 {
		keep = 0
	}
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return s[:keep] + note
}

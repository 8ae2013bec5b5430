package rebuild

import (
	"fmt"
	"strings"

	"github.com/fnops/func-operator/pkg/netguard"
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
		keep[i] = netguard.CapText(l, width)
	}
	if cut > 0 {
		keep = append(keep[:1], append([]string{fmt.Sprintf("… (%d lines cut)", cut)}, keep[1:]...)...)
	}
	return strings.Join(keep, "\n")
}

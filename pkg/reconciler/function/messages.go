package function

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"

	"github.com/fnops/func-operator/api/v1alpha1"
)

// capMessages cuts every condition message of fn, and its build's, to max bytes, so that no text a
// tenant's server chose can grow the status past what the API server takes.
func capMessages(fn *v1alpha1.Function, max int) {
	if max <= 0 {
		return
	}
	for i := range fn.Status.Conditions {
		fn.Status.Conditions[i].Message = CapMessage(fn.Status.Conditions[i].Message, max)
	}
	if b := fn.Status.Build; b != nil {
		b.Message = CapMessage(b.Message, max)
	}
}

// CapMessage returns s when it has at most max bytes; otherwise its start, cut on
// a character boundary, with a note of how much was cut, max bytes in all.
func CapMessage(s string, max int) string {
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

// CappedRecorder returns a recorder whose Event messages are cut at max() bytes.
func CappedRecorder(r record.EventRecorder, max func() int) record.EventRecorder {
	return cappedRecorder{next: r, max: max}
}

type cappedRecorder struct {
	next record.EventRecorder
	max  func() int
}

func (c cappedRecorder) cap(s string) string {
	if m := c.max(); m > 0 {
		return CapMessage(s, m)
	}
	return s
}

func (c cappedRecorder) Event(object runtime.Object, eventtype, reason, message string) {
	c.next.Event(object, eventtype, reason, c.cap(message))
}

func (c cappedRecorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...interface{}) {
	c.next.Event(object, eventtype, reason, c.cap(fmt.Sprintf(messageFmt, args...)))
}

func (c cappedRecorder) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...interface{}) {
	c.next.AnnotatedEventf(object, annotations, eventtype, reason, "%s", c.cap(fmt.Sprintf(messageFmt, args...)))
}

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
		keep[i] = CapMessage(l, width)
	}
	if cut > 0 {
		keep = append(keep[:1], append([]string{fmt.Sprintf("… (%d lines cut)", cut)}, keep[1:]...)...)
	}
	return strings.Join(keep, "\n")
}

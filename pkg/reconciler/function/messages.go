package function

import (
	"fmt"
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

package function

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/netguard"
)

// capMessages cuts every condition message of fn, and its build's, to max bytes, so that no text a
// tenant's server chose can grow the status past what the API server takes.
func capMessages(fn *v1alpha1.Function, max int) {
	if max <= 0 {
		return
	}
	for i := range fn.Status.Conditions {
		fn.Status.Conditions[i].Message = netguard.CapText(fn.Status.Conditions[i].Message, max)
	}
	if b := fn.Status.Build; b != nil {
		b.Message = netguard.CapText(b.Message, max)
	}
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
		return netguard.CapText(s, m)
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

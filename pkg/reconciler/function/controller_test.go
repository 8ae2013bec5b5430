package function

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/fnops/func-operator/api/v1alpha1"
)

func TestHolderChanged(t *testing.T) {
	holder := func(name, uid string, deleting bool) *v1alpha1.Function {
		fn := &v1alpha1.Function{}
		fn.Status.Name = name
		if uid != "" {
			fn.Status.Service = &v1alpha1.ServiceStatus{UID: k8stypes.UID("svc-" + uid)}
		}
		if deleting {
			now := metav1.Now()
			fn.DeletionTimestamp = &now
		}
		return fn
	}
	tests := []struct {
		name     string
		old, new *v1alpha1.Function
		want     bool
	}{
		{"nothing that frees a name changed", holder("hello", "1", false), holder("hello", "1", false), false},
		{"the holder is being deleted", holder("hello", "1", false), holder("hello", "1", true), true},
		{"the function name changed", holder("hello", "1", false), holder("echo", "1", false), true},
		{"the binding was lost", holder("hello", "1", false), holder("hello", "", false), true},
		{"bound for the first time", holder("hello", "", false), holder("hello", "1", false), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := holderChanged(event.UpdateEvent{ObjectOld: tt.old, ObjectNew: tt.new}); got != tt.want {
				t.Errorf("holderChanged = %t, want %t", got, tt.want)
			}
		})
	}
}

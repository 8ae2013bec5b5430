package rerror

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestKinds(t *testing.T) {
	cause := fs.ErrNotExist
	tests := []struct {
		name                                     string
		err                                      error
		wantReason                               string
		wantText                                 string
		wantStalling, wantWaiting, wantTransient bool
	}{{
		name:         "stalling wraps its cause",
		err:          NewStalling("FuncYamlInvalid", "func.yaml: %w", cause),
		wantReason:   "FuncYamlInvalid",
		wantText:     "func.yaml: file does not exist",
		wantStalling: true,
	}, {
		name:        "waiting",
		err:         NewWaiting("NotDeployed", time.Second, "no Knative Service %q: %w", "hello", cause),
		wantReason:  "NotDeployed",
		wantText:    `no Knative Service "hello": file does not exist`,
		wantWaiting: true,
	}, {
		name:          "transient",
		err:           NewTransient("RegistryUnreachable", "registry down: %w", cause),
		wantReason:    "RegistryUnreachable",
		wantText:      "registry down: file does not exist",
		wantTransient: true,
	}, {
		name:         "wrapped once more by a step",
		err:          fmt.Errorf("reading the source: %w", NewStalling("PathNotFound", "no such path: %w", cause)),
		wantReason:   "PathNotFound",
		wantText:     "reading the source: no such path: file does not exist",
		wantStalling: true,
	}, {
		name:         "joined with another error",
		err:          errors.Join(errors.New("also this"), NewStalling("ServiceNotFromFunc", "not func's: %w", cause)),
		wantReason:   "ServiceNotFromFunc",
		wantText:     "also this\nnot func's: file does not exist",
		wantStalling: true,
	}, {
		name:     "unclassified",
		err:      fmt.Errorf("boom: %w", cause),
		wantText: "boom: file does not exist",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.wantReason, Reason(tt.err)); diff != "" {
				t.Errorf("Reason (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantText, tt.err.Error()); diff != "" {
				t.Errorf("Error() (-want +got):\n%s", diff)
			}
			got := [3]bool{errors.Is(tt.err, ErrStalling), errors.Is(tt.err, ErrWaiting), errors.Is(tt.err, ErrTransient)}
			if diff := cmp.Diff([3]bool{tt.wantStalling, tt.wantWaiting, tt.wantTransient}, got); diff != "" {
				t.Errorf("errors.Is stalling, waiting, transient (-want +got):\n%s", diff)
			}
			if IsStalling(tt.err) != tt.wantStalling || IsWaiting(tt.err) != tt.wantWaiting {
				t.Errorf("IsStalling/IsWaiting disagree with errors.Is")
			}
			if !errors.Is(tt.err, cause) {
				t.Errorf("errors.Is(err, cause) = false: the cause must stay in the chain")
			}
		})
	}
}

func TestAs(t *testing.T) {
	err := fmt.Errorf("step: %w", NewWaiting("ServiceReconciling", 2*time.Second, "waiting"))
	var w *Waiting
	if !errors.As(err, &w) {
		t.Fatalf("errors.As(%v, *Waiting) = false", err)
	}
	if w.RequeueAfter != 2*time.Second {
		t.Errorf("RequeueAfter = %v, want 2s", w.RequeueAfter)
	}
	var s *Stalling
	if errors.As(err, &s) {
		t.Errorf("errors.As(%v, *Stalling) = true for a Waiting error", err)
	}
	if Reason(nil) != "" {
		t.Errorf("Reason(nil) = %q, want empty", Reason(nil))
	}
}

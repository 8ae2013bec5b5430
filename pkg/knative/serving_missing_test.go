package knative

import (
	"context"
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// countingReader counts its reads and answers each with err.
type countingReader struct {
	client.Reader
	reads int
	err   error
}

func (r *countingReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	r.reads++
	return r.err
}

// TestServices_ServingMissing: while the cluster serves no Knative Services, Service
// says so without a read (a read of an unserved kind makes the cache ask discovery
// under a lock every cached read takes); once enabled again, it reads.
func TestServices_ServingMissing(t *testing.T) {
	r := &countingReader{err: errors.New("read")}
	s := &Services{Reader: r}
	s.ServingMissing()
	_, err := s.Service(context.Background(), "hello", "fns")
	if !meta.IsNoMatchError(err) || r.reads != 0 {
		t.Errorf("Service = %v after %d reads; want a NoMatch error and none", err, r.reads)
	}
	s.EnableServing()
	if _, err := s.Service(context.Background(), "hello", "fns"); meta.IsNoMatchError(err) || r.reads != 1 {
		t.Errorf("Service after EnableServing = %v after %d reads; want the read's answer, one read", err, r.reads)
	}
}

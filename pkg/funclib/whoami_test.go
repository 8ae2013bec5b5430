package funclib

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/rest"
)

// TestWhoAmI_RetriesALostAnswer: a review whose connection is lost mid-answer (seen
// once in CI, on a loaded API server at the operator's start) is made again, so the
// operator starts; refused credentials are not. The positive control: the first
// answer was lost, and the user named is the one of the second.
func TestWhoAmI_RetriesALostAnswer(t *testing.T) {
	var calls atomic.Int32
	status := http.StatusCreated
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/selfsubjectreviews") {
			http.NotFound(w, r)
			return
		}
		if calls.Add(1) == 1 {
			// Half an answer, then the connection goes.
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "500")
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"kind":"SelfSubjectReview"`))
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				_ = conn.Close()
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if status == http.StatusCreated {
			_, _ = w.Write([]byte(`{"kind":"SelfSubjectReview","apiVersion":"authentication.k8s.io/v1","status":{"userInfo":{"username":"system:serviceaccount:func-operator:func-operator","uid":"u1"}}}`))
		} else {
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","code":401}`))
		}
	}))
	t.Cleanup(srv.Close)

	got, err := whoAmI(context.Background(), &rest.Config{Host: srv.URL})
	if err != nil || got != `"system:serviceaccount:func-operator:func-operator" (UID "u1")` || calls.Load() != 2 {
		t.Fatalf("whoAmI = %s, %v after %d reviews; want the user, after 2 (the first answer lost)", got, err, calls.Load())
	}
	calls.Store(1) // every answer whole from here
	status = http.StatusUnauthorized
	if _, err := whoAmI(context.Background(), &rest.Config{Host: srv.URL}); err == nil || calls.Load() != 2 {
		t.Errorf("whoAmI with refused credentials: %v after %d reviews; want an error after 1", err, calls.Load()-1)
	}
}

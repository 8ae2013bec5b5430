package git

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	gogit "github.com/go-git/go-git/v5"
)

// TestAgainAfterCloseRace: a fetch go-git failed with its close race is made once
// more, into the directory emptied, and counted; any other failure, or one after the
// deadline, is not.
func TestAgainAfterCloseRace(t *testing.T) {
	race := errors.New(errCloseRace) // as go-git returns it
	other := errors.New("unexpected EOF")
	// A server's text that ends as go-git's does is not go-git's error.
	server := errors.New("unknown error: remote: " + errCloseRace)
	tests := []struct {
		name      string
		errs      []error // each try's
		cancelled bool
		wantErr   error
		wantTries int
		retried   int64
	}{
		{name: "the race, then a transfer", errs: []error{race, nil}, wantTries: 2, retried: 1},
		{name: "the race twice: the second counts", errs: []error{race, race}, wantErr: race, wantTries: 2, retried: 1},
		{name: "another failure", errs: []error{other}, wantErr: other, wantTries: 1},
		{name: "a server's text", errs: []error{server}, wantErr: server, wantTries: 1},
		{name: "the race past the deadline", errs: []error{race}, cancelled: true, wantErr: race, wantTries: 1},
		{name: "a transfer", errs: []error{nil}, wantTries: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "clone")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancelled {
				cancel()
			}
			var retried atomic.Int64
			tries := 0
			_, err := againAfterCloseRace(ctx, dir, &retried, func() (*gogit.Repository, error) {
				if tries > 0 {
					if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
						t.Errorf("try %d: the directory holds %d entries (%v), want it empty", tries+1, len(entries), err)
					}
				}
				if err := os.WriteFile(filepath.Join(dir, "half-written"), nil, 0o600); err != nil {
					t.Fatal(err)
				}
				tries++
				return nil, tt.errs[tries-1]
			})
			if !errors.Is(err, tt.wantErr) || tries != tt.wantTries || retried.Load() != tt.retried {
				t.Errorf("err %v (want %v), %d tries (want %d), %d counted (want %d)", err, tt.wantErr, tries, tt.wantTries, retried.Load(), tt.retried)
			}
		})
	}
}

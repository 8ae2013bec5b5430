//go:build !linux

package git

import (
	"fmt"
	"os"
)

// knownHostsFile holds content in a private temporary file (no memfd off Linux) and
// returns its path, and a function that removes it.
func knownHostsFile(content []byte) (path string, done func(), err error) {
	f, err := os.CreateTemp("", "known_hosts-")
	if err != nil {
		return "", nil, fmt.Errorf("creating a temporary file: %w", err)
	}
	done = func() { _ = os.Remove(f.Name()) }
	if _, err := f.Write(content); err != nil {
		_ = f.Close() // the write error is the one to report
		done()
		return "", nil, fmt.Errorf("writing a temporary file: %w", err)
	}
	if err := f.Close(); err != nil {
		done()
		return "", nil, fmt.Errorf("writing a temporary file: %w", err)
	}
	return f.Name(), done, nil
}

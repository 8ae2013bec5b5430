package gitserver

import (
	"strings"
	"sync"
	"testing"
)

// testLogWriter forwards a subprocess's output to the test log until the
// test's cleanups start, after which output is dropped (logging after the
// test has finished would panic).
type testLogWriter struct {
	t      testing.TB
	prefix string

	mu   sync.Mutex
	done bool
}

// newTestLogWriter must be called before registering the cleanups that stop
// the writing subprocesses, so that those run first.
func newTestLogWriter(t testing.TB, prefix string) *testLogWriter {
	w := &testLogWriter{t: t, prefix: prefix}
	t.Cleanup(func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.done = true
	})
	return w
}

func (w *testLogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Logf("%s%s", w.prefix, strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

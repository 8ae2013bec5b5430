package git

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// knownHostsFile holds content in an anonymous memory file (memfd) and returns a
// path that opens it, and a function that releases it.
func knownHostsFile(content []byte) (path string, done func(), err error) {
	fd, err := unix.MemfdCreate("known_hosts", unix.MFD_CLOEXEC)
	if err != nil {
		return "", nil, fmt.Errorf("creating a memory file: %w", err)
	}
	f := os.NewFile(uintptr(fd), "known_hosts")
	if _, err := f.Write(content); err != nil {
		_ = f.Close() // the write error is the one to report
		return "", nil, fmt.Errorf("writing a memory file: %w", err)
	}
	return fmt.Sprintf("/proc/self/fd/%d", fd), func() { _ = f.Close() }, nil
}

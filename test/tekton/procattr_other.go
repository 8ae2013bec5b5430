//go:build !linux

package tekton

import "syscall"

// sysProcAttr has nothing to add outside Linux.
func sysProcAttr() *syscall.SysProcAttr { return nil }

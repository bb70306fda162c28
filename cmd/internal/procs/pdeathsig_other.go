//go:build !linux

package procs

import "syscall"

// setParentDeathSignal does nothing here: only Linux can kill a child when
// its parent dies.
func setParentDeathSignal(*syscall.SysProcAttr) {}
